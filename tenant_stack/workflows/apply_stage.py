"""Applying one tenant's merged offboarding stage on Temporal: the stack's `up`, and while the
drain still waits for the tenant's queue, a durable wait and the `up` again, up to `rounds`
times. The workflow's id is the stack's name, so no other operation runs on the stack for as
long as it applies the stage, waits included. It never moves a stage: it applies the one the
pinned spec says, which a reviewed pull request set."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenant_stack.fleet.rollout import UpdateResult
    from tenant_stack.fleet.stage import still_draining
    from tenant_stack.workflows.activities import HEARTBEAT_TIMEOUT, StackTask
    from tenant_stack.workflows.pin import RunPin
    from tenant_stack.workflows.stack_operations import update


@dataclass(frozen=True)
class StageRun:
    stack: str
    stage: str  # what the pinned spec says, checked by the command that starts the run
    project: str
    pin: RunPin
    every_seconds: int  # the wait between two `up`s while the drain waits
    rounds: int  # `up`s at most
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT  # seconds without a beat: the worker died


@dataclass(frozen=True)
class StageReport:
    pin: RunPin
    stage: str
    rounds: list[dict[str, Any]]  # each `up` as UpdateResult.as_json, plus its worker


@workflow.defn(name="ApplyStage")
class ApplyStage:
    @workflow.run
    async def run(self, run: StageRun) -> StageReport:
        rounds: list[dict[str, Any]] = []
        task = StackTask(run.stack, run.project, run.pin, heartbeat_timeout=run.heartbeat_timeout)
        while len(rounds) < run.rounds:
            if rounds:
                await asyncio.sleep(run.every_seconds)  # a durable timer: no worker holds it
            rounds.append(await update(task))
            if not still_draining(UpdateResult.from_json(rounds[-1])):
                break
        return StageReport(run.pin, run.stage, rounds)
