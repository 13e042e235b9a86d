"""The properties of the Authentik resources (`GROUP`, `USER`): how each input is validated and put
in canonical form, and the attributes they become in Authentik.

Values come from the engine over gRPC, where every number is a float: ids are accepted as whole
floats. Outputs repeat the inputs as Authentik has them now, plus `marked` (the object carries
the tenant's mark) and, for users, `is_active`; both are implied by the inputs, so losing either
is a change that `update` puts back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.base import LIFECYCLE, Field, Schema, whole_number
from providers.identities import EMAIL, HYPHENATED, MAX_ID

__all__ = [
    "GID_ATTRIBUTE",
    "GROUP",
    "KEPT_UNTIL_ATTRIBUTE",
    "MARK_ATTRIBUTE",
    "SSH_KEYS_ATTRIBUTE",
    "UID_ATTRIBUTE",
    "USER",
    "join_keys",
    "kept_tombstone",
    "posix_id",
    "split_keys",
]

# The ownership mark: an object carrying `gpu_tenants_tenant: <slug>` was made by (or handed to)
# that tenant's stack, which may then adopt, change and revoke it.
MARK_ATTRIBUTE = "gpu_tenants_tenant"
GID_ATTRIBUTE = "gidNumber"
UID_ATTRIBUTE = "uidNumber"
SSH_KEYS_ATTRIBUTE = "ssh_keys"
# On the tombstone of a user of a tenant offboarded for real: the day it is kept until (the
# stack's `retention_until`), written when the user becomes one. A rehearsal's destroy only
# disables its users, so the preflight reads this as "this tenant was offboarded and may hold
# data". An Authentik admin removes it from a test tenant's tombstones to let the tenant go as a
# rehearsal.
KEPT_UNTIL_ATTRIBUTE = "gpu_tenants_kept_until"


def kept_tombstone(attributes: Mapping[str, Any], tenant: str) -> bool:
    """Whether a user with these attributes is a tombstone `tenant`'s offboarding keeps."""
    return attributes.get(MARK_ATTRIBUTE) == tenant and KEPT_UNTIL_ATTRIBUTE in attributes


_MANAGED_ATTRIBUTES = frozenset(
    {MARK_ATTRIBUTE, GID_ATTRIBUTE, UID_ATTRIBUTE, SSH_KEYS_ATTRIBUTE, KEPT_UNTIL_ATTRIBUTE}
)


def _hyphenated(value: Any, what: str, example: str, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit or not HYPHENATED.fullmatch(value):
        raise ValueError(
            f"{value!r} is not {what}: use up to {limit} lowercase letters and digits in "
            f"hyphen-separated words, starting with a letter, such as {example!r}"
        )
    return value


def _slug(value: Any) -> str:
    return _hyphenated(value, "a tenant slug", "tenant-foo", 40)


def _group_name(value: Any) -> str:
    return _hyphenated(value, "a group name", "tenant-foo-admins", 64)


def _username(value: Any) -> str:
    return _hyphenated(value, "a username", "alice", 32)


def _group_names(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise ValueError(f"{value!r} is not a list of group names")
    # Membership is a set: sorted, so that the order the program lists them in is no change.
    return sorted({_group_name(v) for v in value})


def _full_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise ValueError(f"{value!r} is not a name: use non-empty printable text on one line")
    return value.strip()


def _email(value: Any) -> str:
    # Empty is Authentik's own "no address" (its email field may be blank): an erased user's.
    if value == "":
        return ""
    if not isinstance(value, str) or not EMAIL.fullmatch(value):
        raise ValueError(f"{value!r} is not an email address such as 'alice@tenant-foo.example'")
    return value


def _posix_id_input(value: Any) -> int:
    """A uid or gid from the program: an integer (a whole float over gRPC) from 1 to 2^31-1."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise ValueError(f"{value!r} is not a POSIX id: use a whole number from 1 to {MAX_ID}")
    return value


def posix_id(value: Any) -> int | str | None:
    """A uidNumber/gidNumber attribute as read back: an int when Authentik honours it (a string of
    digits), else a description of what is there, so that a diff shows it."""
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value!r} as a number, which Authentik ignores"
    return f"{value!r}, not a number"


def _extra_attributes(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{value!r} is not a mapping of attribute names to values")
    taken = sorted(_MANAGED_ATTRIBUTES & set(value))
    if taken:
        raise ValueError(
            f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} set by the provider from "
            "the other inputs; leave them out of `attributes`"
        )
    return dict(value)


def _ssh_keys(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ValueError(
            "at least one SSH public key is required: with none, the login pod's "
            "authorized_keys for the user is empty"
        )
    keys: list[str] = []
    for key in value:
        if not isinstance(key, str) or not key.strip() or "\n" in key.strip():
            raise ValueError(f"{key!r} is not an SSH public key on one line")
        keys.append(key.strip())
    return keys


def join_keys(keys: list[str]) -> str:
    """The `ssh_keys` attribute as the runbook writes it: one key per line."""
    return "\n".join(keys)


def split_keys(value: Any) -> list[str]:
    if not isinstance(value, str):
        return []
    return [line.strip() for line in value.splitlines() if line.strip()]


def _true_or_false(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


def _retention_days(value: Any) -> int | None:
    if value is None:
        return None
    days = whole_number(value, "days")
    if days < 1:
        raise ValueError(f"{value!r} is not a number of days, 1 or more")
    return days


GROUP = Schema(
    kind="group",
    fields=(
        Field("tenant", _slug),
        Field("name", _group_name, replaces=True),
        Field("parent", _group_name),
        Field("gid", _posix_id_input),
        Field("attributes", _extra_attributes, {}),
        LIFECYCLE,
    ),
    identity=("name",),
    implied=lambda _: {"marked": True},
)

USER = Schema(
    kind="user",
    fields=(
        Field("tenant", _slug),
        Field("username", _username, replaces=True),
        Field("name", _full_name),
        Field("email", _email),
        Field("uid", _posix_id_input),
        Field("gid", _posix_id_input),
        Field("ssh_keys", _ssh_keys),
        Field("groups", _group_names, []),
        # False at offboarding's stage destroy: the user stays, disabled, as a tombstone.
        Field("active", _true_or_false, True),
        # With active false: how long the tombstone is kept (the tenant's accounting horizon).
        Field("retention_days", _retention_days, None),
        # A right to erasure: name and email redacted (the inputs), and so are the addresses
        # its audit events and sessions kept of its logins.
        Field("erased", _true_or_false, False),
        # An abandoned onboarding (the offboarding gate checked it never ran a job or wrote a
        # file): destroy deletes the user, no tombstone kept, its uid given back.
        Field("abandoned", _true_or_false, False),
    ),
    identity=("username",),
    implied=lambda p: {"marked": True, "is_active": _true_or_false(p.get("active", True))},
)
