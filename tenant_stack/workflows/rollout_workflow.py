"""A rollout on Temporal: `pulumi up` of each wave's stacks, at most `workers` at a time, one
`StackUpdate` child workflow per stack, and the next wave only once every stack of this one was
updated. A wave in which a stack fails (its `up` failed, or another operation holds it) is the
last: the later waves' stacks are reported as not run, and the report says which stacks changed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenant_stack.fleet.rollout import UpdateResult, not_run
    from tenant_stack.workflows.activities import HEARTBEAT_TIMEOUT
    from tenant_stack.workflows.pin import RunPin
    from tenant_stack.workflows.stack_operations import StackUpdate, each_stack


@dataclass(frozen=True)
class RolloutRun:
    waves: list[list[str]]
    project: str
    pin: RunPin
    workers: int  # stacks updated at once
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT  # seconds without a beat: the worker died


@dataclass(frozen=True)
class RolloutReport:
    pin: RunPin
    waves: list[list[dict[str, Any]]]  # each stack's UpdateResult.as_json, plus its worker


@workflow.defn(name="Rollout")
class Rollout:
    @workflow.run
    async def run(self, run: RolloutRun) -> RolloutReport:
        def refused(stack: str, why: str) -> dict[str, Any]:
            return UpdateResult(stack, "failed", 0.0, error=why).as_json()

        update = each_stack(
            StackUpdate.run, run.project, run.pin, run.workers, refused, run.heartbeat_timeout
        )
        waves: list[list[dict[str, Any]]] = []
        for wave in run.waves:
            if any(stack["status"] == "failed" for done in waves for stack in done):
                waves.append([not_run(stack).as_json() for stack in wave])
                continue
            waves.append(list(await asyncio.gather(*(update(stack) for stack in wave))))
        return RolloutReport(run.pin, waves)
