"""`gpu-tenants handover <slug>`: onboarding step 8, the tenant's connection sheet."""

from __future__ import annotations

import argparse
import json

from tenant_stack.commands.options import (
    add_output_format,
    add_project,
    add_slug,
    add_tenants,
    tenant_spec,
)
from tenant_stack.commands.parser import add_examples


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "handover",
        help="onboarding step 8: print the tenant's connection sheet (Markdown)",
        description="Prints the connection sheet the tenant receives, from its spec, with the "
        "last `gpu-tenants smoke` run's result from the tenant's retention ledger "
        "(RETENTION_S3_*).",
        epilog="Exit status: 0 the sheet is printed, 2 it could not be (the spec does not load).",
    )
    add_slug(command)
    add_output_format(command, "the sheet")
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants handover tenant-foo > tenant-foo-handover.md", "the sheet, to send"),
        ("gpu-tenants handover tenant-foo -o json", "its fields, for a ticket system"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.handover import connection_sheet

    spec, platform = tenant_spec(args)
    sheet = connection_sheet(spec, platform, _last_smoke_run(spec.slug))
    print(json.dumps(sheet) if args.json else sheet, end="\n" if args.json else "")
    return 0


def _last_smoke_run(slug: str) -> str:
    """The last smoke-test run, in a line; said so when there is none or the ledger cannot be
    read (the sheet is still worth printing)."""
    from providers.errors import BackendError
    from providers.retention.ledger import Ledger
    from tenant_stack.smoke import last_smoke_run

    try:
        with Ledger.open() as ledger:
            entry = last_smoke_run(ledger.entries(slug))
    except BackendError as error:
        return f"Unknown: the retention ledger could not be read ({error})."
    if entry is None:
        return f"Not run yet: run `gpu-tenants smoke {slug}` before handing over."
    details = entry.details
    return (
        f"Last run {entry.at:%Y-%m-%d %H:%M} UTC as {details.get('user', '?')}: "
        f"{details.get('result', '?')}. {details.get('checks', '')}"
    )
