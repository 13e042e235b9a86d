"""A tenant's directory tree as production has them, for archive and restore tests: several
owners and modes, many small files, some large ones, a sparse file and hard links; and its
manifest, what must come back identical (content digests, owners, modes, times, links, holes)."""

from __future__ import annotations

import hashlib
import os
import random
import stat
from pathlib import Path
from typing import Any

SMALL_FILES = 400
LARGE_FILE = 16 << 20
SPARSE_SIZE = 1 << 30


def make_tree(top: Path, owners: dict[str, tuple[int, int]]) -> None:
    """Under `top`, per owner (name -> uid, gid): small files of varied modes, two large files,
    hard links between them; one sparse file of SPARSE_SIZE holding two extents of data."""
    chance = random.Random(27)
    for index, (name, (uid, gid)) in enumerate(sorted(owners.items())):
        home = top / name
        (home / "runs").mkdir(parents=True)
        for n in range(SMALL_FILES // len(owners)):
            path = home / "runs" / f"step-{n:04}.log"
            path.write_bytes(chance.randbytes(chance.randrange(1, 20_000)))
            path.chmod(chance.choice([0o600, 0o640, 0o644, 0o755]))
            os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
        for n in range(2):
            (home / f"weights-{n}.pt").write_bytes(os.urandom(LARGE_FILE))
        os.link(home / "weights-0.pt", home / "runs" / "best.pt")
        (home / "latest").symlink_to("weights-1.pt")
        if index == 0:
            with (home / "volume.img").open("wb") as sparse:
                sparse.truncate(SPARSE_SIZE)
                for at in (4096, SPARSE_SIZE // 2):
                    sparse.seek(at)
                    sparse.write(os.urandom(8192))
        for path in [home, *home.rglob("*")]:
            os.lchown(path, uid, gid)
        (home / "runs").chmod(0o2770)
        home.chmod(0o700)


def manifest(top: Path) -> dict[str, tuple[Any, ...]]:
    """Each path under `top` (relative) as what a restore must give back."""
    inodes: dict[int, list[str]] = {}
    found: dict[str, tuple[Any, ...]] = {}
    for path in sorted(top.rglob("*")):
        info = path.lstat()
        name = str(path.relative_to(top))
        owner = (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode))
        if stat.S_ISLNK(info.st_mode):
            found[name] = ("link", *owner, os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            found[name] = ("dir", *owner)
        else:
            inodes.setdefault(info.st_ino, []).append(name)
            holes = info.st_blocks * 512 < info.st_size
            found[name] = ("file", *owner, info.st_size, int(info.st_mtime), holes, _sha256(path))
    for names in inodes.values():
        for name in names:
            found[name] = (*found[name], tuple(names))
    return found


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        while chunk := data.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
