"""Fleet drift on Temporal: one `StackDriftCheck` child workflow per stack, at most `workers` at a
time, and one report at the end in the fleet command's format.

Every operation on a stack is a workflow whose id is the stack's name, so the Temporal service
itself refuses a second operation on a stack while one runs: that stack's line in the report is
an error naming the running workflow, and the other stacks are still checked. (Pulumi's stack
lock stays the guard against anything outside Temporal; the drift check takes none.)"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from tenant_stack.fleet.drift import StackDrift
    from tenant_stack.workflows.activities import (
        HEARTBEAT_TIMEOUT,
        StackTask,
        drift_stack,
        tenant_stacks,
    )
    from tenant_stack.workflows.pin import RunPin

# A refresh preview of a large stack reads every resource from its backend.
STACK_CHECK_TIMEOUT = timedelta(minutes=30)
# Read-only, so safe to retry at once, even while the attempt a worker died in might still be
# running somewhere: a worker that died mid-check, a backend that blinked.
STACK_CHECK_RETRIES = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=2))


@dataclass(frozen=True)
class FleetRun:
    stacks: list[str]  # none: every tenant stack when the run starts (a scheduled run)
    project: str
    pin: RunPin
    workers: int  # stacks checked at once


@dataclass(frozen=True)
class FleetReport:
    pin: RunPin
    stacks: list[dict[str, Any]]  # the fleet command's per-stack report, plus its worker


@workflow.defn(name="StackDriftCheck")
class StackDriftCheck:
    @workflow.run
    async def run(self, task: StackTask) -> dict[str, Any]:
        report: dict[str, Any] = await workflow.execute_activity(
            drift_stack,
            task,
            start_to_close_timeout=STACK_CHECK_TIMEOUT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=STACK_CHECK_RETRIES,
        )
        return report


@workflow.defn(name="FleetDrift")
class FleetDrift:
    @workflow.run
    async def run(self, run: FleetRun) -> FleetReport:
        at_once = asyncio.Semaphore(max(run.workers, 1))

        async def check(stack: str) -> dict[str, Any]:
            async with at_once:
                try:
                    report: dict[str, Any] = await workflow.execute_child_workflow(
                        StackDriftCheck.run,
                        StackTask(stack, run.project, run.pin),
                        id=stack,
                        # One operation at a time per stack; one after another is fine.
                        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                    )
                    return report
                except WorkflowAlreadyStartedError:
                    return _error(
                        stack,
                        f"another operation on {stack} is running (workflow id {stack}); "
                        f"`temporal workflow describe --workflow-id {stack}` shows which",
                    )
                except ChildWorkflowError as failed:
                    return _error(stack, _first_cause(failed))

        stacks = run.stacks or await workflow.execute_activity(
            tenant_stacks,
            run.project,
            start_to_close_timeout=timedelta(minutes=5),
            retry_policy=STACK_CHECK_RETRIES,
        )
        reports = await asyncio.gather(*(check(stack) for stack in stacks))
        return FleetReport(run.pin, list(reports))


def _first_cause(error: BaseException) -> str:
    """What went wrong first: a child's failure wraps its activity's, which wraps the error."""
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error)


def _error(stack: str, message: str) -> dict[str, Any]:
    return StackDrift(stack, "error", 0.0, error=message).as_json()
