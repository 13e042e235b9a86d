"""Filesystems: their capacity budgets, held within the organization's quotas and the cluster's
capacity, their names, each a directory on the mount, and the object store bucket attached to
them (`POST /fileSystems/{uid}/objectStoreBuckets`, or `obs_name` at create), which makes them
tiered and gives their snapshots somewhere to be uploaded (snapshots.py).

The emulator has one bucket at most (object_store.py), of the `local` site, attached to any
number of filesystems; a real cluster has buckets of both sites and takes two per filesystem.
Tiering itself (data moving to the bucket) is not modelled. Deleting a filesystem leaves what
was uploaded from it in the bucket, unless `purge_from_obs` asks otherwise.
"""

from __future__ import annotations

import uuid

from sandbox.weka.core import Caller, check_name
from sandbox.weka.directories import Directories
from sandbox.weka.errors import ApiError, missing_filesystem
from sandbox.weka.object_store import ObjectStore
from sandbox.weka.organizations import Organizations
from sandbox.weka.store import Directory, FileSystem, Org

# Who may change filesystems, their quotas and their snapshots.
STORAGE_WRITERS = {"ClusterAdmin", "OrgAdmin", "CSI"}
# How a filesystem may use an attached bucket (the API's `obs_mode`).
OBS_MODES = ("READ_ONLY", "WRITABLE")


class Filesystems(Organizations, Directories):
    def fs_used(self, fs: FileSystem) -> int:
        return sum(d.used_bytes for d in fs.directories.values())

    def unprovisioned(self) -> int:
        allocated = sum(fs.total_budget for fs in self.state.filesystems.values())
        return self.capacity_bytes - allocated

    def find_fs(self, caller: Caller, uid: str) -> FileSystem:
        fs = self.state.filesystems.get(uid)
        # Another org's filesystem is reported missing, not forbidden: orgs cannot see each other.
        if fs is None or fs.org_uid != caller.org.uid:
            raise missing_filesystem(uid)
        return self._with_disk(fs)

    def list_fs(self, caller: Caller, name: str | None, group: str | None) -> list[FileSystem]:
        return [
            self._with_disk(fs)
            for fs in self.state.filesystems.values()
            if fs.org_uid == caller.org.uid
            and (name is None or fs.name == name)
            and (group is None or fs.group_name == group)
        ]

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
        obs_name: str | None = None,
    ) -> FileSystem:
        """A new filesystem; with `obs_name`, tiered on that bucket (attached WRITABLE)."""
        self._require(caller, STORAGE_WRITERS, "create filesystems")
        check_name("Filesystem", name)
        if self._fs_by_name(caller.org.uid, name) is not None:
            raise ApiError(409, f"Filesystem {name} already exists")
        ssd_budget = total if ssd is None else ssd
        self._check_budgets(total, ssd_budget)
        self._check_capacity(caller.org, None, total, ssd_budget)
        bucket = None if obs_name is None else self.bucket(obs_name)
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
        if bucket is not None:
            fs.obs_bucket, fs.obs_mode = bucket.name, "WRITABLE"
        self.mounts.create_fs(caller.org.name, name)
        self.state.next_fs_id += 1
        fs.directories["/"] = Directory(self.state.allocate_inode())
        self.state.filesystems[fs.uid] = fs
        return fs

    def bucket(self, name: str) -> ObjectStore:
        """The object store bucket called `name`."""
        if self.object_store is None:
            raise ApiError(
                400, f"Object store bucket {name} not found: the cluster has no object store"
            )
        if name != self.object_store.name:
            raise ApiError(
                400,
                f"Object store bucket {name} not found; the cluster's is {self.object_store.name}",
            )
        return self.object_store

    def attach_object_store(self, caller: Caller, uid: str, obs_name: str, mode: str) -> None:
        """Attaches the bucket to the filesystem, WRITABLE (tiering and uploads) or READ_ONLY."""
        self._require(caller, STORAGE_WRITERS, "attach object stores")
        fs = self.find_fs(caller, uid)
        if mode.upper() not in OBS_MODES:
            raise ApiError(400, f"obs_mode must be one of {', '.join(OBS_MODES)}, not {mode!r}")
        bucket = self.bucket(obs_name)
        if fs.obs_bucket:
            raise ApiError(
                409,
                f"Object store bucket {fs.obs_bucket} is already attached to filesystem {fs.name}",
            )
        fs.obs_bucket, fs.obs_mode = bucket.name, mode.upper()

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
            check_name("Filesystem", new_name)
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
            # Snapshots name their filesystem as it is now (`GET /snapshots?filesystem=`).
            for snap in self.state.snapshots.values():
                if snap.fs_uid == fs.uid:
                    snap.fs_name = fs.name
        fs.total_budget, fs.ssd_budget = new_total, new_ssd
        if auth_required is not None:
            fs.auth_required = auth_required
        return fs

    def delete_fs(self, caller: Caller, uid: str, purge_from_obs: bool = False) -> None:
        """Deletes the filesystem with its snapshots. What was uploaded from it stays in the
        bucket, for a filesystem to be made from later, unless `purge_from_obs`."""
        self._require(caller, STORAGE_WRITERS, "delete filesystems")
        fs = self.find_fs(caller, uid)
        if fs.mounted:
            raise ApiError(400, f"Cannot delete filesystem {fs.name}: filesystem is in use")
        if purge_from_obs and fs.uploads:
            bucket = self.bucket(fs.obs_bucket)
            for locator in list(fs.uploads):
                bucket.purge(locator)
                fs.uploads.remove(locator)
        self.drop_fs(fs)

    def drop_fs(self, fs: FileSystem) -> None:
        """Forgets the filesystem and removes its directory. Its snapshots live in it
        (`.snapshots`): they go with it, records and data."""
        self.mounts.remove_fs(self._org_name(fs), fs.name)
        for snap_uid in [s.uid for s in self.state.snapshots.values() if s.fs_uid == fs.uid]:
            del self.state.snapshots[snap_uid]
        del self.state.filesystems[fs.uid]

    def resolve_path(self, caller: Caller, uid: str, path: str) -> tuple[str, Directory]:
        return self._on_disk(self._usable(self.find_fs(caller, uid)), path)
