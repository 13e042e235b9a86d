"""The Weka emulator's tar streams (sandbox.weka.archive): what a snapshot keeps, and what an
archive may not do to the directory it is unpacked into."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import threading
import tracemalloc
from pathlib import Path
from typing import BinaryIO

import pytest

from sandbox.weka import archive
from sandbox.weka.archive import UnsafeArchiveError, packed, unpack

AS_ROOT = os.geteuid() == 0


def round_trip(source: Path, target: Path, skip: str | None = None) -> None:
    unpack(packed(source, skip=skip), target)


def test_a_tree_comes_back_with_modes_links_and_times(tmp_path: Path) -> None:
    source = tmp_path / "fs"
    (source / "scratch" / "deep").mkdir(parents=True)
    os.chmod(source, 0o750)
    os.chmod(source / "scratch", 0o2770)
    data = source / "scratch" / "deep" / "data"
    data.write_text("kept")
    os.chmod(data, 0o4755)
    os.utime(data, (1_000_000_000, 1_000_000_000))
    (source / "scratch" / "relative").symlink_to("deep/data")
    (source / "scratch" / "absolute").symlink_to("/nowhere/at/all")
    os.link(data, source / "scratch" / "hard")
    os.mkfifo(source / "pipe")
    (source / "empty").mkdir()
    (source / ".snapshots" / "old").mkdir(parents=True)

    target = tmp_path / "copy"
    round_trip(source, target, skip=".snapshots")

    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert stat.S_IMODE((target / "scratch").stat().st_mode) == 0o2770
    copied = target / "scratch" / "deep" / "data"
    assert copied.read_text() == "kept"
    assert stat.S_IMODE(copied.stat().st_mode) == 0o4755
    assert copied.stat().st_mtime == 1_000_000_000
    assert os.readlink(target / "scratch" / "relative") == "deep/data"
    assert os.readlink(target / "scratch" / "absolute") == "/nowhere/at/all"
    assert (target / "scratch" / "hard").stat().st_ino == copied.stat().st_ino
    assert stat.S_ISFIFO((target / "pipe").lstat().st_mode)
    assert (target / "empty").is_dir()
    assert not (target / ".snapshots").exists()


@pytest.mark.skipif(not AS_ROOT, reason="only root gives files to other owners")
def test_owners_come_back_as_numbers(tmp_path: Path) -> None:
    source = tmp_path / "fs"
    (source / "alice").mkdir(parents=True)
    (source / "alice" / "notes").write_text("x")
    # Owners with no passwd entry, as a tenant's users are on this host.
    for path in (source, source / "alice", source / "alice" / "notes"):
        os.chown(path, 2001, 4001)
    os.chmod(source / "alice", 0o2700)
    target = tmp_path / "copy"
    round_trip(source, target)
    for path in (target, target / "alice", target / "alice" / "notes"):
        assert (path.stat().st_uid, path.stat().st_gid) == (2001, 4001)
    assert stat.S_IMODE((target / "alice").stat().st_mode) == 0o2700


def archive_of(*members: tarfile.TarInfo, data: bytes = b"x") -> io.BytesIO:
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            if member.isreg():
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
            else:
                tar.addfile(member)
    stream.seek(0)
    return stream


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ((member("../escaped"),), "'..'"),
        ((member("/etc/escaped"),), "absolute"),
        ((member("out", tarfile.SYMTYPE, "/tmp"), member("out/escaped")), "link that leads out"),
        ((member("up", tarfile.SYMTYPE, ".."), member("up/escaped")), "link that leads out"),
        ((member("hard", tarfile.LNKTYPE, "../../etc/passwd"),), "outside the tree"),
        ((member("disk", tarfile.BLKTYPE),), "device"),
    ],
)
def test_an_archive_cannot_reach_outside_its_target(
    tmp_path: Path, members: tuple[tarfile.TarInfo, ...], says: str
) -> None:
    target = tmp_path / "fs"
    with pytest.raises(UnsafeArchiveError, match=says):
        unpack([archive_of(*members).getvalue()], target)
    assert not (tmp_path / "escaped").exists()


def test_a_tree_larger_than_the_test_allows_passes_through_bounded_memory(
    tmp_path: Path,
) -> None:
    source = tmp_path / "fs"
    source.mkdir()
    size = 192 * 2**20
    with (source / "sparse").open("wb") as out:  # read back as 192 MiB of zeros
        out.truncate(size)
    (source / "small").write_text("kept")
    tracemalloc.start()
    try:
        unpack(packed(source), tmp_path / "copy")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "copy" / "sparse").stat().st_size == size
    assert (tmp_path / "copy" / "small").read_text() == "kept"
    assert peak < 8 * 2**20, f"{peak / 2**20:.1f} MiB held for a {size // 2**20} MiB tree"


def test_a_failure_to_pack_fails_the_stream_after_what_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cut(source: Path, into: BinaryIO, skip: str | None = None) -> None:
        into.write(b"\0" * 4096)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(archive, "pack", cut)
    chunks = packed(tmp_path)
    assert next(chunks) == b"\0" * 4096
    with pytest.raises(OSError, match="Input/output error"):
        next(chunks)
    # The zero blocks read as an empty archive: the failure after them still fails the unpacking.
    monkeypatch.setattr(archive, "pack", cut)
    with pytest.raises(OSError, match="Input/output error"):
        unpack(packed(tmp_path), tmp_path / "copy")


def test_a_reader_that_stops_early_stops_the_packing(tmp_path: Path) -> None:
    source = tmp_path / "fs"
    source.mkdir()
    with (source / "sparse").open("wb") as out:
        out.truncate(64 * 2**20)
    chunks = packed(source)
    next(chunks)
    chunks.close()  # joins the packing thread, which stops at its next write
    assert not [t for t in threading.enumerate() if t.name == f"pack {source}"]
