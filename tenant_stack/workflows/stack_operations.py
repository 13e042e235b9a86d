"""The operations on one stack, each a child workflow whose id is the stack's name, so that the
Temporal service itself refuses a second operation on a stack while one runs. (Pulumi's stack
lock stays the guard against anything outside Temporal.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    WorkflowAlreadyStartedError,
)

with workflow.unsafe.imports_passed_through():
    from tenant_stack.workflows.activities import (
        ENGINE_ELSEWHERE,
        StackTask,
        drift_stack,
        reap_session,
        update_stack,
    )
    from tenant_stack.workflows.pin import RunPin

# A refresh preview of a large stack reads every resource from its backend; an `up` of a new
# tenant waits on its reservation and every backend.
STACK_OPERATION_TIMEOUT = timedelta(minutes=30)
# A drift check is read-only, so safe to retry at once, even while the attempt a worker died in
# might still be running somewhere: a worker that died mid-check, a backend that blinked.
STACK_CHECK_RETRIES = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=2))
# An update is retried only after its worker died (a failed `up` is a report, not an error),
# and each retry first makes sure the dead worker's engine is gone (activities.update_stack).
STACK_UPDATE_RETRIES = RetryPolicy(
    maximum_attempts=3,
    initial_interval=timedelta(seconds=2),
    non_retryable_error_types=["PinMismatch", ENGINE_ELSEWHERE],
)
# How long a dead engine's host has to come back and make sure it is gone.
REAP_WAIT = timedelta(hours=1)


@workflow.defn(name="StackDriftCheck")
class StackDriftCheck:
    @workflow.run
    async def run(self, task: StackTask) -> dict[str, Any]:
        return await _on_a_worker(drift_stack, task, STACK_CHECK_RETRIES)


@workflow.defn(name="StackUpdate")
class StackUpdate:
    @workflow.run
    async def run(self, task: StackTask) -> dict[str, Any]:
        return await update(task)


async def update(task: StackTask) -> dict[str, Any]:
    """The stack's `up` as an activity, from a workflow that holds the stack (its id). When a
    dead attempt's engine ran on another host, that host's own queue makes sure it is gone
    first (a worker there reaps it); the `up` then runs again, after clearing the stack."""
    try:
        return await _on_a_worker(update_stack, task, STACK_UPDATE_RETRIES)
    except ActivityError as failed:
        cause = failed.cause
        if not (isinstance(cause, ApplicationError) and cause.type == ENGINE_ELSEWHERE):
            raise
        (engine,) = cause.details
    host = engine["host"]
    try:
        await workflow.execute_activity(
            reap_session,
            engine,
            task_queue=host_queue(workflow.info().task_queue, host),
            schedule_to_start_timeout=REAP_WAIT,
            start_to_close_timeout=timedelta(minutes=2),
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
    except ActivityError as failed:
        raise ApplicationError(
            f"{task.stack}: a dead worker's engine ran on host {host} (session "
            f"{engine['session']}), and no worker there made sure it is gone within "
            f"{REAP_WAIT}: {failed.cause}. Start a worker on {host}, or, once the session is "
            f"surely gone (the host is off), run `pulumi cancel --stack {task.stack}` and "
            f"`pulumi refresh --stack {task.stack} --clear-pending-creates`, then the rollout "
            "again",
            type="EngineNotReaped",
            non_retryable=True,
        ) from None
    return await _on_a_worker(update_stack, replace(task, reaped=engine), STACK_UPDATE_RETRIES)


def host_queue(task_queue: str, host: str) -> str:
    """The queue that only the workers on `host` serve, for what only that host can do."""
    return f"{task_queue}@{host}"


async def _on_a_worker(
    work: Callable[[StackTask], dict[str, Any]], task: StackTask, retries: RetryPolicy
) -> dict[str, Any]:
    report: dict[str, Any] = await workflow.execute_activity(
        work,
        task,
        start_to_close_timeout=STACK_OPERATION_TIMEOUT,
        # The run's, from its input: the same on replay, whichever worker replays it.
        heartbeat_timeout=timedelta(seconds=task.heartbeat_timeout),
        retry_policy=retries,
    )
    return report


def each_stack(
    operation: Callable[[Any, StackTask], Awaitable[dict[str, Any]]],
    project: str,
    pin: RunPin,
    workers: int,
    refused: Callable[[str, str], dict[str, Any]],
    heartbeat_timeout: float,
) -> Callable[[str], Awaitable[dict[str, Any]]]:
    """`operation` on one stack (on_stack), at most `workers` stacks at a time across the
    calls; `refused(stack, why)` is a stack's report when it could not be run."""
    at_once = asyncio.Semaphore(max(workers, 1))

    async def on(stack: str) -> dict[str, Any]:
        task = StackTask(stack, project, pin, heartbeat_timeout=heartbeat_timeout)
        async with at_once:
            return await on_stack(operation, task, lambda why: refused(stack, why))

    return on


async def on_stack(
    operation: Callable[[Any, StackTask], Awaitable[dict[str, Any]]],
    task: StackTask,
    refused: Callable[[str], dict[str, Any]],
) -> dict[str, Any]:
    """`operation` (a stack workflow's run) as a child workflow with the stack's name as its id:
    its report, or `refused(why)` when another operation holds the stack or the child failed."""
    try:
        report: dict[str, Any] = await workflow.execute_child_workflow(
            operation,
            task,
            id=task.stack,
            # One operation at a time per stack; one after another is fine.
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        return report
    except WorkflowAlreadyStartedError:
        return refused(busy(task.stack))
    except ChildWorkflowError as failed:
        return refused(_first_cause(failed))


def busy(stack: str) -> str:
    """Why an operation on `stack` is refused while another holds it."""
    return (
        f"another operation on {stack} is running (workflow id {stack}); "
        f"`temporal workflow describe --workflow-id {stack}` shows which"
    )


def _first_cause(error: BaseException) -> str:
    """What went wrong first: a child's failure wraps its activity's, which wraps the error."""
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error)
