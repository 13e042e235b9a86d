"""Applying one tenant's offboarding stage once its pull request is merged: the stack's `up`,
rerun while the drain waits for the tenant's queue (a drain can take days; no `up` holds the
stack's lock that long), and nothing more. Stages move only by reviewed pull request: the stage
to apply is the one the spec says, checked before anything runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from providers.slurm.drain_provider import NEEDS_HARD_DRAIN, STILL_DRAINING
from tenant_stack.errors import StackError
from tenant_stack.fleet.rollout import UpdateResult
from tenant_stack.platform import Platform
from tenant_stack.spec import load_spec

__all__ = ["applied", "require_spec_stage", "still_draining"]


def require_spec_stage(project: Path, stack: str, stage: str, platform: Platform) -> None:
    """A StackError unless the tenant's spec in `project` is at `stage`: the operator names the
    stage their merged pull request set, so that a run never applies another."""
    spec = load_spec(project / "tenants", stack, platform)
    if spec.lifecycle.stage != stage:
        raise StackError(
            f"--stage {stage}: {project / 'tenants' / f'{stack}.yaml'} says lifecycle.stage: "
            f"{spec.lifecycle.stage}; stages move only by a reviewed pull request: merge the one "
            f"setting {stage}, check it out on the workers, then run this again"
        )


def still_draining(update: UpdateResult) -> bool:
    """Whether the `up` failed only because the drain still waits for jobs that may yet end on
    their own: worth running again later. A drain past its timeout in graceful mode is not:
    that needs a pull request switching it to hard."""
    return (
        update.status == "failed"
        and STILL_DRAINING in update.error
        and NEEDS_HARD_DRAIN not in update.error
    )


def applied(rounds: Sequence[UpdateResult]) -> bool:
    """Whether the stage is applied: the last `up` succeeded."""
    return bool(rounds) and rounds[-1].status in ("changed", "unchanged")
