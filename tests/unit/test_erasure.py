"""A user's erasure from a directory archive: their home directory and every file they own go,
everyone else's stay byte for byte."""

from __future__ import annotations

import io
import tarfile

import pytest

from providers.retention.erasure import erased_users, users_files, without_users

ALICE, BOB = 2147, 2148


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
    kept, removed = without_users(copy, {"alice": ALICE})
    assert sorted(removed) == ["./alice", "./alice/notes.txt", "./shared/alice-run.log"]
    assert contents(kept) == {
        ".": (0, None),
        "./bob": (BOB, None),
        "./bob/plan.txt": (BOB, b"bob's plan"),
        "./shared": (0, None),
        "./shared/data.bin": (BOB, b"\0" * 10000),
    }
    assert users_files(kept, {"alice": ALICE}) == []
    assert users_files(copy, {"bob": BOB}) == ["./bob", "./bob/plan.txt", "./shared/data.bin"]


def test_erasing_again_changes_nothing() -> None:
    copy = archive(("./bob", BOB, None), ("./bob/plan.txt", BOB, b"plan"))
    once, _ = without_users(copy, {"alice": ALICE})
    assert contents(once) == contents(copy)


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
