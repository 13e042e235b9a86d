"""Test-only controls: what a client does through a mount on a real cluster (make directories,
write data, hold a filesystem mounted), for which the REST API has no call. Served under
`/api/v2/_emulator/` to a Root cluster admin only, they see every organization's filesystems.
"""

from __future__ import annotations

from sandbox.weka.directories import normalize_path
from sandbox.weka.errors import ApiError, missing_filesystem
from sandbox.weka.quotas import Quotas
from sandbox.weka.store import Directory, FileSystem


class Controls(Quotas):
    def any_fs(self, uid: str) -> FileSystem:
        fs = self.state.filesystems.get(uid)
        if fs is None:
            raise missing_filesystem(uid)
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

    def set_mounted(self, uid: str, mounted: bool) -> FileSystem:
        fs = self.any_fs(uid)
        fs.mounted = mounted
        return fs
