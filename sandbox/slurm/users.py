"""Tenant users known to this host, so that the sandbox's slurmd can run their jobs.

slurmd starts a job as the submitting user's uid (with that user's groups) and slurmctld resolves
an association's user by name to a uid: both ask NSS. In production the users come from LDAP
(Authentik's LDAP outpost); in the sandbox, tests make them as local
users and groups with `ensure_user`. They stay in /etc/passwd and /etc/group afterwards (the
next call finds them): use uids and gids that no real account and no tenant spec uses.
"""

from __future__ import annotations

import grp
import pwd

from sandbox.slurm.commands import binary, run
from sandbox.supervisor import SandboxError

# The users exist only to own jobs and files: nobody logs in as them.
_HOME = "/nonexistent"
_SHELL = "/usr/sbin/nologin"


def _group_conflict(gid: int, group: str) -> str | None:
    try:
        by_name = grp.getgrnam(group)
    except KeyError:
        by_name = None
    if by_name is not None and by_name.gr_gid != gid:
        return f"group {group!r} exists with gid {by_name.gr_gid}, not {gid}"
    try:
        by_gid = grp.getgrgid(gid)
    except KeyError:
        return None
    if by_gid.gr_name != group:
        return f"gid {gid} belongs to group {by_gid.gr_name!r}, not {group!r}"
    return None


def _user_conflict(name: str, uid: int, gid: int) -> str | None:
    try:
        by_name = pwd.getpwnam(name)
    except KeyError:
        by_name = None
    if by_name is not None and by_name.pw_uid != uid:
        return f"user {name!r} exists with uid {by_name.pw_uid}, not {uid}"
    if by_name is not None and by_name.pw_gid != gid:
        return f"user {name!r} exists with primary gid {by_name.pw_gid}, not {gid}"
    try:
        by_uid = pwd.getpwuid(uid)
    except KeyError:
        return None
    if by_uid.pw_name != name:
        return f"uid {uid} belongs to user {by_uid.pw_name!r}, not {name!r}"
    return None


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _group_exists(group: str) -> bool:
    try:
        grp.getgrnam(group)
    except KeyError:
        return False
    return True


def _add(argv: list[str]) -> str:
    """Runs groupadd or useradd; what went wrong, or "" if it went right."""
    result = run(argv, timeout=30)
    if result is None:
        return f"{argv[0]} timed out"
    return "" if result.returncode == 0 else result.stderr.strip()


def ensure_user(name: str, uid: int, gid: int, group: str) -> None:
    """Makes local user `name` (uid, primary group `group` with gid) if missing; idempotent.

    Refuses, changing nothing, when the name, uid, group or gid is already taken otherwise: a
    user of that name with another uid, a uid or gid of another name. Needs root (useradd)."""
    doing = f"making sandbox user {name!r} (uid {uid}, group {group!r} gid {gid})"
    conflict = _group_conflict(gid, group) or _user_conflict(name, uid, gid)
    if conflict is not None:
        raise SandboxError(f"{doing}: {conflict}; pick another uid/gid or remove it by hand")
    failed = []
    if not _group_exists(group):
        failed.append(_add([binary("groupadd"), "--gid", str(gid), group]))
    if not _user_exists(name):
        failed.append(_add([
            binary("useradd"), "--uid", str(uid), "--gid", str(gid), "--no-create-home",
            "--home-dir", _HOME, "--shell", _SHELL, "--no-user-group", name,
        ]))  # fmt: skip
    # A failure may only mean that another test session made the same user meanwhile: what
    # exists now decides.
    if not (_group_exists(group) and _user_exists(name)):
        detail = "; ".join(f for f in failed if f) or "no error given"
        raise SandboxError(f"{doing} failed ({detail}); this needs root")
    conflict = _group_conflict(gid, group) or _user_conflict(name, uid, gid)
    if conflict is not None:
        raise SandboxError(f"{doing}: {conflict}")
