"""What the Weka providers share: the field parsers, the organization login every object in a
tenant's organization is reached through, the base class that names a Weka object in errors, and
the client each call builds. One module per kind of object (`organization_provider`,
`filesystem_provider`, `quota_provider`, `directory_provider`, `org_user_provider`) builds its
schema and its backend calls on these.

The providers hold no data at all: Pulumi pickles them into the state. Each call reads the
cluster's address and cluster-admin login from the environment (`settings`) and, for objects in
a tenant's organization, logs in as that organization's admin with the credentials the resource
was given as (secret) inputs, which Pulumi keeps in its outputs encrypted, so that `refresh` and
`destroy` work from the state alone.

Outputs repeat every input (numbers as ints) beside what the cluster computed, because the
engine diffs the old outputs against the new inputs: that makes `preview --expect-no-changes`
pass right after `up`, and makes a change made behind Pulumi's back (read from the live cluster)
show as a diff that `up` reverts.

When create finds the object already there (an interrupted `up`, or someone else's), each kind
adopts or refuses it by its own ownership rule, stated in its module: Python dynamic resources
cannot be imported (pulumi/pulumi#16175).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from providers import progress
from providers.base import Field, Rule, SchemaProvider
from providers.errors import WekaError
from providers.weka.settings import ROOT_ORG, Credentials, Settings

if TYPE_CHECKING:
    from providers.weka.client import WekaClient

__all__ = [
    "CREDENTIALS",
    "CREDENTIALS_GIVEN",
    "NAME",
    "WekaProvider",
    "at_least",
    "matching",
    "not_above",
    "org_client",
    "typed",
    "weka_client",
]

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def typed(kind: type[Any], check: Callable[[Any], Any] | None = None) -> Callable[[Any], Any]:
    """A parse that takes a value of `kind` (numbers cross the engine as floats) and then runs
    `check` on it. Its errors name the type only, never the value: it may be a password."""

    def parse(value: Any) -> Any:
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"must be {kind.__name__}, not {type(value).__name__}")
        return value if check is None else check(value)

    return parse


def at_least(low: int, meaning: str) -> Callable[[Any], Any]:
    def check(value: int) -> int:
        if value < low:
            raise ValueError(meaning)
        return value

    return typed(int, check)


def matching(pattern: re.Pattern[str], what: str) -> Callable[[Any], Any]:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return typed(str, check)


# Where the object lives, and how to log in there: Root means the cluster admin of `settings`.
CREDENTIALS = (
    Field("org", typed(str), ROOT_ORG, replaces=True),
    Field("org_admin_username", typed(str), "", login=True),
    Field("org_admin_password", typed(str), "", login=True),
)


def _credentials_given(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    if p["org"] == ROOT_ORG:
        return []
    return [
        (key, f"{key} is required for objects in organization {p['org']!r}")
        for key in ("org_admin_username", "org_admin_password")
        if p[key] == ""
    ]


CREDENTIALS_GIVEN = Rule(("org", "org_admin_username", "org_admin_password"), _credentials_given)


def not_above(low: str, high: str, reason: str) -> Rule:
    """`low` may not exceed `high` when both are set (0 means unset: no limit, or all)."""
    return Rule(
        (low, high),
        lambda p: [(low, reason)] if p[low] > 0 and 0 < p[high] < p[low] else [],
    )


class WekaProvider(SchemaProvider):
    """A Weka resource kind: its schema, and how its errors name the object."""

    error = WekaError

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        name = props.get("name") or props.get("username") or ""
        where = f" in organization {props['org']!r}" if "org" in props else ""
        return f"{what} Weka {self.schema.kind} {name!r}{where}"


def weka_client(
    settings: Settings, login: Credentials | None = None, fresh_login: bool = False
) -> WekaClient:
    """A client for one call, as `login` (default: the cluster admin of `settings`), in the
    provider host's one session for that login unless `fresh_login` (a check of the password
    itself, which a session opened earlier would not make)."""
    # Imported here, the one place a Weka provider makes a client: a preview only checks and
    # diffs, so neither the program nor the dynamic-provider host loads the HTTP stack for it.
    from providers.weka.client import WekaClient

    return WekaClient.from_settings(
        settings, login, shared_login=not fresh_login, progress=progress.say
    )


def org_client(props: Mapping[str, Any]) -> WekaClient:
    """A client of the organization the object lives in, built for this one call."""
    settings = Settings.from_environment()
    org = str(props.get("org") or ROOT_ORG)
    if org == ROOT_ORG:
        return weka_client(settings)
    login = Credentials(str(props["org_admin_username"]), str(props["org_admin_password"]), org)
    return weka_client(settings, login)
