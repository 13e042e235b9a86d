"""The emulated cluster's state and its persistence as one JSON file."""

from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sandbox.state_file import write_json_atomically

STATE_FILE = "weka-state.json"
# Version 2: directories are real directories under the mount root (see mounts.py); version 1
# kept them in the state only. Version 3: a snapshot is a copy on the mount and goes with its
# filesystem; versions 1 and 2 kept snapshots of deleted filesystems, which start-up drops
# (`Cluster.drop_orphan_snapshots`). Older versions are read as they stand.
STATE_VERSION = 3
READABLE_VERSIONS = (1, 2, STATE_VERSION)


@dataclass
class Org:
    uid: str
    id: int
    name: str
    ssd_quota: int = 0
    total_quota: int = 0


@dataclass
class User:
    uid: str
    org_uid: str
    username: str
    role: str
    password_hash: str
    posix_uid: int | None = None
    posix_gid: int | None = None


@dataclass
class Directory:
    """A directory of a filesystem, registered when an API call first names it; whether it
    exists is the disk's to say."""

    inode_id: int
    # Bytes written directly in this directory; quotas add up a whole subtree.
    used_bytes: int = 0


@dataclass
class Quota:
    hard_limit_bytes: int
    soft_limit_bytes: int
    grace_seconds: int
    owner: str
    # When usage first went over the soft limit: the grace period counts from here.
    soft_exceeded_since: float | None = None


@dataclass
class FileSystem:
    uid: str
    id: str
    org_uid: str
    name: str
    group_name: str
    total_budget: int
    ssd_budget: int
    auth_required: bool
    encrypted: bool
    mounted: bool = False
    # The object store bucket attached to it (by name; "" for none) and how (WRITABLE or
    # READ_ONLY), and the locators of the snapshots uploaded from it, which `purge_from_obs`
    # removes from the bucket.
    obs_bucket: str = ""
    obs_mode: str = ""
    uploads: list[str] = field(default_factory=list)
    # By absolute canonical path (no symbolic link in it), "/" always present.
    directories: dict[str, Directory] = field(default_factory=dict)
    quotas: dict[str, Quota] = field(default_factory=dict)  # by str(inode_id)


@dataclass
class Snapshot:
    uid: str
    id: str
    org_uid: str
    name: str
    access_point: str
    fs_uid: str
    fs_id: str
    fs_name: str
    is_writable: bool
    creation_time: str
    # What the filesystem held when the snapshot was taken (its data is in `.snapshots`), in
    # all and by directory, as the emulator counts usage (controls.py).
    size_bytes: int = 0
    locator: str = ""
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class Token:
    kind: str  # "access" or "refresh"
    user_uid: str
    expires_at: float


@dataclass
class State:
    cluster_guid: str = field(default_factory=lambda: str(uuid.uuid4()))
    orgs: dict[str, Org] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)
    filesystems: dict[str, FileSystem] = field(default_factory=dict)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    # Keyed by a hash of the token, so the file never holds a usable bearer token.
    tokens: dict[str, Token] = field(default_factory=dict)
    next_org_id: int = 1
    next_fs_id: int = 0
    next_snapshot_id: int = 0
    # Inode ids stay below 2**53 so that JSON clients in any language read them exactly.
    next_inode: int = 1000

    def allocate_inode(self) -> int:
        self.next_inode += 1
        return self.next_inode


def _state_from_json(raw: dict[str, Any]) -> State:
    def filesystem(d: dict[str, Any]) -> FileSystem:
        dirs = {p: Directory(**v) for p, v in d.pop("directories").items()}
        quotas = {i: Quota(**v) for i, v in d.pop("quotas").items()}
        return FileSystem(**d, directories=dirs, quotas=quotas)

    return State(
        cluster_guid=raw["cluster_guid"],
        orgs={k: Org(**v) for k, v in raw["orgs"].items()},
        users={k: User(**v) for k, v in raw["users"].items()},
        filesystems={k: filesystem(v) for k, v in raw["filesystems"].items()},
        snapshots={k: Snapshot(**v) for k, v in raw["snapshots"].items()},
        tokens={k: Token(**v) for k, v in raw["tokens"].items()},
        next_org_id=raw["next_org_id"],
        next_fs_id=raw["next_fs_id"],
        next_snapshot_id=raw["next_snapshot_id"],
        next_inode=raw["next_inode"],
    )


class Store:
    """Holds the state behind one lock and writes it to disk after every change.

    Requests are served one at a time under `lock`: the emulator is small, and a single lock
    keeps every check-then-act (capacity, uniqueness) trivially atomic.
    """

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / STATE_FILE
        self.lock = threading.Lock()
        state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(state_dir, 0o700)
        # The version of the file as read: what start-up has to bring up to date.
        self.loaded_version = STATE_VERSION
        if self.path.exists():
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("version") not in READABLE_VERSIONS:
                raise SystemExit(f"{self.path}: unsupported state version {raw.get('version')}")
            self.loaded_version = raw["version"]
            self.state = _state_from_json(raw)
        else:
            self.state = State()

    def save(self) -> None:
        """Replace the state file atomically, so a kill at any moment leaves old or new state."""
        write_json_atomically(self.path, {"version": STATE_VERSION, **asdict(self.state)})
