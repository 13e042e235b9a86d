"""A tenant's jobs in the Slurm queue, as offboarding's drain and the destroy gate see and end them
(runbook steps 2 and 4d): squeue to list, scancel to cancel pending jobs, to send TERM to the
whole of each running job (`--full`, so the batch script's own trap runs) and, after the grace,
to end what is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from providers.command import Transport
from providers.slurm import commands
from providers.slurm.transport import SlurmRunner

__all__ = ["Job", "SlurmQueue"]

# squeue's fields, '|'-separated: id, state, user, account, partition, expected end.
_FORMAT = "%i|%T|%u|%a|%P|%e"


@dataclass(frozen=True)
class Job:
    id: str
    state: str  # PENDING, RUNNING, COMPLETING, ...
    user: str
    account: str
    partition: str
    end: str  # expected end as squeue prints it (ISO time, or N/A / Unknown)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    def __str__(self) -> str:
        return f"{self.id} ({self.user}, {self.state.lower()})"


def parse_squeue(text: str) -> list[Job]:
    jobs = []
    for line in text.splitlines():
        if line.strip():
            id_, state, user, account, partition, end = line.split("|", 5)
            jobs.append(Job(id_, state, user, account, partition, end))
    return jobs


class SlurmQueue:
    def __init__(self, transport: Transport) -> None:
        self.runner = SlurmRunner(transport)

    def jobs(self, accounts: Sequence[str]) -> list[Job]:
        """Every job queued or running under `accounts`, in any partition."""
        doing = f"listing the jobs of accounts {', '.join(accounts)}"
        return self.runner.read(commands.queue(accounts, _FORMAT), doing, parse_squeue)

    def cancel_pending(self, accounts: Sequence[str]) -> None:
        doing = f"cancelling the pending jobs of accounts {', '.join(accounts)}"
        self.runner.must(commands.cancel_pending(accounts), doing)

    def signal(self, jobs: Sequence[Job], signal: str) -> None:
        """Sends `signal` to every step of each job, the batch shell included, so that a
        checkpointing trap in the job script runs."""
        if jobs:
            ids = [j.id for j in jobs]
            self.runner.must(
                commands.cancel(ids, signal), f"sending {signal} to jobs {', '.join(ids)}"
            )

    def end(self, jobs: Sequence[Job]) -> None:
        """Ends the jobs: slurmd sends TERM then, KillWait later, KILL. After a TERM and its
        grace that is the runbook's KILL."""
        if jobs:
            ids = [j.id for j in jobs]
            self.runner.must(commands.cancel(ids), f"ending jobs {', '.join(ids)}")
