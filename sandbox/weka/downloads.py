"""Filesystems made from uploaded snapshots (`POST /fileSystems/download`, `weka fs download`),
and what a locator names (`POST /snapshots/locatorInfo`): how a retained copy is read back once
its filesystem is gone.

A download makes a new filesystem, tiered on the bucket it came from, whose directory holds the
snapshot's files (owners and modes as the tar kept them), and which holds the snapshot itself,
under its uploaded name and access point unless others are given. The emulator counts usage per
directory (controls.py): the new filesystem gets the usage the snapshot had. A real cluster
answers at once and fetches in the background (`is_creating`); the emulator answers once the
files are there. Quotas are not restored.
"""

from __future__ import annotations

from typing import Any

from sandbox.weka.core import Caller, check_name
from sandbox.weka.errors import ApiError
from sandbox.weka.filesystems import STORAGE_WRITERS
from sandbox.weka.object_store import ObjectStore, check_locator
from sandbox.weka.snapshots import Snapshots
from sandbox.weka.store import FileSystem


class Downloads(Snapshots):
    def uploaded(self, bucket: ObjectStore, locator: str) -> dict[str, Any]:
        """The manifest of the snapshot uploaded at `locator`."""
        check_locator(locator)
        uploading = (s for s in self.state.snapshots.values() if s.locator == locator)
        if any(self.background.pending(("upload", s.uid)) for s in uploading):
            raise ApiError(400, f"Locator {locator} is not synchronized yet: its upload goes on")
        manifest = bucket.manifest(locator)
        if manifest is None:
            raise ApiError(400, f"Locator {locator} not found in object store bucket {bucket.name}")
        return manifest

    def locator_info(self, caller: Caller, obs_name: str, locator: str) -> dict[str, Any]:
        return self.uploaded(self.bucket(obs_name), locator)

    def download_fs(
        self,
        caller: Caller,
        name: str,
        group_name: str,
        total: int,
        ssd: int,
        obs_name: str,
        locator: str,
        snapshot_name: str | None,
        access_point: str | None,
        auth_required: bool,
    ) -> FileSystem:
        self._require(caller, STORAGE_WRITERS, "download filesystems")
        bucket = self.bucket(obs_name)
        manifest = self.uploaded(bucket, locator)
        point = access_point or str(manifest["access_point"])
        check_name("Access point", point)
        usage = {str(path): int(used) for path, used in dict(manifest["usage"]).items()}
        if sum(usage.values()) > total:
            raise ApiError(
                400,
                f"Cannot download {locator} into {total} bytes: the snapshot holds "
                f"{sum(usage.values())} bytes",
            )
        fs = self.create_fs(
            caller,
            name,
            group_name,
            total,
            ssd,
            auth_required,
            bool(manifest["is_encrypted"]),
            obs_name=bucket.name,
        )
        try:
            self._restore(fs, bucket, locator, usage)
            snap = self.create_snapshot(
                caller, fs.uid, snapshot_name or str(manifest["snapshot_name"]), point, False
            )
        except ApiError:
            # A failed download leaves no filesystem behind.
            self.drop_fs(fs)
            raise
        # The snapshot is the uploaded one: uploading it again has nothing to do.
        snap.locator = locator
        return fs

    def _restore(
        self, fs: FileSystem, bucket: ObjectStore, locator: str, usage: dict[str, int]
    ) -> None:
        org = self._org_name(fs)
        self.mounts.restore_fs(org, fs.name, bucket.data(locator))
        for path, used in usage.items():
            if self.mounts.is_directory(org, fs.name, path):
                self._on_disk(fs, path)[1].used_bytes = used
