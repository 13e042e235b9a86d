"""What the `fleet` and `worker` commands do, over a Temporal client."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    WorkflowFailureError,
)
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from providers import environment
from tenant_stack.errors import StackError
from tenant_stack.fleet.drift import StackDrift
from tenant_stack.fleet.rollout import UpdateResult, Wave
from tenant_stack.workflows.activities import HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT_MIN
from tenant_stack.workflows.apply_stage import ApplyStage, StageReport, StageRun
from tenant_stack.workflows.drift_workflow import FleetDrift, FleetReport, FleetRun
from tenant_stack.workflows.pin import RunPin
from tenant_stack.workflows.rollout_workflow import Rollout, RolloutReport, RolloutRun
from tenant_stack.workflows.stack_operations import busy
from tenant_stack.workflows.worker import connect, serve


@dataclass(frozen=True)
class FleetDriftResult:
    workflow: str  # its id, for `temporal workflow show --workflow-id`
    pin: dict[str, str]
    stacks: list[dict[str, Any]]  # the `drift` command's report per stack, plus its worker

    def drifts(self) -> list[StackDrift]:
        return [StackDrift.from_json(stack) for stack in self.stacks]


def fleet_drift(
    project: Path, stacks: Sequence[str], workers: int, task_queue: str, no_wait: bool
) -> FleetDriftResult | None:
    """Starts a FleetDrift of `stacks`; its report, or None with its id printed (`no_wait`)."""
    pin = RunPin.of(project)
    run = FleetRun(list(stacks), str(project.absolute()), pin, workers, heartbeat_timeout())
    workflow_id = _workflow_id("fleet-drift")
    report: FleetReport | None = _run(FleetDrift.run, run, workflow_id, task_queue, no_wait)
    if report is None:
        return None
    return FleetDriftResult(workflow_id, asdict(report.pin), report.stacks)


@dataclass(frozen=True)
class RolloutResult:
    workflow: str  # its id, for `temporal workflow show --workflow-id`
    pin: dict[str, str]
    waves: list[list[dict[str, Any]]]  # each stack's update, plus its worker

    def updates(self) -> list[Wave]:
        return [Wave(tuple(UpdateResult.from_json(s) for s in wave)) for wave in self.waves]


def fleet_rollout(
    project: Path, waves: Sequence[Sequence[str]], workers: int, task_queue: str, no_wait: bool
) -> RolloutResult | None:
    """Starts a Rollout of `waves`; its report, or None with its id printed (`no_wait`)."""
    pin = RunPin.of(project)
    run = RolloutRun(
        [list(w) for w in waves], str(project.absolute()), pin, workers, heartbeat_timeout()
    )
    workflow_id = _workflow_id("fleet-rollout")
    report: RolloutReport | None = _run(Rollout.run, run, workflow_id, task_queue, no_wait)
    if report is None:
        return None
    return RolloutResult(workflow_id, asdict(report.pin), report.waves)


@dataclass(frozen=True)
class StageResult:
    workflow: str  # its id, for `temporal workflow show --workflow-id`
    pin: dict[str, str]
    stage: str
    rounds: list[dict[str, Any]]  # each `up`, plus its worker

    def updates(self) -> list[UpdateResult]:
        return [UpdateResult.from_json(update) for update in self.rounds]


def apply_stage(
    project: Path,
    stack: str,
    stage: str,
    every: timedelta,
    rounds: int,
    task_queue: str,
    no_wait: bool,
) -> StageResult | None:
    """Starts an ApplyStage of `stack` at `stage`; its report, or None with its id printed."""
    pin = RunPin.of(project)
    seconds = int(every.total_seconds())
    run = StageRun(stack, stage, str(project.absolute()), pin, seconds, rounds, heartbeat_timeout())
    # Its id is the stack's: no other operation runs on the stack while the stage is applied.
    report: StageReport | None = _run(ApplyStage.run, run, stack, task_queue, no_wait)
    if report is None:
        return None
    return StageResult(stack, asdict(report.pin), report.stage, report.rounds)


def _run(workflow: Any, run: Any, workflow_id: str, task_queue: str, no_wait: bool) -> Any:
    """Starts `workflow` with `run` and waits for its report, or prints its id (`no_wait`)."""

    async def start() -> Any:
        client = await _client()
        try:
            handle = await client.start_workflow(
                workflow,
                run,
                id=workflow_id,
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        except WorkflowAlreadyStartedError:
            raise StackError(busy(workflow_id)) from None
        if no_wait:
            print(workflow_id)
            return None
        try:
            return await handle.result()
        except WorkflowFailureError as failed:
            raise StackError(f"workflow {workflow_id} failed: {failed.cause}") from None

    return asyncio.run(start())


def heartbeat_timeout() -> float:
    """GPU_TENANTS_HEARTBEAT_TIMEOUT (seconds; default HEARTBEAT_TIMEOUT): how long the run's
    workflows wait for a beat before they take its worker for dead and retry its stack elsewhere.
    Recorded in the run's input, so that every worker and every replay use the same."""
    name = "GPU_TENANTS_HEARTBEAT_TIMEOUT"
    try:
        seconds = environment.seconds(os.environ, name, f"{HEARTBEAT_TIMEOUT:g}")
    except ValueError as error:
        raise StackError(str(error)) from None
    if seconds < HEARTBEAT_TIMEOUT_MIN:
        raise StackError(
            f"{name}={seconds:g}: give at least {HEARTBEAT_TIMEOUT_MIN:g} seconds; shorter, a "
            f"worker busy for a moment is taken for dead (default {HEARTBEAT_TIMEOUT:g})"
        )
    return seconds


def _workflow_id(kind: str) -> str:
    return f"{kind}-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"


# The Schedule of the fleet's drift check; its runs' workflow ids start with it.
DRIFT_SCHEDULE = "gpu-tenants-drift"


def schedule_drift(project: Path, every: timedelta, workers: int, task_queue: str) -> str:
    """Makes the drift Schedule, or updates it to this checkout's pin and `every`: a check of
    every tenant stack of `project` each `every`, never two at once (one that would start while
    the last runs is skipped). Run it again after deploying a new commit to the workers."""
    run = FleetRun([], str(project.absolute()), RunPin.of(project), workers, heartbeat_timeout())
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(
            FleetDrift.run, run, id=DRIFT_SCHEDULE, task_queue=task_queue
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )

    async def make() -> None:
        client = await _client()
        try:
            await client.create_schedule(DRIFT_SCHEDULE, schedule)
        except ScheduleAlreadyRunningError:
            await client.get_schedule_handle(DRIFT_SCHEDULE).update(
                lambda _: ScheduleUpdate(schedule=schedule)
            )

    asyncio.run(make())
    return DRIFT_SCHEDULE


def run_worker(task_queue: str, concurrency: int) -> int:
    async def work() -> None:
        await serve(await _client(), task_queue, concurrency)

    asyncio.run(work())
    return 0


async def _client() -> Client:
    try:
        return await connect()
    except RuntimeError as error:
        raise StackError(
            f"cannot reach Temporal: {error}; set TEMPORAL_ADDRESS (for the sandbox: "
            'eval "$(make -s env)") and check the service answers `temporal operator cluster '
            "health`"
        ) from None
