"""`gpu-tenants verify-offboarded <slug>`: offboarding step 8, is anything of the tenant left
live, and is everything that must be retained in the retention store?"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    add_output_format,
    add_project,
    add_slug,
    add_tenants,
    stacks,
    tenant_spec,
)
from tenant_stack.commands.parser import add_examples

if TYPE_CHECKING:
    from tenant_stack.offboarded import Check
    from tenant_stack.spec import TenantSpec


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "verify-offboarded",
        help="runbook step 8: search every backend for the tenant and list what is retained",
        description="Searches Kubernetes, Slurm, Authentik, Weka and the retention store for "
        "anything of the tenant left live, lists its archives with their retention dates, and "
        "prints the change ticket's 'offboarded' checklist in Markdown. Where the platform "
        "sends notices (Pulumi.prod.yaml notices), its last item is the customer's completion "
        "notice (what is kept until when, how to ask for a restore or erasure): with "
        "--notify-customer it is sent to contract.contact once every other item passes, once "
        "(the tenant's ledger records it); without, the item passes only if it was sent.",
        epilog="Exit status: 0 nothing of the tenant is left live and everything retained is "
        "there, 1 a check failed (each says what is left or missing), 2 the command could not "
        "run.",
    )
    add_slug(command)
    command.add_argument(
        "--notify-customer",
        action="store_true",
        help="send the completion notice to the tenant's contact if every other item passes "
        "(once: a notice already sent is not sent again)",
    )
    add_output_format(command, "the checks")
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants verify-offboarded tenant-foo", "step 8: the checklist for the change ticket"),
        ("gpu-tenants verify-offboarded tenant-foo -o json", "the same checks, for a script"),
        (
            "gpu-tenants verify-offboarded tenant-foo --notify-customer",
            "all passes: the customer is told what is kept, until when",
        ),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.offboarded import verify

    spec, platform = tenant_spec(args)
    checks = verify(spec, platform, stacks(args).resources(spec.slug), args.notify_customer)
    print(as_json(spec, checks) if args.json else checklist(spec, checks))
    return 0 if all(check.ok for check in checks) else 1


def checklist(spec: TenantSpec, checks: list[Check]) -> str:
    """The change ticket's "offboarded" checklist in Markdown."""
    lines = [f"# {spec.display_name} (`{spec.slug}`): offboarded", ""]
    lines += [f"- [{'x' if c.ok else ' '}] {c.item}: {c.detail}" for c in checks]
    return "\n".join([*lines, ""])


def as_json(spec: TenantSpec, checks: list[Check]) -> str:
    return json.dumps(
        {
            "tenant": spec.slug,
            "ok": all(c.ok for c in checks),
            "checks": [asdict(c) for c in checks],
        },
        indent=2,
    )
