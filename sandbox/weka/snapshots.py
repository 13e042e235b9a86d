"""Snapshots: copies of a filesystem as it was, named and reached through an access point, the
directory `.snapshots/<access point>` of the filesystem (mounts.py). A snapshot lives inside its
filesystem and takes its space from it, so deleting the filesystem deletes its snapshots; only an
uploaded copy outlives it.

Uploading (Snap-To-Object, `POST /snapshots/{uid}/upload`) writes the snapshot to the object
store bucket attached to its filesystem (object_store.py), and only then gives it its locator,
by which a filesystem can be made from it later, on this cluster or another (downloads.py). A
real cluster answers at once and uploads in the background (`stowStatus` UPLOADING, then
SYNCHRONIZED); the emulator answers when the upload is done, holding every other call until
then, so a snapshot it reports with a locator is always SYNCHRONIZED.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from sandbox.weka.core import Caller, check_name
from sandbox.weka.errors import ApiError
from sandbox.weka.filesystems import STORAGE_WRITERS, Filesystems
from sandbox.weka.object_store import MANIFEST_FORMAT
from sandbox.weka.store import FileSystem, Snapshot

OBS_SITES = {"LOCAL", "REMOTE"}


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Snapshots(Filesystems):
    def find_snapshot(self, caller: Caller, uid: str) -> Snapshot:
        snap = self.state.snapshots.get(uid)
        if snap is None or snap.org_uid != caller.org.uid:
            raise ApiError(400, f"Snapshot {uid} does not exist", "SnapshotDoesNotExistException")
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
        fs = self._usable(self.find_fs(caller, fs_uid))
        if not name:
            raise ApiError(400, "Snapshot name is required")
        point = access_point or time.strftime("@GMT-%Y.%m.%d-%H.%M.%S", time.gmtime())
        # The access point is a directory of the filesystem: one path component.
        check_name("Access point", point)
        self._check_snapshot_unique(fs.uid, name, point, "")
        self.mounts.take_snapshot(self._org_name(fs), fs.name, point)
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
            usage={p: d.used_bytes for p, d in fs.directories.items() if d.used_bytes},
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
        check_name("Access point", point)
        self._check_snapshot_unique(snap.fs_uid, name, point, snap.uid)
        if point != snap.access_point:
            fs = self.state.filesystems[snap.fs_uid]
            self.mounts.rename_snapshot(self._org_name(fs), fs.name, snap.access_point, point)
        snap.name, snap.access_point = name, point
        if writable is not None:
            snap.is_writable = writable
        return snap

    def delete_snapshot(self, caller: Caller, uid: str) -> None:
        self._require(caller, STORAGE_WRITERS, "delete snapshots")
        snap = self.find_snapshot(caller, uid)
        fs = self.state.filesystems[snap.fs_uid]
        self.mounts.remove_snapshot(self._org_name(fs), fs.name, snap.access_point)
        del self.state.snapshots[snap.uid]

    def upload_snapshot(self, caller: Caller, uid: str, obs_site: str) -> Snapshot:
        self._require(caller, STORAGE_WRITERS, "upload snapshots")
        snap = self.find_snapshot(caller, uid)
        site = obs_site.upper()
        if site not in OBS_SITES:
            raise ApiError(400, f"obs_site must be one of {', '.join(sorted(OBS_SITES))}")
        fs = self.state.filesystems[snap.fs_uid]
        if not fs.obs_bucket:
            # The words snaptool (github.com/weka/snaptool) matches in the real answer.
            raise ApiError(400, f"Filesystem {fs.name} is not tiered: cannot upload from it")
        if site == "REMOTE":
            raise ApiError(400, f"Filesystem {fs.name} has no REMOTE object store bucket attached")
        if fs.obs_mode != "WRITABLE":
            raise ApiError(
                400,
                f"Object store bucket {fs.obs_bucket} is attached to filesystem {fs.name} "
                f"{fs.obs_mode}: cannot upload to it",
            )
        if snap.is_writable:
            raise ApiError(
                400, f"Only read-only snapshots can be uploaded: {snap.name} is writable"
            )
        if snap.locator:
            raise ApiError(409, f"Snapshot {snap.name} is already uploaded: {snap.locator}")
        bucket = self.bucket(fs.obs_bucket)
        number = snap.id.removeprefix("SnapshotId<").removesuffix(">")
        # The shape of a real locator: "59c2ddf9/d/s/16/spec/b365-4e7a-b924-b2f0956b7f9c".
        tail = str(uuid.uuid4()).split("-", 1)[1]
        locator = f"{self.state.cluster_guid[:8]}/d/s/{number}/spec/{tail}"
        data = self.mounts.packed_snapshot(self._org_name(fs), fs.name, snap.access_point)
        bucket.put(locator, data, self._manifest(snap, fs, locator))
        snap.locator = locator
        fs.uploads.append(locator)
        return snap

    def _manifest(self, snap: Snapshot, fs: FileSystem, locator: str) -> dict[str, Any]:
        """What the bucket keeps beside the data: the fields of `locatorInfo`, and the usage the
        emulator counted per directory, which a download gives the new filesystem."""
        return {
            "format": MANIFEST_FORMAT,
            "locator": locator,
            "guid": self.state.cluster_guid,
            "fs_name": fs.name,
            "fs_uid": fs.uid,
            "fs_total_capacity": fs.total_budget,
            "fs_ssd_capacity": fs.ssd_budget,
            "is_encrypted": fs.encrypted,
            "snapshot_name": snap.name,
            "snap_view_id": snap.id,
            "access_point": snap.access_point,
            "creation_time": snap.creation_time,
            "usage": snap.usage,
        }
