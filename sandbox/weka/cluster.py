"""What the emulated cluster does: the rules behind each API call, free of HTTP.

Every operation takes the authenticated `Caller` and sees only the caller's organization, as the
real cluster does. Errors are `ApiError`s carrying the status code and message to answer with.
Directories live on disk, under the mount root (`mounts`); the state keeps their inode ids,
usage and quotas.
"""

from __future__ import annotations

import posixpath
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sandbox.weka.store import Directory, FileSystem, Org, Quota, Snapshot, State, User
from sandbox.weka.tokens import (
    PASSWORD_RULE,
    Tokens,
    check_password,
    hash_password,
    password_is_strong,
)

if TYPE_CHECKING:
    from sandbox.weka.mounts import Mounts

ROOT_ORG = "Root"
MAX_ORGS = 256  # including Root, per the Weka docs
ROLES = {r.lower(): r for r in ("ClusterAdmin", "OrgAdmin", "Regular", "ReadOnly", "CSI", "S3")}
STORAGE_WRITERS = {"ClusterAdmin", "OrgAdmin", "CSI"}
USER_ADMINS = {"ClusterAdmin", "OrgAdmin"}
OBS_SITES = {"LOCAL", "REMOTE"}


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Caller:
    user: User
    org: Org


@dataclass(frozen=True)
class QuotaLimits:
    """The fields of a quota request; None where the request leaves one out."""

    hard_limit_bytes: int | None = None
    soft_limit_bytes: int | None = None
    grace_seconds: int | None = None
    owner: str | None = None


def normalize_path(path: str) -> str:
    if not path.startswith("/"):
        raise ApiError(400, f"Path must be absolute: {path!r}")
    if ".." in path.split("/"):
        raise ApiError(400, f"Path must not contain '..': {path!r}")
    return "/" + posixpath.normpath(path).lstrip("/") if path.strip("/") else "/"


def _check_name(kind: str, name: str) -> None:
    """Names are directories under the mount root: one path component each."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ApiError(
            400, f"{kind} name {name!r} is not valid: give one directory name, without '/'"
        )


def _contains(parent: str, path: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent + "/")


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Cluster:
    def __init__(self, state: State, tokens: Tokens, capacity_bytes: int, mounts: Mounts) -> None:
        self.state = state
        self.tokens = tokens
        self.capacity_bytes = capacity_bytes
        self.mounts = mounts
        # Set when a call registers or forgets directories found on disk, so that even a GET
        # saves the state (an inode id handed out must survive a restart).
        self.directories_changed = False

    # --- bootstrap and sessions ---------------------------------------------------------

    def bootstrap(self, admin_password: str) -> None:
        """Create Root and its cluster admin 'admin' (first start only)."""
        root = Org(uid=str(uuid.uuid4()), id=0, name=ROOT_ORG)
        self.state.orgs[root.uid] = root
        self._add_user(root, "admin", admin_password, "ClusterAdmin")

    def create_mounts(self, every_directory: bool) -> None:
        """At start: the directory of every filesystem, and with `every_directory` each directory
        the state knows (state files from before the mounts kept directories in the state only)."""
        for fs in self.state.filesystems.values():
            org = self._org_name(fs)
            self.mounts.ensure_fs(org, fs.name)
            if every_directory:
                for path in fs.directories:
                    self.mounts.make_directories(org, fs.name, path)

    def login(self, username: str, password: str, org_name: str) -> dict[str, object]:
        org = self._org_by_name(org_name)
        user = self._user_by_name(org, username) if org else None
        if user is None or not check_password(password, user.password_hash):
            raise ApiError(401, "Invalid username or password")
        self.tokens.prune()
        return self._token_reply(user, self.tokens.issue(user.uid, "refresh"))

    def refresh(self, refresh_token: str) -> dict[str, object]:
        record, valid = self.tokens.lookup(refresh_token, "refresh")
        if record is None or record.user_uid not in self.state.users:
            raise ApiError(401, "Invalid refresh token")
        if not valid:
            raise ApiError(401, "Refresh token has expired, please log in again")
        return self._token_reply(self.state.users[record.user_uid], refresh_token)

    def _token_reply(self, user: User, refresh_token: str) -> dict[str, object]:
        return {
            "access_token": self.tokens.issue(user.uid, "access"),
            "token_type": "Bearer",
            "expires_in": self.tokens.access_ttl,
            "refresh_token": refresh_token,
        }

    def authenticate(self, authorization: str | None) -> Caller:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "Unauthorized: missing Bearer access token")
        record, valid = self.tokens.lookup(token.strip(), "access")
        if record is None or record.user_uid not in self.state.users:
            raise ApiError(401, "Unauthorized: invalid access token")
        if not valid:
            raise ApiError(401, "Unauthorized: access token has expired")
        user = self.state.users[record.user_uid]
        return Caller(user, self.state.orgs[user.org_uid])

    # --- organizations -------------------------------------------------------------------

    def _org_by_name(self, name: str) -> Org | None:
        return next((o for o in self.state.orgs.values() if o.name == name), None)

    def _require(self, caller: Caller, roles: set[str], action: str) -> None:
        if caller.user.role not in roles:
            raise ApiError(403, f"Role {caller.user.role} is not allowed to {action}")

    def org_allocated(self, org: Org) -> tuple[int, int]:
        """(SSD, total) bytes allocated to the organization's filesystems."""
        mine = [fs for fs in self.state.filesystems.values() if fs.org_uid == org.uid]
        return sum(fs.ssd_budget for fs in mine), sum(fs.total_budget for fs in mine)

    def list_orgs(self, caller: Caller) -> list[Org]:
        if caller.user.role == "ClusterAdmin":
            return sorted(self.state.orgs.values(), key=lambda o: o.id)
        return [caller.org]

    def get_org(self, caller: Caller, uid: str) -> Org:
        if caller.user.role != "ClusterAdmin" and uid != caller.org.uid:
            raise ApiError(403, "Only a cluster admin can view other organizations")
        org = self.state.orgs.get(uid)
        if org is None:
            raise ApiError(404, f"Organization {uid} not found")
        return org

    def create_org(
        self, caller: Caller, name: str, username: str, password: str, ssd: int, total: int
    ) -> Org:
        self._require(caller, {"ClusterAdmin"}, "create organizations")
        _check_name("Organization", name)
        if self._org_by_name(name) is not None:
            raise ApiError(409, f"Organization {name} already exists")
        if len(self.state.orgs) >= MAX_ORGS:
            raise ApiError(400, f"Cannot create more than {MAX_ORGS} organizations")
        self._check_password(password)
        self._check_limits(ssd, total)
        org = Org(str(uuid.uuid4()), self.state.next_org_id, name, ssd, total)
        self.state.next_org_id += 1
        self.state.orgs[org.uid] = org
        self._add_user(org, username, password, "OrgAdmin")
        return org

    def rename_org(self, caller: Caller, uid: str, new_name: str) -> Org:
        self._require(caller, {"ClusterAdmin"}, "rename organizations")
        org = self.get_org(caller, uid)
        if org.id == 0:
            raise ApiError(400, "The Root organization cannot be renamed")
        other = self._org_by_name(new_name)
        if other is not None and other is not org:
            raise ApiError(409, f"Organization {new_name} already exists")
        _check_name("Organization", new_name)
        if new_name != org.name:
            self.mounts.rename_org(org.name, new_name)
        org.name = new_name
        return org

    def set_org_limits(self, caller: Caller, uid: str, ssd: int | None, total: int | None) -> Org:
        self._require(caller, {"ClusterAdmin"}, "set organization quotas")
        org = self.get_org(caller, uid)
        if org.id == 0:
            raise ApiError(400, "The Root organization cannot be limited")
        new_ssd = org.ssd_quota if ssd is None else ssd
        new_total = org.total_quota if total is None else total
        self._check_limits(new_ssd, new_total)
        ssd_used, total_used = self.org_allocated(org)
        if new_total and new_total < total_used:
            raise ApiError(
                400, f"Total quota {new_total} is below the {total_used} bytes already allocated"
            )
        if new_ssd and new_ssd < ssd_used:
            raise ApiError(
                400, f"SSD quota {new_ssd} is below the {ssd_used} bytes already allocated"
            )
        org.ssd_quota, org.total_quota = new_ssd, new_total
        return org

    def _check_limits(self, ssd: int, total: int) -> None:
        if ssd < 0 or total < 0:
            raise ApiError(400, "Quotas cannot be negative (0 means unlimited)")
        if ssd and total and ssd > total:
            raise ApiError(400, "SSD quota cannot exceed the total quota")

    def delete_org(self, caller: Caller, uid: str) -> None:
        self._require(caller, {"ClusterAdmin"}, "delete organizations")
        org = self.get_org(caller, uid)
        if org.id == 0:
            raise ApiError(400, "The Root organization cannot be deleted")
        filesystems = [fs.name for fs in self.state.filesystems.values() if fs.org_uid == uid]
        if filesystems:
            raise ApiError(
                400,
                f"Organization {org.name} still has filesystems: {', '.join(sorted(filesystems))}",
            )
        self.mounts.remove_org(org.name)
        # Like the real cluster, everything else that belongs to the org goes with it.
        for user in [u for u in self.state.users.values() if u.org_uid == uid]:
            self.tokens.revoke_user(user.uid)
            del self.state.users[user.uid]
        for snap_uid in [s.uid for s in self.state.snapshots.values() if s.org_uid == uid]:
            del self.state.snapshots[snap_uid]
        del self.state.orgs[uid]

    # --- users ---------------------------------------------------------------------------

    def _user_by_name(self, org: Org, username: str) -> User | None:
        users = self.state.users.values()
        return next((u for u in users if u.org_uid == org.uid and u.username == username), None)

    def _check_password(self, password: str) -> None:
        if not password_is_strong(password):
            raise ApiError(400, PASSWORD_RULE)

    def _role(self, org: Org, role: str) -> str:
        canonical = ROLES.get(role.lower())
        if canonical is None:
            raise ApiError(400, f"Invalid role {role!r}; valid roles: {', '.join(ROLES.values())}")
        if canonical == "ClusterAdmin" and org.id != 0:
            raise ApiError(400, "ClusterAdmin users can only exist in the Root organization")
        return canonical

    def _add_user(self, org: Org, username: str, password: str, role: str) -> User:
        if not username:
            raise ApiError(400, "Username is required")
        if self._user_by_name(org, username) is not None:
            raise ApiError(409, f"User {username} already exists")
        user = User(str(uuid.uuid4()), org.uid, username, role, hash_password(password))
        self.state.users[user.uid] = user
        return user

    def list_users(self, caller: Caller) -> list[User]:
        self._require(caller, USER_ADMINS, "list users")
        return [u for u in self.state.users.values() if u.org_uid == caller.org.uid]

    def _find_user(self, caller: Caller, uid: str) -> User:
        user = self.state.users.get(uid)
        if user is None or user.org_uid != caller.org.uid:
            raise ApiError(404, f"User {uid} not found")
        return user

    def create_user(
        self,
        caller: Caller,
        username: str,
        password: str,
        role: str,
        posix_uid: int | None,
        posix_gid: int | None,
    ) -> User:
        self._require(caller, USER_ADMINS, "create users")
        canonical = self._role(caller.org, role)
        if canonical == "ClusterAdmin" and caller.user.role != "ClusterAdmin":
            raise ApiError(403, "Only a cluster admin can create cluster admins")
        self._check_password(password)
        user = self._add_user(caller.org, username, password, canonical)
        user.posix_uid, user.posix_gid = posix_uid, posix_gid
        return user

    def update_user(self, caller: Caller, uid: str, role: str | None, password: str | None) -> User:
        is_self = uid == caller.user.uid
        if not is_self or role is not None:
            self._require(caller, USER_ADMINS, "update other users")
        user = self._find_user(caller, uid)
        if role is not None:
            canonical = self._role(caller.org, role)
            if is_self and canonical != user.role:
                raise ApiError(400, "Users cannot change their own role")
            user.role = canonical
        if password is not None:
            self._check_password(password)
            user.password_hash = hash_password(password)
        return user

    def delete_user(self, caller: Caller, uid: str) -> None:
        self._require(caller, USER_ADMINS, "delete users")
        user = self._find_user(caller, uid)
        if user.uid == caller.user.uid:
            raise ApiError(400, "Users cannot delete themselves")
        self.tokens.revoke_user(user.uid)
        del self.state.users[user.uid]

    def revoke_user(self, caller: Caller, uid: str) -> None:
        self._require(caller, USER_ADMINS, "revoke user tokens")
        self.tokens.revoke_user(self._find_user(caller, uid).uid)

    # --- filesystems ---------------------------------------------------------------------

    def fs_used(self, fs: FileSystem) -> int:
        return sum(d.used_bytes for d in fs.directories.values())

    def orphan_snapshot_bytes(self) -> int:
        """Snapshots whose filesystem is gone are the only copy of their data: they take space."""
        live = self.state.filesystems
        return sum(s.size_bytes for s in self.state.snapshots.values() if s.fs_uid not in live)

    def unprovisioned(self) -> int:
        allocated = sum(fs.total_budget for fs in self.state.filesystems.values())
        return self.capacity_bytes - allocated - self.orphan_snapshot_bytes()

    def _org_name(self, fs: FileSystem) -> str:
        return self.state.orgs[fs.org_uid].name

    def find_fs(self, caller: Caller, uid: str) -> FileSystem:
        fs = self.state.filesystems.get(uid)
        # Another org's filesystem is reported missing, not forbidden: orgs cannot see each other.
        if fs is None or fs.org_uid != caller.org.uid:
            raise ApiError(404, f"Filesystem {uid} not found")
        return self._with_disk(fs)

    def list_fs(self, caller: Caller, name: str | None, group: str | None) -> list[FileSystem]:
        return [
            self._with_disk(fs)
            for fs in self.state.filesystems.values()
            if fs.org_uid == caller.org.uid
            and (name is None or fs.name == name)
            and (group is None or fs.group_name == group)
        ]

    def _with_disk(self, fs: FileSystem) -> FileSystem:
        """`fs` without the directories removed on disk since it was last used: like the real
        cluster, their quotas and the data counted in them go too. Every use of a filesystem
        passes here, so no quota ever names a directory that is gone."""
        org = self._org_name(fs)
        self.mounts.ensure_fs(org, fs.name)
        for path in [p for p in fs.directories if p != "/"]:
            if not self.mounts.is_directory(org, fs.name, path):
                inode_id = fs.directories.pop(path).inode_id
                fs.quotas.pop(str(inode_id), None)
                self.directories_changed = True
        return fs

    def _fs_by_name(self, org_uid: str, name: str) -> FileSystem | None:
        filesystems = self.state.filesystems.values()
        return next((f for f in filesystems if f.org_uid == org_uid and f.name == name), None)

    def _check_capacity(self, org: Org, fs: FileSystem | None, total: int, ssd: int) -> None:
        """Refuse to grow past the org's quotas or the cluster's unprovisioned capacity."""
        old_total, old_ssd = (fs.total_budget, fs.ssd_budget) if fs else (0, 0)
        ssd_used, total_used = self.org_allocated(org)
        if total > old_total and org.total_quota:
            left = org.total_quota - (total_used - old_total)
            if total > left:
                raise ApiError(
                    400,
                    f"Not enough total quota in organization {org.name}: requested {total} "
                    f"bytes, {left} of {org.total_quota} bytes available",
                )
        if ssd > old_ssd and org.ssd_quota:
            left = org.ssd_quota - (ssd_used - old_ssd)
            if ssd > left:
                raise ApiError(
                    400,
                    f"Not enough SSD quota in organization {org.name}: requested {ssd} bytes, "
                    f"{left} of {org.ssd_quota} bytes available",
                )
        free = self.unprovisioned() + old_total
        if total > old_total and total > free:
            raise ApiError(
                400,
                f"Not enough free capacity in the cluster: requested {total} bytes, "
                f"{free} bytes available",
            )

    def create_fs(
        self,
        caller: Caller,
        name: str,
        group_name: str,
        total: int,
        ssd: int | None,
        auth_required: bool,
        encrypted: bool,
    ) -> FileSystem:
        self._require(caller, STORAGE_WRITERS, "create filesystems")
        _check_name("Filesystem", name)
        if self._fs_by_name(caller.org.uid, name) is not None:
            raise ApiError(409, f"Filesystem {name} already exists")
        ssd_budget = total if ssd is None else ssd
        self._check_budgets(total, ssd_budget)
        self._check_capacity(caller.org, None, total, ssd_budget)
        fs = FileSystem(
            uid=str(uuid.uuid4()),
            id=f"FSId<{self.state.next_fs_id}>",
            org_uid=caller.org.uid,
            name=name,
            group_name=group_name,
            total_budget=total,
            ssd_budget=ssd_budget,
            auth_required=auth_required,
            encrypted=encrypted,
        )
        self.mounts.create_fs(caller.org.name, name)
        self.state.next_fs_id += 1
        fs.directories["/"] = Directory(self.state.allocate_inode())
        self.state.filesystems[fs.uid] = fs
        return fs

    def _check_budgets(self, total: int, ssd: int) -> None:
        if total <= 0:
            raise ApiError(400, "total_capacity must be a positive number of bytes")
        if ssd <= 0 or ssd > total:
            raise ApiError(400, "ssd_capacity must be positive and at most total_capacity")

    def update_fs(
        self,
        caller: Caller,
        uid: str,
        new_name: str | None,
        total: int | None,
        ssd: int | None,
        auth_required: bool | None,
    ) -> FileSystem:
        self._require(caller, STORAGE_WRITERS, "update filesystems")
        fs = self.find_fs(caller, uid)
        renamed = new_name is not None and new_name != fs.name
        if renamed and self._fs_by_name(caller.org.uid, str(new_name)) is not None:
            raise ApiError(409, f"Filesystem {new_name} already exists")
        if new_name is not None:
            _check_name("Filesystem", new_name)
        new_total = fs.total_budget if total is None else total
        # Without tiering the SSD budget follows the total unless it is set on its own.
        follows = fs.ssd_budget == fs.total_budget
        new_ssd = ssd if ssd is not None else (new_total if follows else fs.ssd_budget)
        self._check_budgets(new_total, new_ssd)
        used = self.fs_used(fs)
        if new_total < used:
            raise ApiError(
                400, f"Cannot shrink filesystem {fs.name} to {new_total} bytes: {used} bytes used"
            )
        self._check_capacity(caller.org, fs, new_total, new_ssd)
        if renamed:
            self.mounts.rename_fs(caller.org.name, fs.name, str(new_name))
            fs.name = str(new_name)
        fs.total_budget, fs.ssd_budget = new_total, new_ssd
        if auth_required is not None:
            fs.auth_required = auth_required
        return fs

    def delete_fs(self, caller: Caller, uid: str) -> None:
        self._require(caller, STORAGE_WRITERS, "delete filesystems")
        fs = self.find_fs(caller, uid)
        if fs.mounted:
            raise ApiError(400, f"Cannot delete filesystem {fs.name}: filesystem is in use")
        self.mounts.remove_fs(caller.org.name, fs.name)
        # Snapshots stay: they outlive their filesystem (and now take cluster capacity).
        del self.state.filesystems[uid]

    # --- directories and quotas ----------------------------------------------------------

    def resolve_path(self, caller: Caller, uid: str, path: str) -> tuple[str, Directory]:
        return self._on_disk(self.find_fs(caller, uid), path)

    def _on_disk(self, fs: FileSystem, path: str) -> tuple[str, Directory]:
        """The directory at `path` on disk, registered (parents first) when first named."""
        path = normalize_path(path)
        org = self._org_name(fs)
        canonical = self.mounts.resolve(org, fs.name, path)
        if not self.mounts.is_directory(org, fs.name, canonical):
            raise ApiError(404, f"PATH_NOT_FOUND: {path} does not exist in filesystem {fs.name}")
        parts = [p for p in canonical.split("/") if p]
        for depth in range(1, len(parts) + 1):
            current = "/" + "/".join(parts[:depth])
            if current not in fs.directories:
                fs.directories[current] = Directory(self.state.allocate_inode())
                self.directories_changed = True
        return canonical, fs.directories[canonical]

    def _directory(self, fs: FileSystem, inode_id: str) -> tuple[str, Directory]:
        for path, directory in fs.directories.items():
            if str(directory.inode_id) == inode_id:
                return path, directory
        raise ApiError(404, f"Inode {inode_id} not found in filesystem {fs.name}")

    def quota_usage(self, fs: FileSystem, path: str) -> int:
        return sum(d.used_bytes for p, d in fs.directories.items() if _contains(path, p))

    def _quota(self, fs: FileSystem, inode_id: str) -> tuple[str, Quota]:
        path, _ = self._directory(fs, inode_id)
        quota = fs.quotas.get(inode_id)
        if quota is None:
            # The real cluster answers 500 here (csi-wekafs matches on this message).
            raise ApiError(500, "Directory has no quota")
        return path, quota

    def get_quota(self, caller: Caller, uid: str, inode_id: str) -> tuple[FileSystem, str, Quota]:
        fs = self.find_fs(caller, uid)
        path, quota = self._quota(fs, inode_id)
        return fs, path, quota

    def list_quotas(self, caller: Caller, uid: str) -> tuple[FileSystem, list[tuple[str, Quota]]]:
        fs = self.find_fs(caller, uid)
        return fs, [(self._directory(fs, i)[0], q) for i, q in fs.quotas.items()]

    def set_quota(
        self,
        caller: Caller,
        uid: str,
        inode_id: str,
        limits: QuotaLimits,
        patch: bool,
    ) -> tuple[FileSystem, str, Quota]:
        """PUT replaces (or creates) the quota, PATCH changes only the fields given."""
        self._require(caller, STORAGE_WRITERS, "set quotas")
        fs = self.find_fs(caller, uid)
        path, _ = self._directory(fs, inode_id)
        # PUT treats a missing limit as 0 (unlimited): csi-wekafs omits zero limits.
        old = self._quota(fs, inode_id)[1] if patch else Quota(0, 0, 0, "")
        quota = Quota(
            hard_limit_bytes=_or(limits.hard_limit_bytes, old.hard_limit_bytes),
            soft_limit_bytes=_or(limits.soft_limit_bytes, old.soft_limit_bytes),
            grace_seconds=_or(limits.grace_seconds, old.grace_seconds),
            owner=old.owner if limits.owner is None else limits.owner,
            soft_exceeded_since=old.soft_exceeded_since,
        )
        if min(quota.hard_limit_bytes, quota.soft_limit_bytes, quota.grace_seconds) < 0:
            raise ApiError(400, "Quota limits and grace period cannot be negative")
        if quota.hard_limit_bytes and quota.soft_limit_bytes > quota.hard_limit_bytes:
            raise ApiError(400, "Soft limit cannot exceed the hard limit")
        fs.quotas[inode_id] = quota
        self._track_soft_limits(fs)
        return fs, path, quota

    def delete_quota(self, caller: Caller, uid: str, inode_id: str) -> None:
        self._require(caller, STORAGE_WRITERS, "unset quotas")
        fs = self.find_fs(caller, uid)
        self._quota(fs, inode_id)
        del fs.quotas[inode_id]

    def _track_soft_limits(self, fs: FileSystem) -> None:
        now = time.time()
        for inode_id, quota in fs.quotas.items():
            path, _ = self._directory(fs, inode_id)
            over = bool(quota.soft_limit_bytes) and (
                self.quota_usage(fs, path) > quota.soft_limit_bytes
            )
            if not over:
                quota.soft_exceeded_since = None
            elif quota.soft_exceeded_since is None:
                quota.soft_exceeded_since = now

    # --- snapshots -----------------------------------------------------------------------

    def find_snapshot(self, caller: Caller, uid: str) -> Snapshot:
        snap = self.state.snapshots.get(uid)
        if snap is None or snap.org_uid != caller.org.uid:
            raise ApiError(404, f"Snapshot {uid} not found")
        return snap

    def list_snapshots(
        self, caller: Caller, filesystem: str | None, name: str | None, access_point: str | None
    ) -> list[Snapshot]:
        return [
            s
            for s in self.state.snapshots.values()
            if s.org_uid == caller.org.uid
            and (filesystem is None or s.fs_name == filesystem)
            and (name is None or s.name == name)
            and (access_point is None or s.access_point == access_point)
        ]

    def _check_snapshot_unique(self, fs_uid: str, name: str, access_point: str, uid: str) -> None:
        for other in self.state.snapshots.values():
            if other.fs_uid != fs_uid or other.uid == uid:
                continue
            if other.name == name:
                raise ApiError(409, f"Snapshot {name} already exists in this filesystem")
            if other.access_point == access_point:
                raise ApiError(409, f"Access point {access_point} is already in use")

    def create_snapshot(
        self, caller: Caller, fs_uid: str, name: str, access_point: str | None, writable: bool
    ) -> Snapshot:
        self._require(caller, STORAGE_WRITERS, "create snapshots")
        fs = self.find_fs(caller, fs_uid)
        if not name:
            raise ApiError(400, "Snapshot name is required")
        point = access_point or time.strftime("@GMT-%Y.%m.%d-%H.%M.%S", time.gmtime())
        self._check_snapshot_unique(fs.uid, name, point, "")
        snap = Snapshot(
            uid=str(uuid.uuid4()),
            id=f"SnapshotId<{self.state.next_snapshot_id}>",
            org_uid=caller.org.uid,
            name=name,
            access_point=point,
            fs_uid=fs.uid,
            fs_id=fs.id,
            fs_name=fs.name,
            is_writable=writable,
            creation_time=_now_iso(),
            size_bytes=self.fs_used(fs),
        )
        self.state.next_snapshot_id += 1
        self.state.snapshots[snap.uid] = snap
        return snap

    def update_snapshot(
        self,
        caller: Caller,
        uid: str,
        new_name: str | None,
        access_point: str | None,
        writable: bool | None,
    ) -> Snapshot:
        self._require(caller, STORAGE_WRITERS, "update snapshots")
        snap = self.find_snapshot(caller, uid)
        name = new_name or snap.name
        point = access_point or snap.access_point
        self._check_snapshot_unique(snap.fs_uid, name, point, snap.uid)
        snap.name, snap.access_point = name, point
        if writable is not None:
            snap.is_writable = writable
        return snap

    def delete_snapshot(self, caller: Caller, uid: str) -> None:
        self._require(caller, STORAGE_WRITERS, "delete snapshots")
        del self.state.snapshots[self.find_snapshot(caller, uid).uid]

    def upload_snapshot(self, caller: Caller, uid: str, obs_site: str) -> Snapshot:
        self._require(caller, STORAGE_WRITERS, "upload snapshots")
        snap = self.find_snapshot(caller, uid)
        if obs_site.upper() not in OBS_SITES:
            raise ApiError(400, f"obs_site must be one of {', '.join(sorted(OBS_SITES))}")
        # No object store is modelled: the upload completes at once with a plausible locator.
        number = snap.id.removeprefix("SnapshotId<").removesuffix(">")
        snap.locator = f"{self.state.cluster_guid[:8]}/d/s/{number}/spec/{uuid.uuid4()}"
        return snap

    # --- test-only controls (what a mount would do on a real cluster) --------------------

    def any_fs(self, uid: str) -> FileSystem:
        fs = self.state.filesystems.get(uid)
        if fs is None:
            raise ApiError(404, f"Filesystem {uid} not found")
        return self._with_disk(fs)

    def make_directory(self, uid: str, path: str) -> tuple[str, Directory]:
        """mkdir -p on the mount: create the directory and any missing parents."""
        fs = self.any_fs(uid)
        made = self.mounts.make_directories(self._org_name(fs), fs.name, normalize_path(path))
        return self._on_disk(fs, made)

    def set_usage(self, uid: str, path: str, used: int) -> tuple[str, Directory]:
        """Stand in for writes: refuse what a client would get ENOSPC/EDQUOT for."""
        fs = self.any_fs(uid)
        path, directory = self._on_disk(fs, path)
        if used < 0:
            raise ApiError(400, "used_bytes cannot be negative")
        growth = used - directory.used_bytes
        if growth > 0:
            self._check_write(fs, path, growth)
        directory.used_bytes = used
        self._track_soft_limits(fs)
        return path, directory

    def _check_write(self, fs: FileSystem, path: str, growth: int) -> None:
        if self.fs_used(fs) + growth > fs.total_budget:
            raise ApiError(507, f"No space left on device: filesystem {fs.name} is full")
        now = time.time()
        for inode_id, quota in fs.quotas.items():
            quota_path, _ = self._directory(fs, inode_id)
            if not _contains(quota_path, path):
                continue
            after = self.quota_usage(fs, quota_path) + growth
            if quota.hard_limit_bytes and after > quota.hard_limit_bytes:
                raise ApiError(
                    507, f"Disk quota exceeded: hard limit of {quota_path} would be exceeded"
                )
            grace_over = (
                quota.soft_exceeded_since is not None
                and quota.grace_seconds > 0
                and now - quota.soft_exceeded_since >= quota.grace_seconds
            )
            if quota.soft_limit_bytes and after > quota.soft_limit_bytes and grace_over:
                raise ApiError(
                    507, f"Disk quota exceeded: soft limit grace period of {quota_path} is over"
                )

    def set_mounted(self, uid: str, mounted: bool) -> FileSystem:
        fs = self.any_fs(uid)
        fs.mounted = mounted
        return fs


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
