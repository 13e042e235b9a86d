"""What the `fleet` and `worker` commands do, over a Temporal client."""

from __future__ import annotations

import asyncio
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

from tenant_stack.errors import StackError
from tenant_stack.fleet.drift import StackDrift
from tenant_stack.workflows.fleet_drift import FleetDrift, FleetRun
from tenant_stack.workflows.pin import RunPin
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
    run = FleetRun(list(stacks), str(project.absolute()), RunPin.of(project), workers)
    workflow_id = f"fleet-drift-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"

    async def start() -> FleetDriftResult | None:
        client = await _client()
        handle = await client.start_workflow(
            FleetDrift.run,
            run,
            id=workflow_id,
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
        if no_wait:
            print(workflow_id)
            return None
        try:
            report = await handle.result()
        except WorkflowFailureError as failed:
            raise StackError(f"workflow {workflow_id} failed: {failed.cause}") from None
        return FleetDriftResult(workflow_id, asdict(report.pin), report.stacks)

    return asyncio.run(start())


# The Schedule of the fleet's drift check; its runs' workflow ids start with it.
DRIFT_SCHEDULE = "gpu-tenants-drift"


def schedule_drift(project: Path, every: timedelta, workers: int, task_queue: str) -> str:
    """Makes the drift Schedule, or updates it to this checkout's pin and `every`: a check of
    every tenant stack of `project` each `every`, never two at once (one that would start while
    the last runs is skipped). Run it again after deploying a new commit to the workers."""
    run = FleetRun([], str(project.absolute()), RunPin.of(project), workers)
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
