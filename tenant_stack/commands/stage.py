"""`gpu-tenants stage SLUG STAGE`: a tenant's spec moved to its next offboarding stage (or back),
the pull request's edit, with what that stage's `pulumi up` will do for the pull request's text."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    PLATFORM,
    add_output_format,
    add_project,
    add_slug,
    add_tenants,
    tenants,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.lifecycle import SIGNED_OFF, STAGES

if TYPE_CHECKING:
    from tenant_stack.spec.stage_edit import StageEdit


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "stage",
        help="a tenant's spec moved to its next offboarding stage, or back (a rollback)",
        description="Sets lifecycle.stage in tenants/<slug>.yaml to STAGE, keeping every comment "
        "and every other line of the file as it is, and prints what that stage's `pulumi up` "
        "will do, in the offboarding runbook's words, for the pull request's text. Offboarding "
        f"goes one stage forward per pull request ({' -> '.join(STAGES)}) or back to any "
        "earlier stage (the runbook's rollback), never back from destroy; a stage that deletes "
        f"({', '.join(SIGNED_OFF)}) needs --sign-off-by, --ticket and who confirmed for the "
        "customer (--confirmed-by-customer) or, with no customer counterparty, who gave the "
        "internal escalation sign-off (--escalation-by), recorded as lifecycle.sign_off with "
        "today's date (the `up` writes it into the tenant's retention ledger, and destroy "
        "deletes nothing until it is there), and is refused under a legal hold. The move is "
        "checked against the spec's stage (the pull request's `pulumi preview` checks it "
        "against the stage the last `up` applied). The edited spec is written only if it "
        "loads, with every rule `pulumi preview` loads it with, and at once. Touches no "
        "backend; writes nothing but the spec.",
        epilog="Exit status: 0 the spec is written, or already at STAGE (nothing written); 1 "
        "refused, nothing written (a stage skipped, a move back from destroy, a destroy under "
        "legal hold, a sign-off missing: the output names the stage and what is missing); 2 "
        "the command could not run (no such spec, the spec does not load or would not once "
        "edited, bad arguments).",
    )
    add_slug(command)
    command.add_argument("stage", metavar="STAGE", choices=STAGES, help=", ".join(STAGES))
    command.add_argument(
        "--sign-off-by",
        metavar="NAME",
        help=f"who signed off the stage that deletes ({', '.join(SIGNED_OFF)}), as the change "
        "ticket names them",
    )
    command.add_argument(
        "--ticket", metavar="T", help="the change ticket holding the sign-off (OPS-1234)"
    )
    confirmed = command.add_mutually_exclusive_group()
    confirmed.add_argument(
        "--confirmed-by-customer",
        metavar="NAME",
        help="the customer's counterparty who confirmed the offboarding (runbook step 0)",
    )
    confirmed.add_argument(
        "--escalation-by",
        metavar="NAME",
        help="with no customer confirmation: who gave the internal escalation sign-off, a "
        "second person, not --sign-off-by",
    )
    add_output_format(command, "the change")
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants stage tenant-foo frozen", "offboarding's first pull request: no new jobs"),
        (
            (
                'gpu-tenants stage tenant-foo destroy --sign-off-by "Dana Ops" \\\n'
                '    --ticket OPS-1234 --confirmed-by-customer "Lee Chen"'
            ),
            "the last one, signed off",
        ),
        ("gpu-tenants stage tenant-foo active", "a rollback, before destroy"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = (
        ("--sign-off-by", args.sign_off_by),
        ("--ticket", args.ticket),
        ("--confirmed-by-customer", args.confirmed_by_customer),
        ("--escalation-by", args.escalation_by),
    )
    signing = [option for option, given in options if given]
    if signing and args.stage not in SIGNED_OFF:
        print(
            f"gpu-tenants stage: {' and '.join(signing)} only with stage "
            f"{' or '.join(SIGNED_OFF)}: the spec accepts a sign-off at no other stage, so that "
            "an old one cannot authorise a later destroy",
            file=sys.stderr,
        )
        return 2

    from tenant_stack.platform import load_platform
    from tenant_stack.spec.stage_edit import edit_stage

    confirmation = None  # checked with the rest of the spec once edited, naming the field
    if args.confirmed_by_customer:
        confirmation = {"kind": "customer", "by": args.confirmed_by_customer}
    elif args.escalation_by:
        confirmation = {"kind": "escalation", "by": args.escalation_by}

    edit = edit_stage(
        tenants(args),
        args.slug,
        args.stage,
        load_platform(PLATFORM),
        sign_off_by=args.sign_off_by,
        ticket=args.ticket,
        confirmation=confirmation,
        today=date.today(),
    )
    print(json.dumps(edit.as_json()) if args.json else "\n".join(edit_lines(edit)))
    return 1 if edit.refusal is not None else 0


def edit_lines(edit: StageEdit) -> list[str]:
    """The change and what its `up` will do, as a pull request's text; or why there is none."""
    if edit.refusal is not None:
        return [f"{edit.slug}: {edit.refusal}; nothing written ({edit.file})"]
    if not edit.written:
        return [f"{edit.slug}: already at stage {edit.after}; nothing written ({edit.file})"]
    lines = [
        f"{edit.slug}: lifecycle.stage {edit.before} -> {edit.after} ({edit.direction}), "
        f"written to {edit.file}",
        "",
        f"## {edit.slug}: offboarding stage {edit.after}"
        + (f" (rollback from {edit.before})" if edit.direction == "rollback" else ""),
        "",
        "What `pulumi up` will do:",
    ]
    for work in edit.up:
        lines.append(f"- {work.stage}: {work.runbook}")
        lines += [f"  - {does}" for does in work.does]
    lines += ["", "Next:", *(f"- {step}" for step in edit.next_steps)]
    return lines
