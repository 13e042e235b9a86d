"""`gpu-tenants doctor`: can the program run here? Each backend reachable, at a supported
version, and the credentials allowing what the stacks do; read-only."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tenant_stack.commands.options import add_output_format, add_project
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import COLOURS, paint, table, wants_colour

if TYPE_CHECKING:
    from tenant_stack.doctor import Check

# Seconds per step of one backend's checks; a whole backend gets this per step it takes.
DEFAULT_TIMEOUT = 20.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "doctor",
        help="whether every backend is reachable, supported and allows what the stacks do",
        description="Before a first `up` against a cluster, and in CI: for Kubernetes, "
        "Authentik, Weka, Slurm, the retention store, the Pulumi engine and state backend, and "
        "Temporal when TEMPORAL_ADDRESS is set, checks that the backend answers, that its "
        "version is one the program supports, and that the credentials the environment gives "
        "allow what the stacks do (`kubectl auth can-i` for each verb, the Authentik token's "
        "user, the Weka user's role, the Slurm operator's AdminLevel, the buckets and the "
        "ledger's Object Lock). Read-only; the backends are checked at once.",
        epilog="Exit status: 0 every check passed, 1 a check failed, 2 the command could not run.",
    )
    add_output_format(command, "the checks")
    add_project(command)
    command.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds each step of a backend's checks may take (default {DEFAULT_TIMEOUT:g})",
    )
    # A check group that did not answer in time is still running on its daemon thread, perhaps in
    # gRPC or the Temporal SDK, whose threads abort the interpreter's teardown (main says why).
    add_examples(
        command,
        ("gpu-tenants doctor", "every backend of this environment, before a first up"),
        ("gpu-tenants doctor -o json --timeout 60", "in CI, on a slow network"),
    )
    command.set_defaults(run=run, exits_without_teardown=True)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.doctor import DoctorError, exit_status, run_checks

    if not (args.project / "Pulumi.yaml").is_file():
        print(
            f"gpu-tenants doctor: {args.project} is not a Pulumi project (no Pulumi.yaml); "
            "give --project",
            file=sys.stderr,
        )
        return 2
    try:
        checks = run_checks(args.project, args.timeout)
    except DoctorError as error:
        print(f"gpu-tenants doctor: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"checks": [check.as_json() for check in checks]}))
    else:
        print(doctor_text(checks, wants_colour(sys.stdout)))
    return exit_status(checks)


def doctor_text(checks: Sequence[Check], colour: bool) -> str:
    """One row per check (check, status, detail), then each failure's fix."""
    rows = [(check.name, check.status, check.detail) for check in checks]
    lines = [
        table(
            ("CHECK", "STATUS", "DETAIL"),
            rows,
            lambda cell: paint(cell, colour and cell in COLOURS),
        )
    ]
    fixes = [f"{check.name}: {check.fix}" for check in checks if check.fix and check.status != "ok"]
    if fixes:
        lines += ["", "To fix:", *(f"  {fix}" for fix in fixes)]
    return "\n".join(lines)
