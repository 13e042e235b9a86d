"""`gpu-tenants status [SLUG...]`: each tenant's conditions per layer, Ready, stage and next
step."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    PLATFORM,
    add_output_format,
    add_project,
    add_slugs,
    add_tenants,
    chosen_slugs,
    tenants,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import COLOURS, paint, table, wants_colour
from tenant_stack.errors import StackNotFoundError

if TYPE_CHECKING:
    from tenant_stack.diagnosis.run import Status


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "status",
        help="each tenant's conditions per layer, read from the live backends",
        description="For each tenant (default: every spec in tenants/), a condition per layer "
        "(True, False or Unknown, with a reason and a message) computed from the live "
        "backends by the same checks as `diagnose`, an overall Ready, the offboarding stage "
        "and what the next stage waits for. Read-only.",
        epilog="Exit status: 0 every tenant Ready, 1 one is not (a tenant not onboarded yet, "
        "with no stack, is not: nothing of it is read), 2 the command could not run.",
    )
    add_slugs(command)
    add_output_format(command)
    add_project(command)
    add_tenants(command)
    add_examples(
        command,
        ("gpu-tenants status", "every tenant of the project"),
        ("gpu-tenants status tenant-foo -o json", "one tenant, for a script"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.diagnosis.run import not_onboarded, read_status
    from tenant_stack.diagnosis.stages import applied_stage
    from tenant_stack.platform import load_platform
    from tenant_stack.spec import load_spec
    from tenant_stack.stacks import Stacks

    platform = load_platform(PLATFORM)
    specs = tenants(args)
    slugs = chosen_slugs(args)
    stacks = Stacks(args.project)
    reports = []
    for slug in slugs:
        spec = load_spec(specs, slug, platform)
        try:
            applied = applied_stage(stacks.resources(slug))
        except StackNotFoundError:
            reports.append(not_onboarded(spec))
        else:
            reports.append(read_status(spec, platform, applied))
    if args.json:
        print(json.dumps({"tenants": [report.as_json() for report in reports]}))
    else:
        print(status_text(reports, wants_colour(sys.stdout)))
    return 0 if all(report.ready for report in reports) else 1


def status_text(reports: Sequence[Status], colour: bool) -> str:
    """One row per tenant: Ready, each layer's condition and the stage; under a tenant that is
    not Ready, each condition that is not True with its reason and message."""
    if not reports:
        return "no tenant"
    layers = (c.type.removesuffix("Ready") for c in reports[0].conditions[1:])
    rows = [
        (report.tenant, *(c.status for c in report.conditions), report.stage, str(report.days_left))
        for report in reports
    ]
    header = ("TENANT", "READY", *layers, "STAGE", "DAYS LEFT")
    lines = [table(header, rows, lambda cell: paint(cell, colour and cell in COLOURS))]
    for report in reports:
        if report.conditions[0].reason == "NotOnboarded":
            lines.append(f"{report.tenant}: {report.conditions[0].message}")
            continue
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
        if report.days_left < 0 and report.stage == "active":
            lines.append(
                f"{report.tenant}: the contract term ended {report.term_end.isoformat()}: "
                f"`gpu-tenants stage {report.tenant} frozen`, or renew it"
            )
        lines += [
            f"{report.tenant}: {n.kind} notice sent {n.at:%Y-%m-%d %H:%M} UTC to {n.to}"
            for n in report.notices
        ]
        following = report.next_stage or "none"
        lines.append(f"{report.tenant}: stage {report.stage}; next {following}, waits for:")
        lines += [f"  - {blocker}" for blocker in report.blockers]
    return "\n".join(lines)
