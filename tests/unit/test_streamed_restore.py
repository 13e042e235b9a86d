"""A directory's archive unpacks back on the mount host as it streams in: never held whole, a
stall or a failure fails it, and the directory is put in place only once the archive is in and
verified, so it is never seen half restored. Real GNU tar on real trees (the tests run as root,
as the mount host does, so owners come back)."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from providers.command import KubectlExecTransport, LocalTransport
from providers.errors import WekaError
from providers.weka.mount import MountClient
from tests.trees import make_tree, manifest

BLOCK = 1 << 20
FED_BYTES = 1 << 30
HELD_AT_MOST = 48 << 20
OWNERS = {"alice": (2147, 4099)}
# A command that reads its stdin to the end in chunks and prints how many bytes it took.
COUNT = "import sys; print(sum(map(len, iter(lambda: sys.stdin.buffer.read(1 << 20), b''))))"


def local(tmp_path: Path, stall: float = 120.0) -> MountClient:
    """A mount host on this machine whose organization Root has filesystem `fs` in tmp_path."""
    (tmp_path / "Root" / "fs").mkdir(parents=True, exist_ok=True)
    return MountClient(LocalTransport(backend="test", timeout=10, stall=stall), str(tmp_path))


def blocks(count: int) -> Iterator[bytes]:
    for n in range(count):
        yield n.to_bytes(4, "big") * (BLOCK // 4)


def trusted() -> str | None:
    return None


def test_an_archive_comes_back_as_it_was_made_owners_modes_links_and_holes(
    tmp_path: Path,
) -> None:
    mount = local(tmp_path)
    source = tmp_path / "Root" / "fs" / "tenant-foo"
    make_tree(source, OWNERS)
    source.chmod(0o2770)
    made = manifest(source)
    with mount.archive("Root", "fs", "/tenant-foo", "archiving") as archive:
        mount.unpack("Root", "fs", "/restored", archive, trusted, "restoring")
    restored = tmp_path / "Root" / "fs" / "restored"
    assert manifest(restored) == made
    assert oct(restored.stat().st_mode & 0o7777) == "0o2770"
    assert sorted(p.name for p in restored.parent.iterdir()) == ["restored", "tenant-foo"]


def test_feeding_more_than_memory_holds_nothing_but_a_chunk() -> None:
    transport = LocalTransport(backend="test", timeout=5)
    count = [sys.executable, "-c", COUNT]
    tracemalloc.start()
    try:
        result = transport.feed(count, blocks(FED_BYTES // BLOCK))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (result.returncode, result.stdout.strip()) == (0, str(FED_BYTES))
    assert peak < HELD_AT_MOST, f"peak {peak} bytes feeding {FED_BYTES}"


def test_a_command_that_stops_reading_fails_on_the_stall_not_a_total_timeout() -> None:
    transport = LocalTransport(backend="test", timeout=5, stall=0.5)
    result = transport.feed(["sleep", "30"], blocks(64))
    assert result.returncode is None
    assert "sleep took no byte for 0.5 s" in result.words


def test_a_command_that_exits_early_leaves_the_rest_unread_and_says_why() -> None:
    transport = LocalTransport(backend="test", timeout=5)
    source = blocks(64)
    result = transport.feed(
        ["sh", "-c", "head -c 10 >/dev/null; echo bad input >&2; exit 3"], source
    )
    assert (result.returncode, result.words) == (3, "bad input")
    assert sum(1 for _ in source) > 0, "what the command did not read is still to be read"


def test_a_source_that_fails_stops_the_command_and_raises_its_own_error() -> None:
    transport = LocalTransport(backend="test", timeout=5)

    def failing() -> Iterator[bytes]:
        yield b"x" * BLOCK
        raise OSError("the store went away")

    with pytest.raises(OSError, match="the store went away"):
        transport.feed(["cat"], failing())


def test_a_broken_archive_puts_nothing_in_place_and_says_what_tar_said(tmp_path: Path) -> None:
    mount = local(tmp_path)
    with pytest.raises(WekaError) as failed:
        mount.unpack("Root", "fs", "/tenant-foo", [b"not a gzip archive"], trusted, "restoring x")
    assert str(failed.value).startswith("restoring x")
    assert "gzip: stdin: not in gzip format" in str(failed.value)
    assert list((tmp_path / "Root" / "fs").iterdir()) == []


def test_an_archive_that_does_not_verify_puts_nothing_in_place(tmp_path: Path) -> None:
    mount = local(tmp_path)
    source = tmp_path / "Root" / "fs" / "tenant-foo"
    source.mkdir()
    (source / "weights.pt").write_bytes(b"w" * 100)
    with (
        mount.archive("Root", "fs", "/tenant-foo", "archiving") as archive,
        pytest.raises(WekaError, match="reads back with another digest") as failed,
    ):
        mount.unpack("Root", "fs", "/back", archive, lambda: "reads back with another digest", "x")
    assert "nothing was put in place" in str(failed.value)
    assert sorted(p.name for p in (tmp_path / "Root" / "fs").iterdir()) == ["tenant-foo"]


def test_what_a_killed_restore_left_is_cleared_and_data_in_place_is_never_replaced(
    tmp_path: Path,
) -> None:
    mount = local(tmp_path)
    source = tmp_path / "Root" / "fs" / "tenant-foo"
    source.mkdir()
    (source / "weights.pt").write_bytes(b"w" * 100)
    left = tmp_path / "Root" / "fs" / ".back.restoring"
    (left / "half").mkdir(parents=True)
    (tmp_path / "Root" / "fs" / "back").mkdir()  # empty: a restore may go there
    with mount.archive("Root", "fs", "/tenant-foo", "archiving") as archive:
        mount.unpack("Root", "fs", "/back", archive, trusted, "restoring")
    back = tmp_path / "Root" / "fs" / "back"
    assert sorted(p.name for p in back.iterdir()) == ["weights.pt"]
    assert not left.exists()

    # Over a directory that holds anything, mv -T refuses, and the data there stays.
    with (
        mount.archive("Root", "fs", "/tenant-foo", "archiving") as archive,
        pytest.raises(WekaError, match="mv -T"),
    ):
        mount.unpack("Root", "fs", "/back", archive, trusted, "restoring")
    assert (back / "weights.pt").read_bytes() == b"w" * 100


@dataclass(frozen=True, kw_only=True)
class StoppedHost(LocalTransport):
    """A mount host that takes the command and then reads nothing."""

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["sleep", "30"]


def test_a_stalled_unpack_is_named_with_what_to_check(tmp_path: Path) -> None:
    stopped = MountClient(StoppedHost(backend="test", timeout=1, stall=0.5), str(tmp_path))
    with pytest.raises(WekaError) as failed:
        stopped.unpack("Root", "fs", "/x", blocks(64), trusted, "restoring /x")
    assert "took no byte for 0.5 s" in str(failed.value)
    assert "check that the mount host answers" in str(failed.value)


def test_the_kubectl_transport_passes_stdin_on() -> None:
    kubectl = KubectlExecTransport(backend="test", timeout=5, namespace="weka-system", target="p")
    assert kubectl.fed_command(["tar", "-x"]) == [
        *("kubectl", "-n", "weka-system", "exec", "-i", "p", "--", "tar", "-x"),
    ]
