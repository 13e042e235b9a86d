"""`gpu-tenants drift [STACK...]`: every tenant stack's drift, per layer, resource and property."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tenant_stack.commands.options import (
    add_output_format,
    add_project,
    add_slugs,
    add_tenants,
    add_workers,
    stacks,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import paint, wants_colour

if TYPE_CHECKING:
    from tenant_stack.fleet.drift import StackDrift


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "drift",
        help="what changed behind Pulumi's back, in every tenant stack",
        description="Runs the engine's drift check (`pulumi refresh --preview-only`: each "
        "provider reads its resources live; nothing is changed and no stack lock is taken) on "
        "every tenant stack, several at a time, and reports per stack, layer, resource and "
        "property the recorded and the live value (secrets masked). An offboarded stack is "
        "checked for what it retains. A stack that cannot be checked is reported as an error "
        "and the others are still checked. Progress goes to stderr.",
        epilog="Exit status: 0 every stack clean, 1 drift found, 2 a stack could not be checked "
        "or the command could not run.",
    )
    add_slugs(command, "every tenant stack")
    add_output_format(command)
    add_workers(command, "stacks checked")
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants drift", "every tenant stack, as many at once as there are cores"),
        ("gpu-tenants drift tenant-foo tenant-bar -o json", "two stacks, for a script"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.fleet import drift

    project = stacks(args)
    names = args.slugs or project.tenants()
    colour = wants_colour(sys.stderr)
    finished = 0

    def progress(stack: StackDrift) -> None:
        nonlocal finished
        finished += 1
        print(drift_progress(stack, finished, len(names), colour), file=sys.stderr, flush=True)

    report = drift.check_fleet(project, names, args.workers, progress)
    if args.json:
        print(json.dumps({"stacks": [stack.as_json() for stack in report]}))
    else:
        print(drift_text(report, wants_colour(sys.stdout)))
    return drift.exit_status(report)


def drift_progress(stack: StackDrift, done: int, total: int, colour: bool) -> str:
    """One line per stack as it ends, for stderr during a long run."""
    found = f", {len(stack.resources)} resources" if stack.resources else ""
    status = paint(stack.status, colour)
    return f"[{done}/{total}] {stack.stack}: {status}{found} ({stack.seconds:.1f}s)"


def drift_text(report: Sequence[StackDrift], colour: bool) -> str:
    """Each stack with its status; under a drifted one, each resource by layer with every
    property's recorded and live value; under a failed one, the engine's words."""
    lines = []
    for stack in report:
        lines.append(f"{stack.stack}: {paint(stack.status, colour)}")
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


def _value(value: Any) -> str:
    return "(none)" if value is None else repr(value) if isinstance(value, str) else str(value)
