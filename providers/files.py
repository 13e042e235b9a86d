"""Two file habits shared by the providers and the sandbox: an exclusive lock held through a
read-modify-write, and a write that readers never see half done."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["exclusive_lock", "write_atomic"]


@contextmanager
def exclusive_lock(lock_file: Path, mode: int = 0o644) -> Iterator[None]:
    """Holds flock(LOCK_EX) on `lock_file` (made with `mode` if missing) until the block ends."""
    fd = os.open(lock_file, os.O_WRONLY | os.O_CREAT, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str, new_file_mode: int = 0o644) -> None:
    """Writes aside, then renames over `path`: a reader, or a kill at any moment, sees the old
    text or the new, never half of either. An existing file keeps its mode; a new one gets
    `new_file_mode`."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else new_file_mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # The rename itself must reach the disk too, or a crash can bring back the old file.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
