"""`gpu-tenants fleet drift|rollout|stage|schedule`: fleet work as Temporal workflows, run by
the workers (`gpu-tenants worker`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import timedelta
from typing import TYPE_CHECKING

from tenant_stack.commands.drift import drift_text
from tenant_stack.commands.options import (
    PLATFORM,
    add_output_format,
    add_project,
    add_slug,
    add_slugs,
    add_workers,
    positive,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import paint, wants_colour
from tenant_stack.errors import StackError
from tenant_stack.lifecycle import STAGES

if TYPE_CHECKING:
    from tenant_stack.fleet.rollout import UpdateResult, Wave
    from tenant_stack.stacks import Stacks

# The task queue the fleet's workers serve and its workflows are started on.
TASK_QUEUE = "gpu-tenants-fleet"


def add_workflow_options(command: argparse.ArgumentParser, workers: str | None = None) -> None:
    """What every command that starts a workflow takes: --json, --no-wait, the task queue,
    --workers (what they bound, when the workflow runs stacks at once) and --project."""
    add_output_format(command)
    command.add_argument("--no-wait", action="store_true", help="print the workflow id and return")
    add_task_queue(command)
    if workers is not None:
        add_workers(command, workers)
    add_project(command)


def add_task_queue(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--task-queue",
        default=TASK_QUEUE,
        help=f"the Temporal task queue the workers serve (default: {TASK_QUEUE})",
    )


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fleet = commands.add_parser(
        "fleet",
        help="fleet work as Temporal workflows, run by the workers (TEMPORAL_ADDRESS)",
        description="Starts a workflow on the Temporal service TEMPORAL_ADDRESS names and follows "
        "it to its end, or prints its id (--no-wait). The run is pinned to this checkout's "
        "commit and the project's tenants/, which every worker checks before it touches a stack.",
    )
    # The Temporal SDK's threads can outlive the interpreter's teardown (main says why).
    fleet.set_defaults(run=run, exits_without_teardown=True)
    work = fleet.add_subparsers(dest="workflow", required=True, metavar="WORKFLOW")
    drift = work.add_parser(
        "drift",
        help="every tenant stack's drift, one child workflow per stack (its id: the stack)",
        description="The `drift` command's check and report, each stack checked by whichever "
        "worker takes it; a stack another operation holds is that stack's error.",
        epilog="Exit status: 0 every stack clean, 1 drift found, 2 a stack could not be checked "
        "(the others still were) or the workflow could not run.",
    )
    add_slugs(drift, "every tenant stack")
    add_workflow_options(drift, workers="stacks checked")
    add_examples(
        drift,
        ("gpu-tenants fleet drift", "every tenant stack, on the workers"),
        ("gpu-tenants fleet drift --no-wait", "start it, print its workflow id and return"),
    )
    waves = work.add_parser(
        "rollout",
        help="`pulumi up` of stacks in waves, one child workflow per stack (its id: the stack)",
        description="Updates each wave's stacks (`pulumi up`), a wave's stacks at once, and "
        "starts the next wave only when every stack of this one was updated: the first wave in "
        "which a stack fails (its `up` failed, or another operation holds it) is the last. The "
        "report says which stacks changed. A failed `up` is never retried; an `up` whose worker "
        "died is, on another worker, once the dead worker's engine is surely gone.",
        epilog="Exit status: 0 every wave applied, 1 a wave failed (the rollout stopped there), "
        "2 the rollout could not run (a stack unknown or in two waves, Temporal unreachable).",
    )
    waves.add_argument(
        "--wave",
        dest="waves",
        action="append",
        required=True,
        type=stack_list,
        metavar="SLUG,SLUG...",
        help="the stacks of one wave, comma-separated; repeat it for each wave, in order",
    )
    add_workflow_options(waves, workers="stacks updated")
    add_examples(
        waves,
        (
            "gpu-tenants fleet rollout --wave tenant-foo --wave tenant-bar,tenant-baz",
            "one canary, then two stacks at once",
        ),
    )
    stage = work.add_parser(
        "stage",
        help="a tenant's merged offboarding stage applied: its `up`, rerun while it drains",
        description="Runs the tenant stack's `up`, and while the drain still waits for the "
        "tenant's queue, waits and runs it again, as an operator would, in a workflow whose id "
        "is the stack's name (no other operation runs on the stack meanwhile). It never moves a "
        "stage: --stage must be what the tenant's spec says (the stage a reviewed pull request "
        "set), checked before anything runs.",
        epilog="Exit status: 0 the stage is applied, 1 it is not (an `up` failed for another "
        "reason than the drain's wait, a graceful drain past its timeout, or --rounds used up), "
        "2 it could not run (--stage not the spec's, another operation holds the stack, "
        "Temporal unreachable).",
    )
    add_slug(stage)
    stage.add_argument(
        "--stage", required=True, choices=STAGES, help="the stage the merged pull request set"
    )
    stage.add_argument(
        "--every-seconds",
        type=positive,
        default=900,
        help="the wait between two `up`s while the drain waits (default: 900)",
    )
    stage.add_argument("--rounds", type=positive, default=200, help="`up`s at most (default: 200)")
    add_workflow_options(stage)
    add_examples(
        stage,
        ("gpu-tenants fleet stage tenant-foo --stage drained", "the drain, rerun until it is done"),
        (
            "gpu-tenants fleet stage tenant-foo --stage frozen --no-wait",
            "a merged freeze, its workflow left to run",
        ),
    )
    schedule = work.add_parser(
        "schedule",
        help="the drift check of every tenant stack on a Temporal Schedule (made or updated)",
        description="Makes the Schedule `gpu-tenants-drift`, or updates it: a `fleet drift` of "
        "every tenant stack each interval (Pulumi.prod.yaml `fleet.drift_every_minutes`), "
        "pinned to this checkout; a run due while the last one runs is skipped. Run it again "
        "after deploying a new commit to the workers. `temporal schedule describe "
        "--schedule-id gpu-tenants-drift` lists its runs, `temporal workflow result "
        "--workflow-id <run>` reads one's report.",
        epilog="Exit status: 0 the Schedule is made or updated, 2 it could not be.",
    )
    schedule.add_argument(
        "--every-seconds",
        type=positive,
        help="the interval in seconds (default: Pulumi.prod.yaml's fleet drift_every_minutes)",
    )
    add_task_queue(schedule)
    add_workers(schedule, "stacks checked")
    add_project(schedule)
    add_examples(
        schedule,
        ("gpu-tenants fleet schedule", "the interval Pulumi.prod.yaml sets"),
        ("gpu-tenants fleet schedule --every-seconds 3600", "hourly"),
    )


def stack_list(text: str) -> list[str]:
    """One wave's stacks, or argparse's error naming the option's value."""
    stacks = [stack.strip() for stack in text.split(",")]
    if not all(stacks):
        raise argparse.ArgumentTypeError(f"{text!r} names an empty stack: STACK,STACK...")
    return stacks


def run(args: argparse.Namespace) -> int:
    # The Temporal SDK takes about half a second to load, which no other command should pay.
    from tenant_stack.fleet import drift, rollout
    from tenant_stack.fleet.stage import applied, require_spec_stage
    from tenant_stack.platform import load_platform
    from tenant_stack.stacks import Stacks
    from tenant_stack.workflows import commands

    if args.workflow == "schedule":
        minutes = load_platform(PLATFORM).fleet.drift_every_minutes
        every = timedelta(seconds=args.every_seconds or minutes * 60)
        print(commands.schedule_drift(args.project, every, args.workers, args.task_queue))
        return 0
    colour = wants_colour(sys.stdout)
    if args.workflow == "stage":
        require_spec_stage(args.project, args.slug, args.stage, load_platform(PLATFORM))
        every = timedelta(seconds=args.every_seconds)
        staged = commands.apply_stage(
            args.project, args.slug, args.stage, every, args.rounds, args.task_queue, args.no_wait
        )
        if staged is None:
            return 0
        rounds = staged.updates()
        print(
            json.dumps(asdict(staged))
            if args.json
            else stage_text(args.slug, args.stage, rounds, colour)
        )
        return 0 if applied(rounds) else 1
    if args.workflow == "rollout":
        check_waves(Stacks(args.project), args.waves)
        rolled = commands.fleet_rollout(
            args.project, args.waves, args.workers, args.task_queue, args.no_wait
        )
        if rolled is None:
            return 0
        waves = rolled.updates()
        print(json.dumps(asdict(rolled)) if args.json else rollout_text(waves, colour))
        return rollout.exit_status(waves)
    stacks = args.slugs or Stacks(args.project).tenants()
    checked = commands.fleet_drift(
        args.project, stacks, args.workers, args.task_queue, args.no_wait
    )
    if checked is None:
        return 0
    drifts = checked.drifts()
    print(json.dumps(asdict(checked)) if args.json else drift_text(drifts, colour))
    return drift.exit_status(drifts)


def check_waves(stacks: Stacks, waves: list[list[str]]) -> None:
    """A StackError naming the stack unless every stack is a tenant stack of the project, in
    one wave only: checked before anything starts."""
    known = stacks.tenants()
    seen: set[str] = set()
    for number, wave in enumerate(waves, 1):
        for stack in wave:
            if stack not in known:
                raise StackError(
                    f"--wave {number}: {stack} is not a tenant stack of {stacks.project} "
                    f"(it has: {', '.join(known) or 'none'})"
                )
            if stack in seen:
                raise StackError(f"--wave {number}: {stack} is in an earlier wave already")
            seen.add(stack)


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


def stage_text(stack: str, stage: str, rounds: Sequence[UpdateResult], colour: bool) -> str:
    """Each `up` of the stage's application, then whether the stage is applied."""
    from tenant_stack.fleet.stage import applied

    lines = [
        _update_lines(f"{stack} up {number}", up, colour) for number, up in enumerate(rounds, 1)
    ]
    lines.append(f"{stack}: stage {stage} {'applied' if applied(rounds) else 'not applied'}")
    return "\n".join(lines)


def _update_lines(label: str, update: UpdateResult, colour: bool) -> str:
    """One stack's `up`: its status, the engine's counts and time, then what it said."""
    counts = ", ".join(f"{n} {op}" for op, n in update.changes.items())
    took = f" ({counts})" if counts else ""
    took += f" {update.seconds:.1f}s" if update.status != "not run" else ""
    lines = [f"{label}: {paint(update.status, colour)}{took}"]
    indent = " " * (len(label) - len(label.lstrip()) + 2)
    for said in (update.recovered, update.error):
        lines += [f"{indent}{line}" for line in said.splitlines()]
    return "\n".join(lines)
