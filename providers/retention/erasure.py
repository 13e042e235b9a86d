"""A user's right to erasure, applied to a retained copy of a tenant's files: what the user's
files are, and a directory archive without them.

A user's files are their home directory (`<user>` at the top of the copy: the tenant's home
directories are named after the users, on the tenant's own filesystem and under its directory
on a shared one) and every other file or directory they own (by uid: what they left in
scratch). Everyone else's files stay exactly as they were.

An archive may be terabytes, so it is never held: it is read as gzipped chunks and walked member
by member (`walk`). Each member's raw bytes (its headers, pax records, sparse map and data, as
the mount host's tar wrote them) are passed through unchanged or dropped whole, so what is kept
is byte for byte what was archived, sparse files and hard links included, and only the
compression is redone.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["erased_users", "gzipped", "is_erased", "users_files", "walk", "without_users"]

# What one step of the walk reads or yields at most, compressed or not.
CHUNK = 1 << 20
# Deflate as `gzip -6` does, in the gzip container (the zlib window with 16 added).
_LEVEL, _GZIP = 6, 16 + zlib.MAX_WBITS


def erased_users(value: Any) -> dict[str, int]:
    """The `erased` input: username -> uid (numbers reach a dynamic provider as floats)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{value!r} is not a mapping of username to uid")
    found = {}
    for user, uid in value.items():
        if not isinstance(user, str) or not user or "/" in user or user in (".", ".."):
            raise ValueError(f"{user!r} is not a username")
        if isinstance(uid, bool) or not isinstance(uid, int | float) or uid != int(uid) or uid < 1:
            raise ValueError(f"{user}: {uid!r} is not a uid")
        found[user] = int(uid)
    return found


def is_erased(path: str, uid: int, users: Mapping[str, int]) -> bool:
    """Whether the member at `path` (relative to the copy's top, `./` or not) owned by `uid` is
    an erased user's."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    return uid in users.values() or (bool(parts) and parts[0] in users)


def users_files(archive: Iterable[bytes], users: Mapping[str, int]) -> list[str]:
    """The members of the gzipped tar `archive` (its chunks) that `users` own: those
    `without_users` leaves out, found by the same walk with nothing compressed again."""
    found: list[str] = []
    for _ in walk(_gunzipped(archive), _keeper(users, found)):
        pass
    return found


def without_users(
    archive: Iterable[bytes], users: Mapping[str, int], removed: list[str]
) -> Iterator[bytes]:
    """The gzipped tar `archive` (its chunks) without the members `users` own, gzipped again,
    as chunks; the names of the members left out are added to `removed`."""
    return gzipped(walk(_gunzipped(archive), _keeper(users, removed)))


def _keeper(users: Mapping[str, int], removed: list[str]) -> Callable[[tarfile.TarInfo], bool]:
    """Whether a member stays, for `walk`; the names of those that do not go to `removed`."""
    left_out: set[str] = set()

    def keep(member: tarfile.TarInfo) -> bool:
        # A hard link's data is its target's: one into a file left out goes with it.
        if is_erased(member.name, member.uid, users) or member.linkname in left_out:
            removed.append(member.name)
            left_out.add(member.name)
            return False
        return True

    return keep


def walk(tar: Iterable[bytes], keep: Callable[[tarfile.TarInfo], bool]) -> Iterator[bytes]:
    """The raw bytes of an uncompressed tar stream, given as chunks, less the members `keep`
    refuses; what follows the last member (the end blocks) is kept."""
    source = _Source(iter(tar))
    # Not the stream mode ("r|"): that one reads ahead and skips members' data itself. Here
    # tarfile only ever reads headers, and the data between them passes through this loop.
    with tarfile.open(fileobj=source, mode="r:") as reader:  # type: ignore[call-overload]
        while (member := reader.next()) is not None:
            # A TarFile remembers every member it read; a copy of millions of files must not.
            reader.members.clear()
            kept = keep(member)
            headers = source.take()
            if kept:
                yield headers
            yield from source.through(reader.offset, kept)
    yield source.take()
    yield from source.through(None, True)


def gzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` compressed into one gzip stream."""
    compressor = zlib.compressobj(_LEVEL, zlib.DEFLATED, _GZIP)
    for chunk in chunks:
        if out := compressor.compress(chunk):
            yield out
    yield compressor.flush()


def _gunzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The content of a gzip stream given as chunks, in pieces of at most CHUNK bytes (a
    chunk of zeros decompresses to a thousand times its size)."""
    decompressor = zlib.decompressobj(_GZIP)
    for chunk in chunks:
        pending = chunk
        while pending:
            yield decompressor.decompress(pending, CHUNK)
            pending = decompressor.unconsumed_tail
    if tail := decompressor.flush():
        yield tail
    if not decompressor.eof:
        raise tarfile.ReadError("the archive ends before its gzip stream does: it is truncated")


class _Source:
    """The tar stream as the file tarfile reads its headers from: a forward-only reader that
    keeps what tarfile read since the last `take`, and lets the loop above move the data
    between headers without tarfile (`through`)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = memoryview(b"")
        self._read = bytearray()
        self._position = 0

    def tell(self) -> int:
        return self._position

    def seek(self, position: int, whence: int = 0) -> int:
        if whence != 0 or position != self._position:
            raise tarfile.ReadError(f"tar stream: cannot move from {self._position} to {position}")
        return position

    def read(self, size: int = -1) -> bytes:
        out = bytearray()
        while size < 0 or len(out) < size:
            piece = self._next(CHUNK if size < 0 else size - len(out))
            if not piece:
                break
            out += piece
        self._read += out
        return bytes(out)

    def take(self) -> bytes:
        """What tarfile read since the last call."""
        taken, self._read = bytes(self._read), bytearray()
        return taken

    def through(self, end: int | None, kept: bool) -> Iterator[bytes]:
        """The bytes up to offset `end` (None: the end of the stream), yielded if `kept`."""
        while end is None or self._position < end:
            piece = self._next(CHUNK if end is None else min(CHUNK, end - self._position))
            if not piece:
                if end is not None:
                    raise tarfile.ReadError("the archive ends inside a member: it is truncated")
                return
            if kept:
                yield piece

    def _next(self, size: int) -> bytes:
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return b""
            self._buffer = memoryview(chunk)
        piece, self._buffer = self._buffer[:size], self._buffer[size:]
        self._position += len(piece)
        return bytes(piece)
