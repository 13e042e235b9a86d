"""The emulated filesystems as real directories, as a host that mounts every filesystem sees them.

Filesystem F of organization O is the directory `<mount root>/O/F` (Root's under `<root>/Root/F`),
so a plain `mkdir` there is what makes a directory, as through a wekafs mount on a real cluster
(whose REST API has no call that creates one). The emulator makes, renames and removes these
directories with the filesystems and organizations; everything inside belongs to whoever mounts.

Inode ids are the emulator's own, allocated in the state, not the disk's `st_ino`: a directory
found on disk is registered by its path, with its parents, the first time a call names it, and an
entry whose directory is gone from the disk is forgotten with its quota and usage when its
filesystem is next used. The disk's numbers would follow a `mv` inside the mount, but ext4 gives a
removed directory's number to the next one made, which would hand a dropped quota to a new
directory, and other filesystems (overlayfs) use numbers beyond the 2**53 that JSON clients read
exactly. So a directory renamed inside the mount counts as removed and made anew (the real
cluster keeps its inode and quota), and one removed and made again between two calls on its
filesystem keeps its id and quota (the real cluster drops them).

A filesystem's snapshots are directories in it too, `.snapshots/<access point>`, where a real
cluster shows them (hidden from `ls` there, a plain dot-directory here). Taking one copies the
filesystem as it is, less its `.snapshots`, through a tar stream in a pipe (archive.py) that
keeps owners, modes and times: a real point-in-time copy, where Weka shares unchanged blocks.
Nothing makes the copy read-only, as a real read-only snapshot is; writes into it are the
writer's business.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sandbox.weka import archive
from sandbox.weka.errors import ApiError

DIRECTORY_MODE = 0o755
SNAPSHOTS = ".snapshots"


@contextmanager
def _disk(doing: str) -> Iterator[None]:
    """A failed disk operation answers 500 naming what it was doing, like any emulator fault."""
    try:
        yield
    except (OSError, tarfile.TarError, archive.UnsafeArchiveError) as error:
        says = getattr(error, "strerror", None) or error
        raise ApiError(500, f"Mount error {doing}: {says}") from error


def _disk_stream(doing: str, chunks: Iterator[bytes]) -> Iterator[bytes]:
    with _disk(doing):
        yield from chunks


def _make(path: Path) -> None:
    """mkdir, with mode 0755 whatever the umask, and the organization's directory above it."""
    for directory in (path.parent, path):
        if not directory.is_dir():
            directory.mkdir(mode=DIRECTORY_MODE)
            os.chmod(directory, DIRECTORY_MODE)


def _remove(path: Path) -> None:
    """rm -rf `path`, which may be missing."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def _make_fresh(path: Path) -> None:
    """An empty directory at `path`: what a wiped state or a crash left under the name goes."""
    _remove(path)
    _make(path)


class Mounts:
    """The mount root and the filesystems' directories under it. Every method expects valid
    organization and filesystem names (a single path component each: see `core.check_name`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        with _disk(f"creating the mount root {root}"):
            root.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)

    def fs_dir(self, org: str, fs: str) -> Path:
        return self.root / org / fs

    def create_fs(self, org: str, fs: str) -> None:
        with _disk(f"creating {self.fs_dir(org, fs)}"):
            _make_fresh(self.fs_dir(org, fs))

    def ensure_fs(self, org: str, fs: str) -> None:
        """mkdir -p of the filesystem's directory: a filesystem always has its root, even after
        someone removed the directory by hand."""
        path = self.fs_dir(org, fs)
        with _disk(f"creating {path}"):
            _make(path)

    def rename_fs(self, org: str, old: str, new: str) -> None:
        source, target = self.fs_dir(org, old), self.fs_dir(org, new)
        with _disk(f"renaming {source} to {target}"):
            _make_fresh(target)
            source.replace(target)

    def rename_org(self, old: str, new: str) -> None:
        source, target = self.root / old, self.root / new
        # An organization without filesystems may have no directory yet.
        if not source.is_dir():
            return
        with _disk(f"renaming {source} to {target}"):
            _make_fresh(target)
            source.replace(target)

    def remove_fs(self, org: str, fs: str) -> None:
        path = self.fs_dir(org, fs)
        if path.is_dir():
            with _disk(f"removing {path}"):
                shutil.rmtree(path)

    def snapshot_dir(self, org: str, fs: str, access_point: str) -> Path:
        return self.fs_dir(org, fs) / SNAPSHOTS / access_point

    def take_snapshot(self, org: str, fs: str, access_point: str) -> None:
        """Copies the filesystem as it is now, less its snapshots, to `.snapshots/<access
        point>`. The copy is made beside it and renamed into place, so a failed one leaves no
        snapshot behind; what a lost state left under the name is replaced."""
        area = self.fs_dir(org, fs) / SNAPSHOTS
        target, partial = area / access_point, area / f".{access_point}.partial"
        with _disk(f"copying filesystem {fs} to {target}"):
            _make(area)
            _remove(partial)
            try:
                archive.unpack(archive.packed(self.fs_dir(org, fs), skip=SNAPSHOTS), partial)
                _remove(target)
                partial.replace(target)
            finally:
                _remove(partial)

    def rename_snapshot(self, org: str, fs: str, old: str, new: str) -> None:
        source, target = self.snapshot_dir(org, fs, old), self.snapshot_dir(org, fs, new)
        if source.is_dir():
            with _disk(f"renaming {source} to {target}"):
                _remove(target)
                source.replace(target)

    def remove_snapshot(self, org: str, fs: str, access_point: str) -> None:
        path = self.snapshot_dir(org, fs, access_point)
        with _disk(f"removing {path}"):
            _remove(path)

    def packed_snapshot(self, org: str, fs: str, access_point: str) -> Iterator[bytes]:
        """The snapshot's tree as a tar stream, made as it is read; 500 at once when its
        directory is gone from the mount (removed by hand, or the snapshot was taken by an
        emulator that made no copies), and from the stream when reading fails."""
        path = self.snapshot_dir(org, fs, access_point)
        if not path.is_dir() or path.is_symlink():
            raise ApiError(
                500,
                f"Snapshot data missing: {path} is not on the mount; delete the snapshot and "
                "take a new one",
            )
        return _disk_stream(f"reading {path}", archive.packed(path))

    def restore_fs(self, org: str, fs: str, chunks: Iterable[bytes]) -> None:
        """Unpacks a snapshot's tar stream into the filesystem's (new, empty) directory."""
        path = self.fs_dir(org, fs)
        with _disk(f"restoring a snapshot into {path}"):
            archive.unpack(chunks, path)

    def remove_org(self, org: str) -> None:
        path = self.root / org
        if path.is_dir():
            with _disk(f"removing {path}"):
                path.rmdir()

    def resolve(self, org: str, fs: str, path: str) -> str:
        """The directory's canonical path in the filesystem (symbolic links followed), whether
        or not it exists. `path` is absolute and normalized; a link that leads out is refused."""
        base = os.path.realpath(self.fs_dir(org, fs))
        target = os.path.realpath(os.path.join(base, path.lstrip("/")))
        if target == base:
            return "/"
        if not target.startswith(base + os.sep):
            raise ApiError(
                400, f"Path {path} leads outside filesystem {fs} through a symbolic link"
            )
        return "/" + os.path.relpath(target, base)

    def is_directory(self, org: str, fs: str, canonical: str) -> bool:
        """Whether `canonical` is a directory, reached with no symbolic link on the way."""
        base = os.path.realpath(self.fs_dir(org, fs))
        full = os.path.normpath(os.path.join(base, canonical.lstrip("/")))
        return os.path.isdir(full) and os.path.realpath(full) == full

    def make_directories(self, org: str, fs: str, path: str) -> str:
        """mkdir -p, as on a mount; returns the canonical path made."""
        canonical = self.resolve(org, fs, path)
        base = os.path.realpath(self.fs_dir(org, fs))
        try:
            # `resolve` followed every existing link: what is left to make lies inside.
            os.makedirs(os.path.join(base, canonical.lstrip("/")), DIRECTORY_MODE, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as error:
            raise ApiError(
                400, f"Cannot create {path} in filesystem {fs}: a file is in the way"
            ) from error
        except OSError as error:
            raise ApiError(
                500, f"Mount error creating {path} in filesystem {fs}: {error.strerror}"
            ) from error
        return canonical
