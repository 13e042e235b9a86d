"""What the next offboarding stage waits for in the live cluster, beyond its pull request: the
spec's stage not yet applied by an `up`, the drain's queue, runbook step 4d (nothing of the
tenant runs once its filesystems are next to go), and the findings that would stop the next
stage's `up` or the destroy (an empty billing export, a filesystem in use).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from providers.errors import BackendError
from providers.kubernetes.workloads import Workloads
from providers.slurm.queue import SlurmQueue
from providers.slurm.settings import Settings as SlurmSettings
from tenant_stack.diagnosis.checks import STAGE_CHECKS
from tenant_stack.diagnosis.findings import Finding
from tenant_stack.spec import TenantSpec

__all__ = ["GATE_TYPE", "applied_stage", "stage_blockers"]

GATE_TYPE = "pulumi-python:dynamic/offboarding:Gate"
# Stages at which the tenant's queue matters: the drain's, and step 4d's.
_QUEUE_STAGES = ("frozen", "drained", "snapshotted", "destroy")
# Stages after which the filesystems go: step 4d's pods.
_DELETE_STAGES = ("snapshotted", "destroy")


def applied_stage(resources: Sequence[dict[str, Any]]) -> str | None:
    """The stage the stack's last complete `up` applied, as its offboarding gate records it (the
    gate depends on every other resource, so an `up` that stopped midway leaves it as it was);
    None when the stack holds no gate."""
    for resource in resources:
        if resource["type"] == GATE_TYPE:
            return str((resource.get("outputs") or {}).get("lifecycle", {}).get("stage"))
    return None


def _read(what: str, read: Callable[[], list[str]]) -> list[str]:
    try:
        return read()
    except BackendError as error:
        return [f"unknown: {what} could not be read ({error})"]


def stage_blockers(spec: TenantSpec, applied: str | None, findings: Sequence[Finding]) -> list[str]:
    """What stands between the tenant and its next stage in the cluster, most pressing first;
    the pull request is `Lifecycle.waits_for`."""
    lifecycle = spec.lifecycle
    stage, slug = lifecycle.stage, spec.slug
    said = []
    if applied is None and stage != "active":
        said.append(f"the stack holds no offboarding record: run `pulumi up --stack {slug}`")
    elif applied is not None and applied != stage:
        said.append(
            f"the spec says stage {stage}, the last complete `up` applied {applied}: run "
            f"`pulumi up --stack {slug}` (again, once what follows is cleared)"
        )

    def queue() -> list[str]:
        jobs = SlurmQueue(SlurmSettings.from_environment().make_transport()).jobs(
            spec.slurm_accounts
        )
        if not jobs:
            return []
        listed = f"{len(jobs)} jobs in the queue: {', '.join(str(job) for job in jobs[:10])}"
        if stage == "frozen":
            return [f"stage drained will wait for them ({lifecycle.drain_mode}): {listed}"]
        if stage == "drained":
            return [
                f"the drain is not complete, {listed}; run `pulumi up --stack {slug}` again once "
                f"they end ({lifecycle.drain_mode} drain, timeout {lifecycle.drain_timeout})"
            ]
        return [f"runbook step 4d: {listed}"]

    def pods() -> list[str]:
        running = [p.name for p in Workloads(spec.namespace).pods() if p.phase == "Running"]
        if not running:
            return []
        names = ", ".join(running[:10])
        return [f"runbook step 4d: {len(running)} pods still run in {spec.namespace}: {names}"]

    if stage in _QUEUE_STAGES:
        said += _read("the Slurm queue", queue)
    if stage in _DELETE_STAGES:
        said += _read(f"the pods of namespace {spec.namespace}", pods)
    said += [f"{f.check}: {f.evidence} (diagnose says the fix)" for f in findings
             if f.check in STAGE_CHECKS]  # fmt: skip
    return said
