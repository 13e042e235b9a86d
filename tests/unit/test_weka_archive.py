"""The Weka emulator's tar streams (sandbox.weka.archive): what a snapshot keeps, and what an
archive may not do to the directory it is unpacked into."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from sandbox.weka.archive import UnsafeArchiveError, pack, unpack

AS_ROOT = os.geteuid() == 0


def round_trip(source: Path, target: Path, skip: str | None = None) -> None:
    stream = io.BytesIO()
    pack(source, stream, skip=skip)
    stream.seek(0)
    unpack(stream, target)


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
        unpack(archive_of(*members), target)
    assert not (tmp_path / "escaped").exists()
