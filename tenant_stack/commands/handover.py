"""`gpu-tenants handover <slug>`: onboarding step 8, the tenant's connection sheet."""

from __future__ import annotations

import argparse
import json

from tenant_stack.commands.options import PLATFORM, add_json, add_project, add_tenants, tenants


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "handover",
        help="onboarding step 8: print the tenant's connection sheet (Markdown)",
        description="Prints the connection sheet the tenant receives, from its spec alone.",
    )
    command.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml")
    add_json(command, "the sheet")
    add_tenants(command)
    add_project(command)
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.handover import connection_sheet
    from tenant_stack.platform import load_platform
    from tenant_stack.spec import load_spec

    platform = load_platform(PLATFORM)
    sheet = connection_sheet(load_spec(tenants(args), args.slug, platform), platform)
    print(json.dumps(sheet) if args.json else sheet, end="\n" if args.json else "")
    return 0
