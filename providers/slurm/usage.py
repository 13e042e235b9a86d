"""What a tenant's accounts use now, as Slurm reports it: the GPUs its running jobs hold (`squeue
--json`, each job's allocated TRES) and the GPU-minutes each association has used against its
budget (`sshare`, whose GrpTRESRaw is the decayed usage in TRES-minutes, beside GrpTRESMins).
Read-only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from providers.command import Transport
from providers.slurm import commands
from providers.slurm.options import GPU
from providers.slurm.transport import SlurmRunner

__all__ = ["GpuMinutes", "RunningJob", "SlurmUsage", "gpus_of", "parse_running", "parse_sshare"]


@dataclass(frozen=True)
class RunningJob:
    id: int
    account: str
    user: str
    gpus: int


@dataclass(frozen=True)
class GpuMinutes:
    account: str
    user: str  # "" for the account's own row
    used: int
    budget: int | None  # GrpTRESMins=gres/gpu, None when unlimited


def gpus_of(tres: str) -> int:
    """The GPUs in a TRES list (`cpu=2,mem=4G,node=1,gres/gpu=2`, or `gres/gpu:h100=2`)."""
    total = 0
    for item in tres.split(","):
        name, _, count = item.partition("=")
        if (name == GPU or name.startswith(GPU + ":")) and count.isdigit():
            total += int(count)
    return total


def parse_running(text: str) -> list[RunningJob]:
    try:
        jobs = json.loads(text)["jobs"]
        return [
            RunningJob(
                int(job["job_id"]),
                str(job["account"]),
                str(job["user_name"]),
                gpus_of(str(job.get("tres_alloc_str") or "")),
            )
            for job in jobs
            if job.get("job_state") == "RUNNING"
        ]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"squeue --json printed something else: {error}") from error


def parse_sshare(text: str) -> list[GpuMinutes]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        account, user, budget, raw = line.split("|")[:4]
        limit = gpus_of(budget) if GPU in budget else None
        rows.append(GpuMinutes(account.strip(), user.strip(), gpus_of(raw), limit))
    return rows


class SlurmUsage:
    def __init__(self, transport: Transport) -> None:
        self.runner = SlurmRunner(transport)

    def running(self, accounts: Sequence[str]) -> list[RunningJob]:
        # squeue 22.05 ignores its filters (--states, --accounts) with --json: every job of the
        # cluster comes back, so the accounts are picked here.
        doing = "reading the accounts' running jobs"
        jobs = self.runner.read(commands.queue_json(), doing, parse_running)
        return [job for job in jobs if job.account in accounts]

    def gpu_minutes(self, accounts: Sequence[str]) -> list[GpuMinutes]:
        argv = commands.sshare(accounts, "Account,User,GrpTRESMins,GrpTRESRaw")
        return self.runner.read(argv, "reading the accounts' GPU-minutes", parse_sshare)
