"""The partition rewrite's own logic, on a scripted transport: a stale write is read and redone,
a failed reconfigure or a controller copy that never shows the change puts the partition's
previous line back, keeping other writers' lines. (The real stores against the real slurmctld
and kube-apiserver are in tests/contract.)"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from providers.command import CommandResult
from providers.errors import SlurmError
from providers.slurm import partitions
from providers.slurm.client import PartitionChange, SlurmClient
from providers.slurm.partition_store import FileStore, StaleWriteError, Version
from providers.slurm.transport import SlurmCommandError

OLD = "# partitions\nPartitionName=other Nodes=gpu-02 AllowAccounts=other State=UP\n"
LINE = "PartitionName=tenant-x Nodes=gpu-01 AllowAccounts=tenant-x State=UP\n"
CHANGE = PartitionChange("tenant-x", LINE, lambda _: None)
NODES = "NodeName=gpu-01 Arch=x86_64\nNodeName=gpu-02 Arch=x86_64\n"


@dataclass
class ScriptedSlurm:
    """Answers `scontrol show node -o` with two nodes, and `scontrol reconfigure` with the next
    of `reconfigures` (True: it works)."""

    reconfigures: list[bool]
    ran: list[tuple[str, ...]] = field(default_factory=list)

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        self.ran.append(tuple(argv))
        if tuple(argv[:3]) == ("scontrol", "show", "node"):
            return CommandResult(tuple(argv), 0, NODES, "")
        if tuple(argv) == ("scontrol", "reconfigure"):
            ok = self.reconfigures.pop(0)
            return CommandResult(tuple(argv), 0 if ok else 1, "", "" if ok else "Zero Bytes")
        raise AssertionError(f"unexpected command {argv}")


@dataclass
class RacedStore:
    """A store in memory whose writes are refused when the text changed since it was read (as
    the ConfigMap's resourceVersion does); `others` are writes someone else makes right after
    each of our reads, one per read."""

    text: str
    others: list[str | None]
    version: int = 0
    # What the controller's copy shows: None follows the store; a text is a copy stuck there.
    controller_copy: str | None = None

    def describe(self) -> str:
        return "the raced store"

    @contextmanager
    def lock(self) -> Iterator[None]:
        yield

    def read(self, doing: str) -> Version:
        read = Version(self.text, str(self.version))
        other = self.others.pop(0) if self.others else None
        if other is not None:
            self.text, self.version = self.text + other, self.version + 1
        return read

    def write(self, text: str, over: Version, doing: str) -> None:
        if over.token != str(self.version):
            raise StaleWriteError(self.describe())
        self.text, self.version = text, self.version + 1

    def wait_visible(self, name: str, line: str | None, doing: str) -> None:
        copy = self.text if self.controller_copy is None else self.controller_copy
        if not partitions.shows(copy, name, line):
            raise SlurmError(doing, "the controller's copy did not show the change", "wait")


def test_a_failed_reconfigure_restores_the_previous_partitions(tmp_path: Path) -> None:
    path = tmp_path / "partitions.conf"
    path.write_text(OLD)
    slurm = ScriptedSlurm(reconfigures=[False, True])
    client = SlurmClient(slurm, cluster="production")
    with pytest.raises(SlurmCommandError) as failed:
        client.rewrite_partition(FileStore(path), CHANGE, "creating")
    assert "Zero Bytes" in str(failed.value)
    assert f"partition tenant-x's previous line was put back in {path} and applied" in str(
        failed.value
    )
    assert path.read_text() == OLD
    assert slurm.ran.count(("scontrol", "reconfigure")) == 2


def test_a_stale_write_is_read_again_and_redone_keeping_the_other_writers_line() -> None:
    other = "PartitionName=third Nodes=gpu-02 AllowAccounts=third State=UP\n"
    store = RacedStore(OLD, others=[other])
    client = SlurmClient(ScriptedSlurm(reconfigures=[True]), cluster="production")
    client.rewrite_partition(store, CHANGE, "creating")
    assert store.text == OLD + other + LINE


def test_a_restore_that_meets_another_writer_is_redone_keeping_their_line() -> None:
    other = "PartitionName=third Nodes=gpu-02 AllowAccounts=third State=UP\n"
    # Our read; then the restore's read, after which someone else writes at once.
    store = RacedStore(OLD, others=[None, other])
    slurm = ScriptedSlurm(reconfigures=[False, True])
    client = SlurmClient(slurm, cluster="production")
    with pytest.raises(SlurmCommandError) as failed:
        client.rewrite_partition(store, CHANGE, "creating")
    assert "partition tenant-x's previous line was put back in the raced store and applied" in (
        str(failed.value)
    )
    assert store.text == OLD + other


def test_the_controller_seeing_a_later_text_that_holds_our_line_is_enough() -> None:
    other = "PartitionName=third Nodes=gpu-02 AllowAccounts=third State=UP\n"
    store = RacedStore(OLD, others=[None])
    slurm = ScriptedSlurm(reconfigures=[True])
    client = SlurmClient(slurm, cluster="production")
    # The copy never showed our text alone: another tenant's line came before the kubelet did.
    store.controller_copy = OLD + LINE + other
    client.rewrite_partition(store, CHANGE, "creating")
    assert slurm.ran.count(("scontrol", "reconfigure")) == 1


def test_a_change_the_controller_never_sees_is_taken_out_again() -> None:
    other = "PartitionName=third Nodes=gpu-02 AllowAccounts=third State=UP\n"
    # Someone else writes right after the restore's read: the restore is redone over it.
    store = RacedStore(OLD, others=[None, other], controller_copy=OLD)
    slurm = ScriptedSlurm(reconfigures=[])
    client = SlurmClient(slurm, cluster="production")
    with pytest.raises(SlurmError) as failed:
        client.rewrite_partition(store, CHANGE, "creating")
    message = str(failed.value)
    assert "creating failed: the controller's copy did not show the change" in message
    assert "partition tenant-x's previous line was put back in the raced store; wait" in message
    assert store.text == OLD + other
    assert ("scontrol", "reconfigure") not in slurm.ran


def test_a_partitions_file_that_cannot_be_used_is_a_slurm_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "no-such-dir" / "partitions.conf"
    client = SlurmClient(ScriptedSlurm(reconfigures=[]), cluster="production")
    with pytest.raises(SlurmError) as failed:
        client.rewrite_partition(FileStore(path), CHANGE, "creating")
    assert f"creating failed: {path}: " in str(failed.value)
    assert "No such file or directory" in str(failed.value)
