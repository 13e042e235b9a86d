"""The directories of a filesystem as the API knows them: given an inode id when a call first
names one found on disk, forgotten once the disk no longer has it (mounts.py says why the ids are
the emulator's own and not the disk's).
"""

from __future__ import annotations

import posixpath

from sandbox.weka.core import Core
from sandbox.weka.errors import ApiError
from sandbox.weka.store import Directory, FileSystem


def normalize_path(path: str) -> str:
    if not path.startswith("/"):
        raise ApiError(400, f"Path must be absolute: {path!r}")
    if ".." in path.split("/"):
        raise ApiError(400, f"Path must not contain '..': {path!r}")
    return "/" + posixpath.normpath(path).lstrip("/") if path.strip("/") else "/"


class Directories(Core):
    def _org_name(self, fs: FileSystem) -> str:
        return self.state.orgs[fs.org_uid].name

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

    def _on_disk(self, fs: FileSystem, path: str) -> tuple[str, Directory]:
        """The directory at `path` on disk, registered (parents first) when first named."""
        path = normalize_path(path)
        org = self._org_name(fs)
        canonical = self.mounts.resolve(org, fs.name, path)
        if not self.mounts.is_directory(org, fs.name, canonical):
            raise ApiError(400, f"PATH_NOT_FOUND: {path} does not exist in filesystem {fs.name}")
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
