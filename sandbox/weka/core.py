"""What every part of the emulated cluster works on: the state, tokens, capacity, mounts and
object store bucket, and the caller each operation answers to.

The cluster's rules are split one aggregate per module, each a class on top of `Core` and of the
parts whose rules it uses, so that a rule reaching across aggregates (deleting an organization
takes its users) stays a plain method call; `Cluster` (cluster.py) puts them all together.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.weka.background import Background
from sandbox.weka.errors import ApiError
from sandbox.weka.mounts import Mounts
from sandbox.weka.object_store import ObjectStore
from sandbox.weka.store import FileSystem, Org, State, User
from sandbox.weka.tokens import Tokens


@dataclass(frozen=True)
class Caller:
    user: User
    org: Org


def check_name(kind: str, name: str) -> None:
    """Names are directories under the mount root: one path component each."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ApiError(
            400, f"{kind} name {name!r} is not valid: give one directory name, without '/'"
        )


class Core:
    def __init__(
        self,
        state: State,
        tokens: Tokens,
        capacity_bytes: int,
        mounts: Mounts,
        object_store: ObjectStore | None = None,
    ) -> None:
        self.state = state
        self.tokens = tokens
        self.capacity_bytes = capacity_bytes
        self.mounts = mounts
        # The cluster's one object store bucket, or None: Snap-To-Object then has nowhere to go.
        self.object_store = object_store
        # Set when a call registers or forgets directories found on disk, so that even a GET
        # saves the state (an inode id handed out must survive a restart).
        self.directories_changed = False
        # What the real cluster would still be doing after its answer (background.py).
        self.background = Background()

    def _usable(self, fs: FileSystem) -> FileSystem:
        """The filesystem, once the cluster has finished making it (`is_ready`)."""
        if self.background.pending(("fs", fs.uid)):
            raise ApiError(400, f"Filesystem {fs.name} is not ready yet (is_ready is false)")
        return fs

    def _require(self, caller: Caller, roles: set[str], action: str) -> None:
        if caller.user.role not in roles:
            raise ApiError(403, f"Role {caller.user.role} is not allowed to {action}")
