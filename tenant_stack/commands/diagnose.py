"""`gpu-tenants diagnose <slug>`: every known failure of a tenant, with evidence, cause and fix."""

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
        "diagnose",
        help="every known failure of a tenant, with its evidence, cause and fix",
        description="Runs every check against the live cluster (read-only: kubectl get and "
        "auth can-i, scontrol/sacctmgr show, Authentik and Weka GETs) and prints each failure "
        "found with the evidence it read, the cause and the fix, what to fix first first. A "
        "backend that does not answer is one finding.",
        epilog="Exit status: 0 no problem found, 1 problems found (or the tenant is not onboarded "
        "yet: it has no stack), 2 the command could not run.",
    )
    add_slug(command)
    add_output_format(command, "the findings")
    add_project(command)
    add_tenants(command)
    add_examples(
        command,
        ("gpu-tenants diagnose tenant-foo", "each known failure, with its evidence, cause and fix"),
        ("gpu-tenants diagnose tenant-foo -o json", "the findings, for a script"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.diagnosis.run import diagnose, not_onboarded
    from tenant_stack.stacks import Stacks

    spec, platform = tenant_spec(args)
    if args.slug not in Stacks(args.project).tenants():
        # Nothing of it is expected live: every check would report a repair of what was never made.
        said = not_onboarded(spec).conditions[0].message
        print(json.dumps({"tenant": args.slug, "findings": [], "onboarded": False}) if args.json
              else f"{args.slug}: {said}")  # fmt: skip
        return 1
    found = diagnose(spec, platform)
    if args.json:
        print(json.dumps({"tenant": args.slug, "findings": [f.as_json() for f in found]}))
    else:
        print("\n".join(str(f) for f in found) or f"{args.slug}: no problem found")
    return 1 if found else 0
