"""`gpu-tenants review --base REF`: the pull-request check, rules across tenants and a preview
of each tenant the change touches, as one Markdown comment and a JSON report."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    add_output_format,
    add_project,
    add_tenants,
    add_workers,
    output,
    stacks,
    tenants,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import paint, wants_colour

if TYPE_CHECKING:
    from tenant_stack.fleet.review import TenantPreview


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "review",
        help="the pull-request check: previews of the tenants a change touches, as a comment",
        description="Finds the tenant specs the change from BASE to the working tree adds, "
        "edits or deletes (every tenant when it changes the program, the providers or the "
        "platform config), checks the rules across tenants, previews each touched stack (a "
        "new tenant in a throwaway backend: review leaves no stack and no config file "
        "behind), and writes one Markdown summary for the pull request and a JSON report. "
        "Replaces and deletes of data-bearing objects are called out first.",
        epilog="Exit status: 0 the review passed, 1 it failed (an invalid or colliding spec, "
        "a deleted spec whose stack exists, a failed preview), 2 it could not run.",
    )
    command.add_argument("--base", required=True, help="the git ref the change is compared with")
    command.add_argument(
        "--markdown", type=output, help="write the comment here (default: print it to stdout)"
    )
    command.add_argument("--json-file", type=output, help="write the JSON report here")
    add_output_format(command, "the report to stdout")
    add_workers(command, "previews run")
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        (
            ("gpu-tenants review --base origin/main"),
            "the pull request's check, its comment on stdout",
        ),
        (
            (
                "gpu-tenants review --base origin/main --markdown review.md \\\n"
                "    --json-file review.json"
            ),
            "as CI runs it",
        ),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.fleet.review import review
    from tenant_stack.fleet.review_report import markdown

    colour = wants_colour(sys.stderr)

    def progress(preview: TenantPreview) -> None:
        print(f"{preview.slug}: {preview_line(preview, colour)}", file=sys.stderr, flush=True)

    result = review(stacks(args), tenants(args), args.base, args.workers, progress)
    comment = markdown(result)
    if args.markdown:
        args.markdown.write_text(comment)
    report = json.dumps(result.as_json(), indent=2)
    if args.json_file:
        args.json_file.write_text(report + "\n")
    if args.json:
        print(report)
    elif not args.markdown:
        print(comment, end="")
    return 0 if result.passed else 1


def preview_line(preview: TenantPreview, colour: bool) -> str:
    """A tenant's preview as it ends, for stderr: its status and counts."""
    counts = ", ".join(f"{n} {op}" for op, n in preview.counts().items() if n)
    return paint(preview.status, colour) + (f" ({counts})" if counts else "")
