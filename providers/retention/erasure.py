"""A user's right to erasure, applied to a retained copy of a tenant's files: what the user's
files are, and a directory archive without them.

A user's files are their home directory (`<user>` at the top of the copy: the tenant's home
directories are named after the users, on the tenant's own filesystem and under its directory
on a shared one) and every other file or directory they own (by uid: what they left in
scratch). Everyone else's files stay exactly as they were: an archive is rewritten member by
member, its data copied unchanged.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping
from typing import Any

__all__ = ["erased_users", "is_erased", "users_files", "without_users"]


def erased_users(value: Any) -> dict[str, int]:
    """The `erased` input: username -> uid (numbers reach a dynamic provider as floats)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{value!r} is not a mapping of username to uid")
    found = {}
    for user, uid in value.items():
        if not isinstance(user, str) or not user or "/" in user or user in (".", ".."):
            raise ValueError(f"{user!r} is not a username")
        if isinstance(uid, bool) or not isinstance(uid, int | float) or uid != int(uid) or uid < 1:
            raise ValueError(f"{user}: {uid!r} is not a uid")
        found[user] = int(uid)
    return found


def is_erased(path: str, uid: int, users: Mapping[str, int]) -> bool:
    """Whether the member at `path` (relative to the copy's top, `./` or not) owned by `uid` is
    an erased user's."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return uid in users.values() or (bool(parts) and parts[0] in users)


def users_files(archive: bytes, users: Mapping[str, int]) -> list[str]:
    """The members of the gzipped tar `archive` that `users` own."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as source:
        return [m.name for m in source if is_erased(m.name, m.uid, users)]


def without_users(archive: bytes, users: Mapping[str, int]) -> tuple[bytes, list[str]]:
    """The gzipped tar `archive` without the members `users` own, and the names removed."""
    removed = []
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as source,
        tarfile.open(fileobj=out, mode="w:gz", format=source.format) as target,
    ):
        for member in source:
            if is_erased(member.name, member.uid, users):
                removed.append(member.name)
                continue
            data = source.extractfile(member) if member.isfile() else None
            target.addfile(member, data)
    return out.getvalue(), removed
