"""Tar streams of a directory tree that keep what a snapshot keeps: numeric owners, modes (the
setuid, setgid and sticky bits included), modification times, symbolic links as links, hard
links, named pipes and empty directories.

The emulator packs a filesystem to copy it into a snapshot, packs a snapshot to upload it, and
unpacks a downloaded one into a new filesystem. Each goes as a stream of chunks, made while they
are read and unpacked as they come, so a tree of any size passes through a few megabytes of
memory and no temporary file. The tree's root is the member `.`, so unpacking
gives the target directory the root's owner and mode too. Owners come back only when the
emulator runs as root (as with GNU tar); otherwise files belong to the emulator's user.

Unpacking refuses what would reach outside the target (absolute names, `..`, a write through a
symbolic link that leads out, a hard link to a file outside) and device files. It does not use
tarfile's `data` or `tar` filters: they drop owners or clear the setgid bit that a tenant's
scratch directory carries (2770), and a snapshot must come back as it was taken. A symbolic
link's own target is kept as written, absolute or not: it is data, followed by no one here.
"""

from __future__ import annotations

import io
import os
import tarfile
import threading
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import BinaryIO

ROOT_MEMBER = "."
CHUNK = 1 << 20


class UnsafeArchiveError(ValueError):
    """A member of the archive would land outside the target directory, or is a device."""


def pack(source: Path, into: BinaryIO, skip: str | None = None) -> None:
    """Writes the tree under `source` to `into` as a tar stream. `skip` names an entry of
    `source` left out with everything under it (a filesystem's `.snapshots`)."""

    def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if skip is not None and os.path.normpath(member.name) == skip:
            return None
        return member

    # PAX: long names, large uid/gid numbers and sub-second times survive. A stream ("w|"):
    # `into` may be a pipe, which cannot tell where it is.
    with tarfile.open(fileobj=into, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        tar.add(source, arcname=ROOT_MEMBER, recursive=True, filter=keep)


def packed(source: Path, skip: str | None = None) -> Generator[bytes, None, None]:
    """The tar stream `pack` writes, in chunks of up to CHUNK bytes made as they are read: a
    thread packs into a pipe. A failure to pack is raised by the iterator after the bytes made
    before it, so no reader takes a cut stream for a whole one. A reader that stops early
    closes the pipe, and the packing stops at its next write."""
    readable, writable = os.pipe()
    failed: list[BaseException] = []

    def write() -> None:
        try:
            with open(writable, "wb") as pipe:
                pack(source, pipe, skip)
        except BaseException as error:  # handed to the reader, which raises it
            failed.append(error)

    writer = threading.Thread(target=write, name=f"pack {source}", daemon=True)
    writer.start()
    try:
        with open(readable, "rb") as pipe:
            while chunk := pipe.read(CHUNK):
                yield chunk
    finally:
        writer.join()
    if failed:
        raise failed[0]


def unpack(chunks: Iterable[bytes], target: Path) -> None:
    """Recreates in `target` (an empty directory, made if missing) the tree `pack` wrote,
    reading the stream `chunks` once, as it comes."""
    target.mkdir(parents=True, exist_ok=True)
    base = os.path.realpath(target)
    reader = _Reader(chunks)
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        # The check runs for each member just before it is extracted, so it sees the links
        # that the members before it made.
        tar.extractall(base, numeric_owner=True, filter=lambda m, _: _inside(m, base))
    # tarfile stops at the end-of-archive blocks; the stream's end is read too, so that a
    # failure of its maker after them still fails the unpacking.
    reader.drain()


class _Reader(io.RawIOBase):
    """Chunks of bytes as a file that reads forward, for tarfile."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = memoryview(chunk)
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size

    def drain(self) -> None:
        for _ in self._chunks:
            pass


def _inside(member: tarfile.TarInfo, base: str) -> tarfile.TarInfo:
    name = member.name
    if os.path.isabs(name) or ".." in Path(name).parts:
        raise UnsafeArchiveError(f"member {name!r} has an absolute name or '..' in it")
    if not _within(os.path.realpath(os.path.join(base, name)), base):
        raise UnsafeArchiveError(f"member {name!r} would be written through a link that leads out")
    if member.islnk() and not _within(os.path.realpath(os.path.join(base, member.linkname)), base):
        raise UnsafeArchiveError(f"hard link {name!r} names {member.linkname!r}, outside the tree")
    if member.ischr() or member.isblk():
        raise UnsafeArchiveError(f"member {name!r} is a device file")
    return member


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base + os.sep)
