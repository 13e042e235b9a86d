"""A rollout: `pulumi up` of a list of stacks in waves, the stacks of one wave at once, stopping
after the first wave in which a stack fails, so that a change (a provider's new code, a platform
setting) reaches a few tenants before it reaches all. The waves run on Temporal
(`tenant_stack.workflows.rollout_workflow`); here are one stack's update and the report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tenant_stack.fleet.engine_events import failure
from tenant_stack.stacks import Engine

__all__ = ["UpdateResult", "Wave", "exit_status", "finish_update", "not_run"]

Status = Literal["changed", "unchanged", "failed", "not run"]


@dataclass(frozen=True)
class UpdateResult:
    stack: str
    status: Status
    seconds: float
    changes: dict[str, int] = field(default_factory=dict)  # resources per operation, "same" out
    error: str = ""  # the engine's and the backend's own words, when status is "failed"
    recovered: str = ""  # what an earlier attempt, killed, left and how it was cleared

    def as_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "status": self.status,
            "seconds": round(self.seconds, 2),
            "changes": self.changes,
            "error": self.error,
            "recovered": self.recovered,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UpdateResult:
        return cls(
            data["stack"],
            data["status"],
            data["seconds"],
            dict(data["changes"]),
            data["error"],
            data["recovered"],
        )


@dataclass(frozen=True)
class Wave:
    stacks: tuple[UpdateResult, ...]

    @property
    def failed(self) -> bool:
        return any(stack.status == "failed" for stack in self.stacks)


def finish_update(stack: str, result: Engine, seconds: float, recovered: str = "") -> UpdateResult:
    """The update of `stack` from what its `up` (Stacks.start_up) printed: what changed, by the
    engine's own summary, or the engine's errors."""
    events = result.events()
    if result.returncode != 0:
        return UpdateResult(
            stack, "failed", seconds, error=failure(result, events), recovered=recovered
        )
    summary: dict[str, Any] = next((e["summaryEvent"] for e in events if "summaryEvent" in e), {})
    changes = {
        op: count
        for op, count in (summary.get("resourceChanges") or {}).items()
        if op != "same" and count
    }
    status: Status = "changed" if changes else "unchanged"
    return UpdateResult(stack, status, seconds, changes, recovered=recovered)


def not_run(stack: str) -> UpdateResult:
    """A stack of a wave after the one that failed."""
    return UpdateResult(stack, "not run", 0.0)


def exit_status(waves: Sequence[Wave]) -> int:
    """`fleet rollout`'s exit status: 0 every wave applied, 1 a wave failed (the rollout stopped
    there)."""
    return 1 if any(wave.failed for wave in waves) else 0
