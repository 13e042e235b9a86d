"""The dynamic provider of a tenant's Weka organization: the organization, with strict
isolation, and its admin user `<name>-admin`, whose derived password the other kinds log in with.

Ownership, when create finds the organization already there: it is adopted only when its admin
`<name>-admin` logs in with the password this provider derives for it (`org_admin_password`),
which only a create of this provider, with this cluster's admin credential, can have set. Weka
organizations carry no metadata to mark them; that login is the mark. Otherwise refused, and the
error says how to clear it. An imported tenant's organization, made by hand, is adopted (flag
`adopt`) under the admin its operator made (`admin_username`), who must log in with the password
the adopting `up` is given: nothing of the organization changes, its admin's login included.

Pulumi pickles the provider into the state by module and class name: renaming either breaks
existing stacks (see `provider`).
"""

from __future__ import annotations

import hmac
import os
import re
import string
from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers import environment
from providers.base import Field, Schema, adopting, gone
from providers.errors import WekaError
from providers.weka.props import (
    WekaProvider,
    at_least,
    matching,
    not_above,
    org_client,
    weka_client,
)
from providers.weka.settings import Credentials, Settings

__all__ = ["ADOPTED_PASSWORD", "OrganizationProvider", "org_admin_password"]

# The variable (or `<it>_FILE`) holding the admin password of an organization made by hand, for
# the `up` that adopts it (spec imported.adopt).
ADOPTED_PASSWORD = "WEKA_ORG_ADMIN_PASSWORD"

_SLUG = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def org_admin_password(cluster_admin_password: str, org: str) -> str:
    """The password of organization `org`'s admin: an HMAC of the org's name keyed with the
    cluster admin's password, so that a create lost with its run can be recognized and taken over
    by the next one. Only a holder of the cluster admin credential can compute it."""
    digest = hmac.new(
        cluster_admin_password.encode(), f"gpu-tenants weka org admin {org}".encode(), "sha256"
    ).digest()
    alphabet = string.ascii_letters + string.digits
    # One upper, one lower and one digit first, for Weka's password rule.
    return "Aa1" + "".join(alphabet[byte % len(alphabet)] for byte in digest[:21])


class OrganizationProvider(WekaProvider):
    """A Weka organization (strict isolation) and its admin user `<name>-admin`, whose password
    (`org_admin_password`) is returned as the secret output `admin_password`."""

    schema = Schema(
        kind="organization",
        fields=(
            # Renamed in place, so that drift is put back without a replace.
            Field("name", matching(_SLUG, "a tenant slug (a DNS label)")),
            Field("ssd_quota", at_least(0, "must be 0 (unlimited) or more bytes"), 0),
            Field("total_quota", at_least(0, "must be 0 (unlimited) or more bytes"), 0),
        ),
        rules=(not_above("ssd_quota", "total_quota", "cannot exceed total_quota"),),
    )

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
        name = inputs["name"]
        admin = str(props.get("admin_username") or f"{name}-admin")
        settings = Settings.from_environment()
        password = org_admin_password(settings.password, name)
        with weka_client(settings) as weka:
            existing = weka.find_organization(name)
            if existing is None:
                org = weka.create_organization(
                    name, admin, password, inputs["ssd_quota"], inputs["total_quota"]
                )
            else:
                if adopting(props):
                    password = self._adopted_password(settings, admin, inputs)
                self._require_ours(settings, Credentials(admin, password, name), props)
                org = weka.set_organization_limits(
                    existing.uid, inputs["ssd_quota"], inputs["total_quota"]
                )
        return CreateResult(
            org.uid, {**inputs, "admin_username": admin, "admin_password": password}
        )

    def _adopted_password(self, settings: Settings, admin: str, inputs: Mapping[str, Any]) -> str:
        """The password of the admin an organization made by hand has: an organization carries no
        mark, and adopting one must leave its admin's login as it is, so the first `up` of an
        imported tenant is given it, and the state keeps it (secret) for the tenant's objects."""
        try:
            return environment.secret(os.environ, ADOPTED_PASSWORD)
        except ValueError as error:
            raise WekaError(
                self._doing("adopting", inputs),
                f"{error}: adopting organization {inputs['name']!r} logs in as its admin "
                f"{admin!r}, whose password only its operator knows",
                f"export {ADOPTED_PASSWORD}_FILE naming a file that holds it (0600) for this "
                "`pulumi up`, then run it again",
            ) from None

    def _require_ours(
        self, settings: Settings, admin: Credentials, inputs: Mapping[str, Any]
    ) -> None:
        """Refuses an existing organization unless its admin takes our derived password."""
        with weka_client(settings, admin, fresh_login=True) as org_admin:
            if org_admin.logs_in():
                return
        name = inputs["name"]
        if adopting(inputs):
            raise WekaError(
                self._doing("adopting", inputs),
                f"organization {name!r} exists, and its admin {admin.username!r} does not log in "
                f"with the password in {ADOPTED_PASSWORD}_FILE",
                "give the organization admin's current password (imported.weka_org_admin names "
                "the admin) and run `pulumi up` again",
            )
        raise WekaError(
            self._doing("creating", inputs),
            f"an organization named {name!r} exists already, and it is not one that an "
            f"interrupted `pulumi up` of this stack left: its admin {admin.username!r} does not "
            "take the password this stack derives for it",
            f"if it is a leftover that `weka org` shows without filesystems, delete it (`weka "
            f"org delete {name}`) and run `pulumi up` again; otherwise the slug is taken: ask the "
            "platform team",
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with org_client({}) as weka:
            org = weka.get_organization(id_)
        if org is None:
            return gone()
        live = {"name": org.name, "ssd_quota": org.ssd_quota, "total_quota": org.total_quota}
        return ReadResult(id_, {**self.schema.recorded(props), **live, **self._admin(props)})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self.schema.recorded(olds), self.schema.recorded(news)
        with org_client({}) as weka:
            if old["name"] != new["name"]:
                weka.rename_organization(id_, new["name"])
            if (old["ssd_quota"], old["total_quota"]) != (new["ssd_quota"], new["total_quota"]):
                weka.set_organization_limits(id_, new["ssd_quota"], new["total_quota"])
        return UpdateResult({**new, **self._admin(olds)})

    @staticmethod
    def _admin(props: Mapping[str, Any]) -> dict[str, Any]:
        """The computed outputs, which only create can know."""
        return {key: props[key] for key in ("admin_username", "admin_password")}

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        with org_client({}) as weka:
            weka.delete_organization(id_, str(props.get("name")))
