"""The entries Authentik's LDAP outpost (2024.10) builds for users, their virtual groups and groups.

The outpost first turns every API attribute into an LDAP attribute (values stringified the way Go
does), then adds its own attributes only where no attribute of that name exists yet. Hence:

- uidNumber / gidNumber ATTRIBUTES of any JSON type end up on the entry itself, stringified;
- but the numbers the outpost DERIVES (a user's gidNumber, a virtual group's gidNumber) only honour
  the attributes when they are strings: an integer uidNumber gives a user whose uidNumber is the
  integer but whose gidNumber is still uid_start_number + pk.

So only string-valued uidNumber and gidNumber are consistent everywhere, which is why the project
pins them as strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sandbox.authentik.store import Group, Store, User

Entry = dict[str, list[str]]

USER_CLASSES = [
    "top",
    "person",
    "organizationalPerson",
    "inetOrgPerson",
    "user",
    "posixAccount",
    "goauthentik.io/ldap/user",
]
GROUP_CLASSES = [
    "group",
    "groupOfUniqueNames",
    "groupOfNames",
    "goauthentik.io/ldap/group",
    "posixGroup",
]
VIRTUAL_GROUP_CLASS = "goauthentik.io/ldap/virtual-group"


@dataclass(frozen=True)
class LdapSettings:
    """An LDAP provider's settings, with Authentik's defaults."""

    base_dn: str = "dc=ldap,dc=goauthentik,dc=io"
    uid_start_number: int = 2000
    gid_start_number: int = 4000

    def user_dn(self, username: str) -> str:
        return f"cn={username},ou=users,{self.base_dn}"

    def group_dn(self, name: str) -> str:
        return f"cn={name},ou=groups,{self.base_dn}"

    def virtual_group_dn(self, username: str) -> str:
        return f"cn={username},ou=virtual-groups,{self.base_dn}"


# Go's value formatting, as the outpost applies it to JSON-decoded attribute values


def _go_float(value: float) -> str:
    """strconv.FormatFloat(v, 'f', -1, 64): shortest digits, never an exponent."""
    text = format(Decimal(repr(float(value))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _go_s(value: Any) -> str:
    """fmt.Sprintf("%s", v) for what encoding/json produces (maps print with sorted keys)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return f"%!s(bool={str(value).lower()})"
    if isinstance(value, int | float):
        return f"%!s(float64={_go_float(value)})"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_s(value[k])}" for k in sorted(value)) + "]"
    return "[" + " ".join(_go_s(v) for v in value) + "]"


def _stringify(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return _go_float(value)  # JSON numbers arrive in Go as float64
    return _go_s(value)


def _to_ldap(attributes: dict[str, Any]) -> Entry:
    entry: Entry = {}
    for key, value in attributes.items():
        name = key.replace("/", "-").replace(".", "")
        if isinstance(value, list):
            entry[name] = [s for s in map(_stringify, value) if s is not None]
        else:
            single = _stringify(value)
            # A null attribute still occupies its name, with no values.
            entry[name] = [] if single is None else [single]
    return entry


def _ensure(entry: Entry, defaults: Entry) -> Entry:
    present = {name.lower() for name in entry}
    return {**entry, **{k: v for k, v in defaults.items() if k.lower() not in present}}


def _with_username(values: list[str], username: str) -> list[str]:
    """User attribute values may contain %s, which the outpost fills with the username."""
    return [v.replace("%s", username, 1).replace("%s", "%!s(MISSING)") for v in values]


def _string_attribute(attributes: dict[str, Any], name: str) -> str | None:
    value = attributes.get(name)
    return value if isinstance(value, str) else None


# the numbers the outpost derives


def user_uid_number(settings: LdapSettings, user: User) -> str:
    override = _string_attribute(user.attributes, "uidNumber")
    return override if override is not None else str(settings.uid_start_number + user.pk)


def user_gid_number(settings: LdapSettings, user: User) -> str:
    override = _string_attribute(user.attributes, "gidNumber")
    return override if override is not None else user_uid_number(settings, user)


def group_gid_number(settings: LdapSettings, group: Group) -> str:
    override = _string_attribute(group.attributes, "gidNumber")
    return override if override is not None else str(settings.gid_start_number + group.num_pk)


# entries


def user_entry(store: Store, settings: LdapSettings, user: User) -> Entry:
    entry = {k: _with_username(v, user.username) for k, v in _to_ldap(user.attributes).items()}
    flag = {True: "TRUE", False: "FALSE"}
    return _ensure(
        entry,
        {
            "ak-active": [flag[user.is_active]],
            "ak-superuser": [flag[store.is_superuser(user)]],
            "memberOf": [settings.group_dn(g.name) for g in store.groups_of(user)],
            "cn": [user.username],
            "sAMAccountName": [user.username],
            "uid": [store.user_uid(user)],
            "name": [user.name],
            "displayName": [user.name],
            "mail": [user.email],
            "objectClass": USER_CLASSES,
            "uidNumber": [user_uid_number(settings, user)],
            "gidNumber": [user_gid_number(settings, user)],
            "homeDirectory": [f"/home/{user.username}"],
            "sn": [user.name],
        },
    )


def virtual_group_entry(store: Store, settings: LdapSettings, user: User) -> Entry:
    """Every user also appears as a group of one, their primary group."""
    return {
        "ak-superuser": ["false"],
        "objectClass": [*GROUP_CLASSES, VIRTUAL_GROUP_CLASS],
        "member": [settings.user_dn(user.username)],
        "cn": [user.username],
        "uid": [store.user_uid(user)],
        "sAMAccountName": [user.username],
        "gidNumber": [user_gid_number(settings, user)],
    }


def group_entry(store: Store, settings: LdapSettings, group: Group) -> Entry:
    return _ensure(
        _to_ldap(group.attributes),
        {
            "ak-superuser": [str(group.is_superuser).lower()],
            "objectClass": GROUP_CLASSES,
            "member": [settings.user_dn(u.username) for u in store.members_of(group)],
            "cn": [group.name],
            "uid": [group.uuid],
            "sAMAccountName": [group.name],
            "gidNumber": [group_gid_number(settings, group)],
        },
    )


def published_number(entry: Entry, name: str) -> int | None:
    """The entry's first value of `name` as nslcd would read it; None if it is not a number."""
    values = next((v for k, v in entry.items() if k.lower() == name.lower()), [])
    if values and re.fullmatch(r"-?\d+", values[0]):
        return int(values[0])
    return None


def describe_user(store: Store, settings: LdapSettings, user: User) -> dict[str, Any]:
    entry = user_entry(store, settings, user)
    virtual = virtual_group_entry(store, settings, user)
    return {
        "dn": settings.user_dn(user.username),
        "uidNumber": published_number(entry, "uidNumber"),
        "gidNumber": published_number(entry, "gidNumber"),
        "attributes": entry,
        "virtual_group": {
            "dn": settings.virtual_group_dn(user.username),
            "gidNumber": published_number(virtual, "gidNumber"),
            "attributes": virtual,
        },
    }


def describe_group(store: Store, settings: LdapSettings, group: Group) -> dict[str, Any]:
    entry = group_entry(store, settings, group)
    return {
        "dn": settings.group_dn(group.name),
        "gidNumber": published_number(entry, "gidNumber"),
        "attributes": entry,
    }
