"""Directory quotas: hard and soft limits on the bytes of a directory's subtree, the soft limit's
grace period, and the writes they (or a full filesystem) refuse.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sandbox.weka.core import Caller
from sandbox.weka.errors import ApiError
from sandbox.weka.filesystems import STORAGE_WRITERS, Filesystems
from sandbox.weka.store import FileSystem, Quota


@dataclass(frozen=True)
class QuotaLimits:
    """The fields of a quota request; None where the request leaves one out."""

    hard_limit_bytes: int | None = None
    soft_limit_bytes: int | None = None
    grace_seconds: int | None = None
    owner: str | None = None


def _contains(parent: str, path: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent + "/")


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


class Quotas(Filesystems):
    def quota_usage(self, fs: FileSystem, path: str) -> int:
        return sum(d.used_bytes for p, d in fs.directories.items() if _contains(path, p))

    def _quota(self, fs: FileSystem, inode_id: str) -> tuple[str, Quota]:
        path, _ = self._directory(fs, inode_id)
        quota = fs.quotas.get(inode_id)
        if quota is None:
            # The real cluster answers 500 here; csi-wekafs looks for the phrase in the message.
            # The emulator says the phrase alone: the previous release's stacks, which
            # test_stack_upgrade makes, match the whole message (the client now matches a part).
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
        fs = self._usable(self.find_fs(caller, uid))
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

    def _check_write(self, fs: FileSystem, path: str, growth: int) -> None:
        """Refuse `growth` more bytes in `path` as a mount would: ENOSPC when the filesystem is
        full, EDQUOT past a hard limit or a soft limit whose grace period is over."""
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
