"""Runbook step 7 run for real: the stack's smoke-test scripts submitted as one of the tenant's
users, followed to their end (bounded), and judged (`smoke_judging`). A run is recorded in the
tenant's retention ledger (action `smoke-run`), where the handover sheet finds the last one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from providers.retention.ledger import Entry, Ledger
from providers.slurm.batch import BatchJobs, JobRecord
from tenant_stack.errors import TenantError
from tenant_stack.handover import smoke_tests
from tenant_stack.platform import Platform
from tenant_stack.smoke_judging import (
    Verdict,
    judge_all_reduce,
    judge_gpus,
    judge_partition,
    judge_scratch,
)
from tenant_stack.spec import TenantSpec, User

__all__ = [
    "SMOKE_ACTION",
    "SmokeRun",
    "last_smoke_run",
    "record_run",
    "run_smoke",
]

SMOKE_ACTION = "smoke-run"
# How often the jobs' states are read while waiting.
_POLL = 2.0
# The scripts' names in the stack's `smoke_tests` output, by check.
_SINGLE, _TWO_NODES, _STORAGE = "single-node-gpu.sh", "two-node-nccl.sh", "storage.sh"


@dataclass(frozen=True)
class SmokeRun:
    slug: str
    user: str
    output_dir: str
    verdicts: tuple[Verdict, ...]

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def summary(self) -> str:
        return "; ".join(f"{v.check} {v.result}: {v.evidence}" for v in self.verdicts)


def run_smoke(
    spec: TenantSpec,
    platform: Platform,
    jobs: BatchJobs,
    *,
    user: User,
    output_dir: str,
    write_mib: int,
    timeout: float,
    progress: Callable[[str], None],
) -> SmokeRun:
    """Submits the three scripts as `user`, waits for them (TenantError after `timeout`
    seconds, the jobs cancelled) and judges what they printed. `write_mib` is the storage
    test's write (the runbook's is 10240)."""
    shown = jobs.partition_nodes(spec.partition)
    partition = judge_partition(spec.slug, spec.partition, shown, spec.reservation.nodes)
    jobs.make_output_dir(output_dir, user.uid, spec.identity.gid)
    scripts = smoke_tests(spec)
    submitted = {
        name: jobs.submit(
            scripts[name],
            name=f"smoke-{name.removesuffix('.sh')}",
            uid=user.uid,
            gid=spec.identity.gid,
            output=_output(output_dir, name, "%j"),
            export={"SMOKE_WRITE_MIB": str(write_mib)},
        )
        for name in (_SINGLE, _TWO_NODES, _STORAGE)
    }
    progress(
        f"submitted as {user.username}: "
        + ", ".join(f"{name} job {job}" for name, job in submitted.items())
    )
    # Taken from slurmctld now, while it holds the jobs: each job's record is the run of its id
    # submitted from then on, never an earlier run of the same id that slurmdbd still shows.
    records = _wait(jobs, jobs.submit_times(list(submitted.values())), timeout, progress)

    def outcome(name: str) -> tuple[JobRecord, list[str], str]:
        record = records[submitted[name]]
        printed = jobs.read(_output(output_dir, name, record.id), user.uid, spec.identity.gid)
        return record, list(record.hosts), printed

    min_busbw = platform.skus[spec.contract.gpu_sku].min_all_reduce_busbw_gbps
    two_nodes, ran_on, printed = outcome(_TWO_NODES)
    verdicts = (
        partition,
        judge_gpus(*outcome(_SINGLE), asked=1),
        judge_all_reduce(two_nodes, ran_on, shown, printed, min_busbw, spec.slug),
        judge_scratch(*outcome(_STORAGE), scratch=f"/scratch/{spec.slug}"),
    )
    return SmokeRun(spec.slug, user.username, output_dir, verdicts)


def _output(output_dir: str, script: str, job: str) -> str:
    """Where the job of `script` writes its output (`%j`: sbatch's own placeholder for its id)."""
    return f"{output_dir}/{script.removesuffix('.sh')}-{job}.out"


def _wait(
    jobs: BatchJobs,
    submitted: Mapping[str, datetime],
    timeout: float,
    progress: Callable[[str], None],
) -> dict[str, JobRecord]:
    ids = list(submitted)
    deadline = time.monotonic() + timeout
    said = ""
    while True:
        records = jobs.records(submitted)
        states = ", ".join(f"{i} {records[i].state.lower()}" for i in ids if i in records)
        if states != said:
            progress(f"jobs: {states or 'not in accounting yet'}")
            said = states
        if all(i in records and records[i].finished for i in ids):
            return records
        if time.monotonic() > deadline:
            jobs.cancel(ids)
            raise TenantError(
                f"the smoke jobs did not finish within {timeout:g} s ({states}); they were "
                "cancelled: see `squeue -p` for what held them, or rerun with a longer --timeout"
            )
        time.sleep(_POLL)


def record_run(ledger: Ledger, run: SmokeRun) -> Entry:
    details = {
        "result": "passed" if run.passed else "failed",
        "user": run.user,
        "checks": run.summary(),
    }
    return ledger.append(run.slug, SMOKE_ACTION, datetime.now(UTC), details)


def last_smoke_run(entries: Sequence[Entry]) -> Entry | None:
    return next((e for e in reversed(entries) if e.action == SMOKE_ACTION), None)
