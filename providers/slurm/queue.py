"""A tenant's jobs in the Slurm queue, as offboarding's drain and the destroy gate see and end them
(runbook steps 2 and 4d): squeue to list, scancel to cancel pending jobs, to send TERM to the
whole of each running job (`--full`, so the batch script's own trap runs) and, after the grace,
to end what is left; and the jobs stuck completing, which no scancel ends (the offboarding
runbook's "scancel hits a job in CG").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from providers.command import Transport
from providers.slurm import commands
from providers.slurm.transport import SlurmRunner

__all__ = ["Job", "SlurmQueue", "described", "stuck_completing", "unstick"]

# squeue's fields, '|'-separated: id, state, user, account, partition, end, nodes.
_FORMAT = "%i|%T|%u|%a|%P|%e|%N"


@dataclass(frozen=True)
class Job:
    id: str
    state: str  # PENDING, RUNNING, COMPLETING, ...
    user: str
    account: str
    partition: str
    # The expected end as squeue prints it (local time, or N/A / Unknown); a completing job's
    # is when it ended.
    end: str
    nodes: str  # hostlist; a completing job's, the nodes that have not confirmed its end

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    def __str__(self) -> str:
        return f"{self.id} ({self.user}, {self.state.lower()})"


def parse_squeue(text: str) -> list[Job]:
    jobs = []
    for line in text.splitlines():
        if line.strip():
            id_, state, user, account, partition, end, nodes = line.split("|", 6)
            jobs.append(Job(id_, state, user, account, partition, end, nodes))
    return jobs


def stuck_completing(jobs: Sequence[Job], after: float, now: float) -> list[Job]:
    """The jobs COMPLETING for more than `after` seconds: a job's end normally takes its
    KillWait and the epilog, seconds; longer, the node's slurmd has not confirmed it, usually
    because the epilog waits on a wedged process."""
    stuck = []
    for job in jobs:
        if job.state != "COMPLETING":
            continue
        try:
            ended = datetime.fromisoformat(job.end).timestamp()
        except ValueError:
            continue  # no end known: not judged
        if now - ended > after:
            stuck.append(job)
    return stuck


def described(jobs: Sequence[Job]) -> str:
    """Up to ten stuck jobs, each with the nodes that hold it and when it ended."""
    return ", ".join(f"{job} on {job.nodes}, ended {job.end}" for job in jobs[:10])


def unstick(jobs: Sequence[Job]) -> str:
    """What the offboarding runbook does for jobs stuck completing on their nodes."""
    nodes = ",".join(sorted({job.nodes for job in jobs if job.nodes})) or "<node>"
    return (
        "slurmd on the node has not confirmed their end, usually because the epilog waits on a "
        "wedged process: look on the node (`ps -ef | grep -E 'epilog|slurmd'` in its slurmd "
        f"pod); if it is stuck, `scontrol update NodeName={nodes} State=DOWN "
        "Reason=stuck-epilog` ends the jobs in Slurm, then `State=RESUME` once the node is "
        "fixed (a slurmd problem for the next maintenance window)"
    )


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
