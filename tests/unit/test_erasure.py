"""A user's erasure from a directory archive: their home directory and every file they own go,
everyone else's stay byte for byte, and the archive streams through without being held."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from providers.retention.erasure import erased_users, gzipped, users_files, walk, without_users

ALICE, BOB = 2147, 2148


def erase(copy: bytes, users: dict[str, int]) -> tuple[bytes, list[str]]:
    removed: list[str] = []
    kept = b"".join(without_users(chunked(copy), users, removed))
    return kept, removed


def chunked(data: bytes, size: int = 4099) -> Iterator[bytes]:
    """`data` in odd-sized chunks, as a network read gives them."""
    return (data[at : at + size] for at in range(0, len(data), size))


def archive(*members: tuple[str, int, bytes | None]) -> bytes:
    """A gzipped tar of (name, uid, content) members; None makes a directory."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, uid, data in members:
            info = tarfile.TarInfo(name)
            info.uid, info.gid, info.mtime = uid, 4099, 1_700_000_000
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o700
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o600
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def contents(data: bytes) -> dict[str, tuple[int, bytes | None]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        found = {}
        for member in tar:
            body = tar.extractfile(member) if member.isfile() else None
            found[member.name] = (member.uid, body.read() if body else None)
        return found


def test_the_users_home_and_every_file_they_own_go_and_the_rest_stays_as_it_was() -> None:
    copy = archive(
        (".", 0, None),
        ("./alice", ALICE, None),
        ("./alice/notes.txt", 0, b"root wrote this in alice's home"),
        ("./bob", BOB, None),
        ("./bob/plan.txt", BOB, b"bob's plan"),
        ("./shared", 0, None),
        ("./shared/alice-run.log", ALICE, b"alice's run"),
        ("./shared/data.bin", BOB, b"\0" * 10000),
    )
    kept, removed = erase(copy, {"alice": ALICE})
    assert sorted(removed) == ["./alice", "./alice/notes.txt", "./shared/alice-run.log"]
    assert contents(kept) == {
        ".": (0, None),
        "./bob": (BOB, None),
        "./bob/plan.txt": (BOB, b"bob's plan"),
        "./shared": (0, None),
        "./shared/data.bin": (BOB, b"\0" * 10000),
    }
    assert users_files(chunked(kept), {"alice": ALICE}) == []
    assert users_files(chunked(copy), {"bob": BOB}) == [
        "./bob",
        "./bob/plan.txt",
        "./shared/data.bin",
    ]


def test_erasing_again_changes_nothing() -> None:
    copy = archive(("./bob", BOB, None), ("./bob/plan.txt", BOB, b"plan"))
    once, _ = erase(copy, {"alice": ALICE})
    assert contents(once) == contents(copy)


def gnu_tar(tmp_path: Path) -> bytes:
    """What the mount host's tar makes of a tree with a sparse file, hard links, long names and
    several owners: the archive erasure must pass through unchanged."""
    top = tmp_path / "top"
    deep = top / "bob" / ("d" * 120)
    deep.mkdir(parents=True)
    (top / "alice").mkdir()
    (top / "alice" / "notes").write_bytes(os.urandom(70_000))
    os.link(top / "alice" / "notes", top / "alice" / "notes-again")
    with (top / "bob" / "sparse").open("wb") as sparse:
        sparse.truncate(64 << 20)
        sparse.seek(40 << 20)
        sparse.write(b"in the middle")
    (deep / ("f" * 150)).write_text("long name")
    for path in [top / "bob", deep, deep / ("f" * 150), top / "bob" / "sparse"]:
        os.chown(path, BOB, 4099)
    argv = ["tar", "--numeric-owner", "--sparse", "-C", str(top), "-czf", "-", "."]
    return subprocess.run(argv, capture_output=True, check=True).stdout


def test_a_member_passes_through_as_tar_wrote_it_sparse_files_and_links_included(
    tmp_path: Path,
) -> None:
    copy = gnu_tar(tmp_path)
    raw = gzip.decompress(copy)
    assert b"".join(walk(chunked(raw), lambda member: True)) == raw
    kept, removed = erase(copy, {"carol": 9999})
    assert (removed, gzip.decompress(kept)) == ([], raw)

    kept, removed = erase(copy, {"bob": BOB})
    names = [name.removeprefix("./").split("/")[0] for name in removed]
    assert set(names) == {"bob"}
    with tarfile.open(fileobj=io.BytesIO(kept)) as tar:
        notes = tar.extractfile("./alice/notes")
        assert notes is not None
        assert notes.read() == (tmp_path / "top" / "alice" / "notes").read_bytes()
        assert [m.name for m in tar if m.name.startswith("./bob")] == []


def test_a_hard_link_into_an_erased_file_goes_with_it(tmp_path: Path) -> None:
    top = tmp_path / "top"
    for user in ("alice", "bob"):
        (top / user).mkdir(parents=True)
    (top / "alice" / "result").write_text("one inode, two names")
    os.link(top / "alice" / "result", top / "bob" / "result")
    argv = ["tar", "--numeric-owner", "-C", str(top), "-czf", "-", "."]
    copy = subprocess.run(argv, capture_output=True, check=True).stdout
    # tar stores the inode's data with the first name it meets and links the other to it.
    with tarfile.open(fileobj=io.BytesIO(copy)) as tar:
        first, second = (m for m in tar if m.name.endswith("/result"))
    assert second.islnk()
    assert second.linkname == first.name
    owner = first.name.split("/")[1]
    kept, removed = erase(copy, {owner: 9999})
    assert {first.name, second.name} <= set(removed)
    with tarfile.open(fileobj=io.BytesIO(kept)) as tar:
        assert [m.name for m in tar if m.name.endswith("/result")] == []


def test_a_truncated_archive_is_an_error_not_a_shorter_copy(tmp_path: Path) -> None:
    copy = gnu_tar(tmp_path)
    with pytest.raises(tarfile.ReadError, match="truncated"):
        erase(copy[: len(copy) // 2], {"alice": ALICE})


def test_an_archive_streams_through_in_bounded_memory() -> None:
    """A member of 512 MiB (zeros: quick to compress) goes through, yet at no time does this
    process hold more than a few chunks of it."""
    size = 512 << 20
    header = tarfile.TarInfo("./bob/checkpoint.pt")
    header.size, header.uid = size, BOB

    def tar() -> Iterator[bytes]:
        yield header.tobuf(format=tarfile.GNU_FORMAT)
        zeros = bytes(1 << 20)
        for _ in range(size >> 20):
            yield zeros
        yield bytes(1024)

    tracemalloc.start()
    try:
        removed: list[str] = []
        passed = sum(len(c) for c in without_users(gzipped(tar()), {"alice": ALICE}, removed))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert removed == []
    assert passed > 0
    assert peak < 24 << 20, f"peak {peak} bytes"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"": 1}, "not a username"),
        ({"..": 1}, "not a username"),
        ({"a/b": 1}, "not a username"),
        ({"alice": 0}, "not a uid"),
        ({"alice": 1.5}, "not a uid"),
        (["alice"], "not a mapping"),
    ],
)
def test_the_erased_input_names_users_by_username_and_uid(value: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        erased_users(value)
    assert erased_users({"alice": 2147.0}) == {"alice": ALICE}
    assert erased_users(None) == {}
