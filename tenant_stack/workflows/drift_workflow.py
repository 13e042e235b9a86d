"""Fleet drift on Temporal: one `StackDriftCheck` child workflow per stack, at most `workers` at a
time, and one report at the end in the fleet command's format. A stack another operation holds
is that stack's error naming the running workflow; the other stacks are still checked."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenant_stack.fleet.drift import StackDrift
    from tenant_stack.workflows.activities import HEARTBEAT_TIMEOUT, tenant_stacks
    from tenant_stack.workflows.pin import RunPin
    from tenant_stack.workflows.stack_operations import (
        STACK_CHECK_RETRIES,
        StackDriftCheck,
        each_stack,
    )


@dataclass(frozen=True)
class FleetRun:
    stacks: list[str]  # none: every tenant stack when the run starts (a scheduled run)
    project: str
    pin: RunPin
    workers: int  # stacks checked at once
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT  # seconds without a beat: the worker died


@dataclass(frozen=True)
class FleetReport:
    pin: RunPin
    stacks: list[dict[str, Any]]  # the fleet command's per-stack report, plus its worker


@workflow.defn(name="FleetDrift")
class FleetDrift:
    @workflow.run
    async def run(self, run: FleetRun) -> FleetReport:
        def refused(stack: str, why: str) -> dict[str, Any]:
            return StackDrift(stack, "error", 0.0, error=why).as_json()

        check = each_stack(
            StackDriftCheck.run, run.project, run.pin, run.workers, refused, run.heartbeat_timeout
        )
        stacks = run.stacks or await workflow.execute_activity(
            tenant_stacks,
            run.project,
            start_to_close_timeout=timedelta(minutes=5),
            retry_policy=STACK_CHECK_RETRIES,
        )
        reports = await asyncio.gather(*(check(stack) for stack in stacks))
        return FleetReport(run.pin, list(reports))
