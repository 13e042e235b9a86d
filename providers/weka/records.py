"""What the Weka REST API v2 answers, read tolerantly: one frozen record per kind of object,
each made from the reply's `data` by `from_json`. Most objects are snake_case; snapshots, and
the object store buckets attached to a filesystem, are camelCase."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "AttachedBucket",
    "FileSystem",
    "LocatorInfo",
    "Organization",
    "Quota",
    "Snapshot",
    "SnapshotUpload",
    "User",
]


@dataclass(frozen=True)
class Organization:
    uid: str
    name: str
    ssd_quota: int
    total_quota: int

    @classmethod
    def from_json(cls, data: Any) -> Organization:
        return cls(
            str(data["uid"]), str(data["name"]), int(data["ssd_quota"]), int(data["total_quota"])
        )


@dataclass(frozen=True)
class User:
    uid: str
    username: str
    role: str

    @classmethod
    def from_json(cls, data: Any) -> User:
        return cls(str(data["uid"]), str(data["username"]), str(data["role"]))


@dataclass(frozen=True)
class AttachedBucket:
    """An object store bucket attached to a filesystem, an item of its `obs_buckets` (camelCase
    within, like snapshots): `mode` is WRITABLE (tiering and uploads), READ_ONLY or, for a
    bucket of the remote site, REMOTE."""

    uid: str
    name: str
    mode: str

    @classmethod
    def from_json(cls, data: Any) -> AttachedBucket:
        return cls(str(data.get("uid", "")), str(data["name"]), str(data.get("mode", "")))


@dataclass(frozen=True)
class FileSystem:
    uid: str
    name: str
    group_name: str
    total_capacity: int
    ssd_capacity: int
    object_stores: tuple[AttachedBucket, ...] = ()
    # Usable once the cluster has made it (`is_ready`, as csi-wekafs waits for it); a
    # filesystem being deleted never becomes ready.
    is_ready: bool = True
    is_removing: bool = False
    status: str = ""

    @classmethod
    def from_json(cls, data: Any) -> FileSystem:
        return cls(
            str(data["uid"]),
            str(data["name"]),
            str(data["group_name"]),
            int(data["total_budget"]),
            int(data["ssd_budget"]),
            tuple(AttachedBucket.from_json(b) for b in data.get("obs_buckets") or ()),
            is_ready=bool(data.get("is_ready", True)),
            is_removing=bool(data.get("is_removing", False)),
            status=str(data.get("status") or ""),
        )


@dataclass(frozen=True)
class Quota:
    """Required: the fields csi-wekafs relies on (`inode_id`, the limits, `status`); the rest
    the API documents but a cluster may leave out. `status` goes ADDING -> ACTIVE (or ERROR);
    the quota is enforced once ACTIVE."""

    inode_id: str  # a string in resolvePath, a number in quota replies: kept as a string
    hard_limit_bytes: int
    soft_limit_bytes: int
    status: str
    path: str = ""
    grace_seconds: int = 0
    owner: str = ""

    @classmethod
    def from_json(cls, data: Any) -> Quota:
        return cls(
            str(data["inode_id"]),
            int(data["hard_limit_bytes"]),
            int(data["soft_limit_bytes"]),
            str(data["status"]),
            path=str(data.get("path") or ""),
            grace_seconds=int(data.get("grace_seconds") or 0),
            owner=str(data.get("owner") or ""),
        )


@dataclass(frozen=True)
class Snapshot:
    """Snapshots are the one camelCase object of the API. A snapshot lives in its filesystem and
    is deleted with it; `locator` is set once it is uploaded to an object store (Snap-To-Object),
    and the upload is complete when `stow_status` is SYNCHRONIZED (UPLOADING until then; NONE
    before any upload)."""

    uid: str
    name: str
    filesystem_uid: str
    is_removing: bool
    filesystem: str = ""
    access_point: str = ""
    is_writable: bool = False
    locator: str = ""
    stow_status: str = ""
    creation_time: str = ""

    @property
    def uploaded(self) -> bool:
        return bool(self.locator) and self.stow_status == "SYNCHRONIZED"

    @classmethod
    def from_json(cls, data: Any) -> Snapshot:
        # Before 4.x the stow state is only at the top; 4.x and later repeat it per site.
        local = data.get("localStowInfo") or {}
        return cls(
            str(data["uid"]),
            str(data["name"]),
            str(data["filesystemUid"]),
            bool(data.get("isRemoving", False)),
            filesystem=str(data.get("filesystem") or ""),
            access_point=str(data.get("accessPoint") or ""),
            is_writable=bool(data.get("isWritable", False)),
            locator=str(data.get("locator") or local.get("locator") or ""),
            stow_status=str(data.get("stowStatus") or local.get("stowStatus") or ""),
            creation_time=str(data.get("creationTime") or ""),
        )


@dataclass(frozen=True)
class SnapshotUpload:
    """The answer to an upload: the locator by which a filesystem can be made from the snapshot
    (`create_filesystem_from_locator`), on this cluster or any other the bucket is attached to."""

    snapshot_uid: str
    locator: str


@dataclass(frozen=True)
class LocatorInfo:
    """What an object store bucket holds at a locator (`POST /snapshots/locatorInfo`): the
    uploaded snapshot and the filesystem it was of, read from the bucket itself."""

    fs_name: str
    snapshot_name: str
    access_point: str
    cluster_guid: str

    @classmethod
    def from_json(cls, data: Any) -> LocatorInfo:
        return cls(
            str(data["fs_name"]),
            str(data["snapshot_name"]),
            str(data.get("access_point") or ""),
            str(data.get("guid") or ""),
        )


@dataclass(frozen=True)
class Capacity:
    """The cluster's capacity in bytes (`GET /cluster`'s `capacity`): `unprovisioned` is what
    new filesystems, and filesystems that grow, may still take."""

    total: int
    hot_spare: int
    unprovisioned: int

    @classmethod
    def from_json(cls, data: Any) -> Capacity:
        capacity = data["capacity"]
        return cls(
            int(capacity["total_bytes"]),
            int(capacity.get("hot_spare_bytes") or 0),
            int(capacity["unprovisioned_bytes"]),
        )
