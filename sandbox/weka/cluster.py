"""What the emulated cluster does: the rules behind each API call, free of HTTP.

Every operation takes the authenticated `Caller` and sees only the caller's organization, as the
real cluster does. Errors are `ApiError`s carrying the status code and message to answer with.
Directories live on disk, under the mount root (`mounts`); the state keeps their inode ids,
usage and quotas.

The rules live one aggregate per module, each a class on top of those whose rules it uses:
users.py, organizations.py, sessions.py, directories.py, filesystems.py, quotas.py, snapshots.py,
downloads.py and the test-only controls.py, all on core.py. `Cluster` puts them together and
starts the cluster. Where the disk and the object store come in: mounts.py (with archive.py) and
object_store.py.
"""

from __future__ import annotations

import uuid

from sandbox.weka.controls import Controls
from sandbox.weka.downloads import Downloads
from sandbox.weka.sessions import Sessions
from sandbox.weka.store import Org

ROOT_ORG = "Root"


class Cluster(Sessions, Downloads, Controls):
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

    def drop_orphan_snapshots(self) -> list[str]:
        """At start: forget the snapshots whose filesystem is gone, which state files of
        version 2 and older kept (a snapshot lives in its filesystem). Returns their names."""
        gone = [s for s in self.state.snapshots.values() if s.fs_uid not in self.state.filesystems]
        for snap in gone:
            del self.state.snapshots[snap.uid]
        return [f"{snap.fs_name}/{snap.name}" for snap in gone]
