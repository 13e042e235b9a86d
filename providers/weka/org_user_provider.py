"""The dynamic provider of a local user of a Weka organization, such as the CSI driver's (role
CSI), whose password it generates.

Ownership, when create finds the user already there: in a tenant's organization it is adopted,
since the organization is the mark (the stack logs in with the admin password that its own
Organization generated); the user gets the asked role and a new password. In Root it is refused:
nothing shows whose it is.

Pulumi pickles the provider into the state by module and class name: renaming either breaks
existing stacks (see `provider`).
"""

from __future__ import annotations

import secrets
import string
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Rule, Schema, gone
from providers.errors import WekaError
from providers.weka.props import (
    CREDENTIALS,
    CREDENTIALS_GIVEN,
    NAME,
    WekaProvider,
    matching,
    org_client,
    typed,
)
from providers.weka.settings import ROOT_ORG

__all__ = ["ORG_USER_ROLES", "OrgUserProvider"]

ORG_USER_ROLES = ("CSI", "OrgAdmin", "Regular")


def _role(role: str) -> str:
    if role not in ORG_USER_ROLES:
        raise ValueError(f"must be one of {', '.join(ORG_USER_ROLES)}")
    return role


def _new_password() -> str:
    """24 letters and digits, with each kind Weka's password rule asks for."""
    alphabet = string.ascii_letters + string.digits
    while True:
        candidate = "".join(secrets.choice(alphabet) for _ in range(24))
        if (
            any(c.isupper() for c in candidate)
            and any(c.islower() for c in candidate)
            and any(c.isdigit() for c in candidate)
        ):
            return candidate


class OrgUserProvider(WekaProvider):
    """A local user of an organization, such as the CSI driver's (role CSI). Its password is
    generated at create and returned as the secret output `password`."""

    schema = Schema(
        kind="user",
        fields=(
            Field("username", matching(NAME, "a Weka username"), replaces=True),
            *CREDENTIALS,
            Field("role", typed(str, _role)),
        ),
        identity=("username", "org"),
        rules=(
            CREDENTIALS_GIVEN,
            Rule(
                ("username", "org_admin_username"),
                lambda p: (
                    [("username", "is the organization admin's own name")]
                    if p["username"] == p["org_admin_username"]
                    else []
                ),
            ),
        ),
    )

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
        username, role = inputs["username"], inputs["role"]
        password = _new_password()
        with org_client(inputs) as weka:
            existing = next((u for u in weka.list_users() if u.username == username), None)
            if existing is None:
                user = weka.create_user(username, password, role)
            elif inputs["org"] == ROOT_ORG:
                raise WekaError(
                    self._doing("creating", inputs),
                    f"user {username!r} exists already in the shared Root organization, and "
                    "nothing marks it as this stack's",
                    "choose another username, or delete the stale user "
                    f"(`weka user delete {username}`) and run `pulumi up` again",
                )
            else:
                user = weka.update_user(existing.uid, username, role=role)
                weka.set_password(existing.uid, username, password)
        return CreateResult(user.uid, {**inputs, "password": password})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with org_client(props) as weka:
            user = next((u for u in weka.list_users() if u.uid == id_), None)
        if user is None:
            return gone()
        live = {"username": user.username, "role": user.role}
        return ReadResult(
            id_, {**self.schema.recorded(props), **live, "password": props["password"]}
        )

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self.schema.recorded(olds), self.schema.recorded(news)
        if old["role"] != new["role"]:
            with org_client(new) as weka:
                weka.update_user(id_, new["username"], role=new["role"])
        return UpdateResult({**new, "password": olds["password"]})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        with org_client(props) as weka:
            weka.delete_user(id_, str(props.get("username")))
