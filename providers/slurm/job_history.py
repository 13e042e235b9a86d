"""What a tenant's jobs used, as Slurm's accounting records them: one record per run of a job
(`sacct -X --duplicates --allusers --parsable2`, a header line first), read live over a window,
or from the `jobs.csv` the offboarding archive keeps, which is the same command's output over the
tenant's lifetime. Read-only.

sacct prints times in the local time of the host it runs on, without a zone, and so are they
read: a report's days are that host's days.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from providers.command import Transport
from providers.slurm import commands
from providers.slurm.transport import SlurmRunner
from providers.slurm.usage import gpus_of

__all__ = ["FINISHED", "JOB_FIELDS", "NOT_YET", "JobRecord", "parse_jobs", "read_jobs"]

# Every field billing asks about (runbook 3b), and what tells one job from another.
JOB_FIELDS = (
    "JobID,JobName,User,Account,Partition,QOS,ReqTRES,AllocTRES,Submit,Start,End,Elapsed,"
    "State,ExitCode,NodeList"
)
# What sacct prints for a time that has not come (a pending job's start, a running job's end).
NOT_YET = ("Unknown", "None", "")
# The states of a job that will not run any more, as sacct and squeue (%T) name them.
FINISHED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)


@dataclass(frozen=True)
class JobRecord:
    id: str
    user: str
    account: str
    gpus: int  # allocated (AllocTRES); a job that never started allocated none
    start: datetime | None  # None: it never started
    end: datetime | None  # None: still running

    def gpu_seconds(self, since: datetime, until: datetime) -> float:
        """GPU-seconds the job held between `since` and `until` (a running job: until then)."""
        if self.start is None or self.gpus == 0:
            return 0.0
        begun, ended = max(self.start, since), min(self.end or until, until)
        return max((ended - begun).total_seconds(), 0.0) * self.gpus


def _time(text: str) -> datetime | None:
    return None if text in NOT_YET else datetime.fromisoformat(text)


def parse_jobs(text: str) -> list[JobRecord]:
    """The records of `sacct -X --parsable2` output (with its header line), in its order."""
    lines = [line for line in text.splitlines() if line]
    if not lines:
        return []
    header = lines[0].split("|")
    missing = {"JobID", "User", "Account", "AllocTRES", "Start", "End"} - set(header)
    if missing:
        raise ValueError(f"sacct's output has no {', '.join(sorted(missing))} column")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        row = dict(zip(header, line.split("|"), strict=False))
        try:
            records.append(
                JobRecord(
                    row["JobID"],
                    row["User"],
                    row["Account"],
                    gpus_of(row["AllocTRES"]),
                    _time(row["Start"]),
                    _time(row["End"]),
                )
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"line {number} of sacct's output: {error}") from None
    return records


def read_jobs(
    transport: Transport, accounts: Sequence[str], since: date, until: date
) -> list[JobRecord]:
    """Every job of `accounts` that was eligible or ran from `since` to before `until`
    (midnight, the hosts' time)."""
    doing = f"reading the jobs of {', '.join(accounts)}"
    argv = commands.sacct(accounts, since.isoformat(), until.isoformat(), JOB_FIELDS)
    return SlurmRunner(transport).read(argv, doing, parse_jobs)
