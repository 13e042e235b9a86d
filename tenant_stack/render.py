"""The operator commands' reports for a person at a terminal: plain text, coloured only when the
stream is a terminal and NO_COLOR is unset (https://no-color.org)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from tenant_stack.diagnosis.run import Status
from tenant_stack.fleet.drift import StackDrift
from tenant_stack.fleet.review import TenantPreview
from tenant_stack.fleet.rollout import StackUpdate, Wave
from tenant_stack.fleet.stage import applied

__all__ = [
    "drift_progress",
    "drift_text",
    "preview_line",
    "rollout_text",
    "stage_text",
    "status_text",
    "table",
    "wants_colour",
]

_COLOURS = {"clean": "32", "drift": "33", "error": "31", "no-changes": "32", "changes": "33"}
_COLOURS |= {"failed": "31", "changed": "33", "unchanged": "32", "not run": "33"}
_COLOURS |= {"True": "32", "False": "31", "Unknown": "33"}


def wants_colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")


def drift_progress(stack: StackDrift, done: int, total: int, colour: bool) -> str:
    """One line per stack as it ends, for stderr during a long run."""
    found = f", {len(stack.resources)} resources" if stack.resources else ""
    status = _paint(stack.status, colour)
    return f"[{done}/{total}] {stack.stack}: {status}{found} ({stack.seconds:.1f}s)"


def preview_line(preview: TenantPreview, colour: bool) -> str:
    """A tenant's preview as it ends, for stderr: its status and counts."""
    counts = ", ".join(f"{n} {op}" for op, n in preview.counts().items() if n)
    return _paint(preview.status, colour) + (f" ({counts})" if counts else "")


def drift_text(report: Sequence[StackDrift], colour: bool) -> str:
    """Each stack with its status; under a drifted one, each resource by layer with every
    property's recorded and live value; under a failed one, the engine's words."""
    lines = []
    for stack in report:
        lines.append(f"{stack.stack}: {_paint(stack.status, colour)}")
        for resource in stack.resources:
            where = f"  {resource.layer} {resource.name} ({resource.type})"
            if resource.change == "gone":
                lines.append(f"{where}: gone from the backend (recorded in the state)")
                continue
            lines.append(f"{where}:")
            for prop in resource.properties:
                recorded, live = _value(prop.recorded), _value(prop.live)
                lines.append(f"    {prop.path}: recorded {recorded}, live {live}")
        if stack.error:
            lines.extend(f"  {line}" for line in stack.error.splitlines())
    counts = Counter(stack.status for stack in report)
    tally = ", ".join(f"{counts[status]} {status}" for status in ("clean", "drift", "error"))
    lines.append(f"{len(report)} stacks: {tally}")
    return "\n".join(lines)


def rollout_text(waves: Sequence[Wave], colour: bool) -> str:
    """Each wave's stacks with what their `up` changed; under a failed one, the engine's words;
    then which stacks changed and where the rollout stopped."""
    lines = []
    for number, wave in enumerate(waves, 1):
        lines.append(f"wave {number}:")
        lines += [_update_lines(f"  {stack.stack}", stack, colour) for stack in wave.stacks]
    changed = [s.stack for wave in waves for s in wave.stacks if s.status == "changed"]
    lines.append(f"changed: {', '.join(changed) or 'no stack'}")
    failed = next((number for number, wave in enumerate(waves, 1) if wave.failed), None)
    if failed is not None:
        lines.append(f"stopped at wave {failed} of {len(waves)}: a stack failed")
    return "\n".join(lines)


def stage_text(stack: str, stage: str, rounds: Sequence[StackUpdate], colour: bool) -> str:
    """Each `up` of the stage's application, then whether the stage is applied."""
    lines = [
        _update_lines(f"{stack} up {number}", up, colour) for number, up in enumerate(rounds, 1)
    ]
    lines.append(f"{stack}: stage {stage} {'applied' if applied(rounds) else 'not applied'}")
    return "\n".join(lines)


def _update_lines(label: str, update: StackUpdate, colour: bool) -> str:
    """One stack's `up`: its status, the engine's counts and time, then what it said."""
    counts = ", ".join(f"{n} {op}" for op, n in update.changes.items())
    took = f" ({counts})" if counts else ""
    took += f" {update.seconds:.1f}s" if update.status != "not run" else ""
    lines = [f"{label}: {_paint(update.status, colour)}{took}"]
    indent = " " * (len(label) - len(label.lstrip()) + 2)
    for said in (update.recovered, update.error):
        lines += [f"{indent}{line}" for line in said.splitlines()]
    return "\n".join(lines)


def table(
    header: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
    paint: Callable[[str], str] = str,
) -> str:
    """Columns aligned on the cells' text; `paint` may colour a cell without moving them."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            paint(str(cell)) + " " * (width - len(str(cell)))
            for cell, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in [header, *rows]
    )


def status_text(reports: Sequence[Status], colour: bool) -> str:
    """One row per tenant: Ready, each layer's condition and the stage; under a tenant that is
    not Ready, each condition that is not True with its reason and message."""
    if not reports:
        return "no tenant"
    layers = (c.type.removesuffix("Ready") for c in reports[0].conditions[1:])
    rows = [
        (report.tenant, *(c.status for c in report.conditions), report.stage) for report in reports
    ]
    header = ("TENANT", "READY", *layers, "STAGE")
    lines = [table(header, rows, lambda cell: _paint(cell, colour and cell in _COLOURS))]
    for report in reports:
        for condition in report.conditions[1:]:
            if condition.status != "True":
                lines.append(f"{report.tenant}: {condition.type} {condition.status} "
                             f"({condition.reason}): {condition.message}")  # fmt: skip
        if report.usage:
            used = ", ".join(
                f"{s.scope} {s.used}/{s.cap}" + (" OVER" if s.over else "")
                for s in report.usage.scopes
            )
            lines.append(f"{report.tenant}: GPUs in use / cap: {used}")
        following = report.next_stage or "none"
        lines.append(f"{report.tenant}: stage {report.stage}; next {following}, waits for:")
        lines += [f"  - {blocker}" for blocker in report.blockers]
    return "\n".join(lines)


def _value(value: Any) -> str:
    return "(none)" if value is None else repr(value) if isinstance(value, str) else str(value)


def _paint(status: str, colour: bool) -> str:
    return f"\033[{_COLOURS[status]}m{status}\033[0m" if colour else status
