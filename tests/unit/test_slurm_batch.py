"""The smoke tests' output directory, made by the user with real setpriv and mkdir on this host,
in a directory the tenant's group may write (as /scratch/<slug>): a new one is the user's alone;
an existing one, which may be someone else's, or a link a user planted, is refused and left as it
was; and a job's output is read as its user, so a link in its place reaches nothing root could.
And a job's accounting record, on a scripted transport: the run of its id submitted when
slurmctld says it took the job, not an earlier run of the same id that sacct shows until
slurmdbd hears of the job."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from providers.command import CommandResult, CommandStream, LocalTransport
from providers.errors import SlurmError
from providers.slurm.batch import BatchJobs
from providers.slurm.transport import SlurmCommandError

UID, GID = 2201, 4102  # tenant-bar's dave and group
OTHER_UID = 2147  # another tenant's user


def jobs() -> BatchJobs:
    return BatchJobs(LocalTransport(backend="slurm", timeout=10))


@pytest.fixture
def host() -> Iterator[Path]:
    """A directory of this host that every user may pass through (pytest's own may not)."""
    made = Path(tempfile.mkdtemp(prefix="gpu-tenants-batch-", dir="/tmp"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made)


def scratch(host: Path) -> Path:
    """A directory like /scratch/<slug>: root's, the tenant's group may write it (2770)."""
    shared = host / "scratch"
    shared.mkdir()
    os.chown(shared, 0, GID)
    shared.chmod(0o2770)
    return shared


def test_a_new_output_directory_is_made_for_the_user_alone(host: Path) -> None:
    path = scratch(host) / "run-1"
    jobs().make_output_dir(str(path), UID, GID)
    info = path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (UID, GID, 0o700)


def test_an_existing_directory_or_a_planted_link_is_refused_and_left_as_it_was(
    host: Path,
) -> None:
    shared = scratch(host)
    theirs = shared / "theirs"
    theirs.mkdir(mode=0o750)
    (theirs / "data").write_text("kept")
    os.chown(theirs, OTHER_UID, OTHER_UID)
    with pytest.raises(SlurmCommandError) as refused:
        jobs().make_output_dir(str(theirs), UID, GID)
    message = str(refused.value)
    assert f"making the job output directory {theirs} as uid {UID}" in message
    assert "File exists" in message
    assert "name a directory that does not exist yet" in message
    info = theirs.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (OTHER_UID, OTHER_UID, 0o750)
    assert (theirs / "data").read_text() == "kept"
    # A link to a root file where the directory is to be: never followed, never handed over.
    secret = host / "shadow"
    secret.write_text("root's")
    secret.chmod(0o600)
    (shared / "run-2").symlink_to(secret)
    with pytest.raises(SlurmCommandError):
        jobs().make_output_dir(str(shared / "run-2"), UID, GID)
    assert (secret.stat().st_uid, secret.stat().st_mode & 0o777) == (0, 0o600)


def test_a_jobs_output_is_read_as_its_user(host: Path) -> None:
    path = scratch(host) / "run-1"
    jobs().make_output_dir(str(path), UID, GID)
    output = path / "gpus-7.out"
    output.write_text("GPU 0: NVIDIA H100\n")
    os.chown(output, UID, GID)
    assert jobs().read(str(output), UID, GID) == "GPU 0: NVIDIA H100\n"
    # The user swaps the output for a link to a file only root may read: nothing comes back.
    secret = host / "shadow"
    secret.write_text("root:$6$hash")
    secret.chmod(0o600)
    output.unlink()
    output.symlink_to(secret)
    assert jobs().read(str(output), UID, GID) == ""


# When slurmctld took jobs 16 and 17, as squeue prints it.
TAKEN = "16|2026-12-04T18:00:05\n17|2026-12-04T18:00:05\n"
# What `scontrol show hostnames` makes of the hostlists below.
HOSTS = {"gpu-14": ["gpu-14"], "gpu-15": ["gpu-15"], "gpu-[14-15]": ["gpu-14", "gpu-15"]}


@dataclass
class ScriptedSlurm:
    """Answers squeue with `taken` and sacct with `accounted`: what slurmdbd shows right now."""

    accounted: str
    taken: str = TAKEN

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        if argv[0] == "squeue":
            return CommandResult(tuple(argv), 0, self.taken, "")
        if argv[0] == "sacct":
            return CommandResult(tuple(argv), 0, self.accounted, "")
        if argv[:3] == ["scontrol", "show", "hostnames"]:
            return CommandResult(tuple(argv), 0, "\n".join(HOSTS[argv[3]]) + "\n", "")
        raise AssertionError(f"unexpected command {argv}")

    def stream(self, argv: Sequence[str]) -> AbstractContextManager[CommandStream]:
        raise AssertionError(f"unexpected command {argv}")

    def feed(self, argv: Sequence[str], chunks: Iterable[bytes]) -> CommandResult:
        raise AssertionError(f"unexpected command {argv}")


def test_an_earlier_run_of_a_job_id_is_not_the_job_just_submitted() -> None:
    # Slurm gave id 16 before (slurmctld's state lost): sacct shows that run, finished on one
    # node, until slurmdbd hears of the job just submitted. Job 17 is already there.
    slurm = ScriptedSlurm(
        "16|COMPLETED|0:0|gpu-14|1|2026-12-04T17:58:40\n"
        "17|RUNNING|0:0|gpu-15|1|2026-12-04T18:00:05\n"
    )
    jobs = BatchJobs(slurm)
    submitted = jobs.submit_times(["16", "17"])
    assert submitted == {
        "16": datetime(2026, 12, 4, 18, 0, 5),
        "17": datetime(2026, 12, 4, 18, 0, 5),
    }
    assert list(jobs.records(submitted)) == ["17"]
    # Then the newest run is the job's own; a requeue's is later still, and the job's too.
    slurm.accounted = (
        "16|COMPLETED|0:0|gpu-[14-15]|2|2026-12-04T18:00:05\n"
        "17|COMPLETED|0:0|gpu-15|1|2026-12-04T18:01:30\n"
    )
    records = jobs.records(submitted)
    assert records["16"].hosts == ("gpu-14", "gpu-15")
    assert records["17"].finished


def test_a_finished_job_is_taken_only_once_accounting_names_all_its_nodes() -> None:
    # What slurmdbd 22.05 shows of a two-node job for a second or two: its end, but only the one
    # node it was planned on while pending (the start's record, with both, comes after).
    slurm = ScriptedSlurm("16|COMPLETED|0:0|gpu-14|2|2026-12-04T18:00:05\n")
    jobs = BatchJobs(slurm)
    submitted = jobs.submit_times(["16"])
    assert jobs.records(submitted) == {}
    slurm.accounted = "16|COMPLETED|0:0|gpu-[14-15]|2|2026-12-04T18:00:05\n"
    assert jobs.records(submitted)["16"].hosts == ("gpu-14", "gpu-15")
    # A job that never started names no node, and is taken as it is.
    slurm.accounted = "16|CANCELLED by 0|0:0|None assigned|2|2026-12-04T18:00:05\n"
    assert jobs.records(submitted)["16"].hosts == ()


def test_a_job_slurmctld_does_not_list_right_after_its_submission_is_an_error() -> None:
    jobs = BatchJobs(ScriptedSlurm("", taken="17|2026-12-04T18:00:05\n"))
    with pytest.raises(SlurmError) as refused:
        jobs.submit_times(["16", "17"])
    assert "squeue does not list 16" in str(refused.value)
