"""The rules across tenants against the numbers Authentik's LDAP outpost actually hands out
(`check --live`): a spec's pinned uid or gid must not be what the directory already gives to
someone else, such as a user made by hand, whom the outpost numbers uid_start + pk.

How the outpost numbers its entries (notes/backends.md): a user's uidNumber is its `uidNumber`
attribute, else uid_start_number (2000) + pk; each user also gets a group of its own whose
gidNumber is that uid (the attribute honoured only as a string); a group's gidNumber is its
`gidNumber` attribute, else gid_start_number (4000) + num_pk.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenant_stack.spec.fleet import Collision, Place
from tenant_stack.spec.models import TenantSpec

if TYPE_CHECKING:
    from providers.authentik.client import Group, User

__all__ = ["Holder", "handed_out", "live_collisions"]

# A spec's user may hold its number as a user or as the user's own group, and its groups only as
# groups: a user and a group may share a name, so a name alone does not make a holder the owner.
_USER_KINDS = ("user", "user's own group")


@dataclass(frozen=True)
class Holder:
    """Something in the directory that holds a POSIX number."""

    kind: str  # "user", "user's own group" (where its number differs), "group"
    name: str
    number: int

    def __str__(self) -> str:
        return f"Authentik {self.kind} {self.name!r}"


def handed_out(
    users: Iterable[User], groups: Iterable[Group], uid_start: int, gid_start: int
) -> list[Holder]:
    """Every number the outpost hands out now."""
    held = []
    for user in users:
        uid = _number(user.attributes.get("uidNumber"), strings_only=False)
        own = _number(user.attributes.get("uidNumber"), strings_only=True)
        held.append(Holder("user", user.username, uid or uid_start + user.pk))
        if (own or uid_start + user.pk) != (uid or uid_start + user.pk):
            held.append(Holder("user's own group", user.username, own or uid_start + user.pk))
    for group in groups:
        gid = _number(group.attributes.get("gidNumber"), strings_only=False)
        held.append(Holder("group", group.name, gid or gid_start + group.num_pk))
    return held


def live_collisions(specs: Mapping[Path, TenantSpec], held: Iterable[Holder]) -> list[Collision]:
    """Each spec number the directory hands to something else than what the spec declares with
    it (the tenant's own users and groups, once made, hold their own numbers)."""
    by_number: dict[int, list[Holder]] = {}
    for holder in held:
        by_number.setdefault(holder.number, []).append(holder)
    found = []
    for number, place, owners in _claims(specs):
        for holder in by_number.get(number, []):
            if (holder.kind, holder.name) not in owners:
                found.append(
                    Collision(
                        "live",
                        f"{number} is already the number of {holder} in the directory (as the "
                        "LDAP outpost hands it out); pin another",
                        (place,),
                    )
                )
    return found


def _claims(
    specs: Mapping[Path, TenantSpec],
) -> Iterator[tuple[int, Place, set[tuple[str, str]]]]:
    """Each number a spec pins, where, and the directory's holders (kind, name) that may hold it."""
    for path, spec in specs.items():
        for i, user in enumerate(spec.users):
            owners = {(kind, user.username) for kind in _USER_KINDS}
            yield user.uid, Place(path, f"users.{i}.uid"), owners
        yield spec.identity.gid, Place(path, "identity.gid"), {("group", spec.slug)}
        if spec.identity.admins_gid is not None:
            admins = ("group", f"{spec.slug}-admins")
            yield spec.identity.admins_gid, Place(path, "identity.admins_gid"), {admins}


def _number(value: Any, *, strings_only: bool) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if not strings_only and isinstance(value, int) and not isinstance(value, bool):
        return value
    return None
