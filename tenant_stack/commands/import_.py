"""`gpu-tenants import <slug> --term S:E`: a tenant onboarded by hand, read from every backend
and written as tenants/<slug>.yaml for review (read-only on the backends)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    PLATFORM,
    add_contact,
    add_output_format,
    add_project,
    add_tenants,
    tenants,
    term,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.errors import TenantError
from tenant_stack.partition_types import NODELESS_PARTITION_TYPES

if TYPE_CHECKING:
    from tenant_stack.importing.run import ImportReport


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "import",
        help="a tenant onboarded by hand: read it from every backend and write its spec",
        description="Reads the tenant as the runbook built it (Reservation and nodes, namespace "
        "and its objects, Slurm account, teams, users, QoS and partition, Authentik groups and "
        "users, Weka organization or directories and quotas), refuses it in the runbook's words "
        "if it contradicts itself, and writes tenants/<slug>.yaml with a comment on every value "
        "inferred or held by no backend, once it passes the spec's and the fleet's rules. "
        "Read-only on every backend.",
        epilog="Exit status: 0 the spec is written, 1 the tenant is refused (nothing written), "
        "2 the command could not run (a backend unreachable, bad arguments).",
    )
    command.add_argument(
        "slug", metavar="SLUG", help="the tenant's slug: its namespace and Slurm account"
    )
    command.add_argument(
        "--term",
        type=term,
        required=True,
        help="the contract's term START:END (ISO dates): the change ticket has it, no backend",
    )
    command.add_argument("--gpu-sku", help="the contract's SKU, for a tenant without nodes")
    command.add_argument(
        "--partition-type",
        choices=NODELESS_PARTITION_TYPES,
        help="the contract's partition type, for a tenant without nodes",
    )
    add_contact(command)
    command.add_argument(
        "--weka-org-admin", help="the tenant's Weka organization admin (org isolation)"
    )
    command.add_argument(
        "--weka-org-password-file",
        type=Path,
        help="a file holding that admin's password (never the password itself)",
    )
    add_tenants(command)
    add_project(command)
    add_output_format(command)
    add_examples(
        command,
        (
            ("gpu-tenants import tenant-old --term 2026-01-05:2027-01-04"),
            "a hand-built tenant, written as tenants/tenant-old.yaml",
        ),
        (
            (
                "gpu-tenants import tenant-old --term 2026-01-05:2027-01-04 \\\n"
                "    --weka-org-admin tenant-old-admin --weka-org-password-file admin.pw"
            ),
            "with its Weka organization's admin, to read the organization",
        ),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from providers.weka.settings import Credentials
    from tenant_stack.importing.inferred_spec import Contract
    from tenant_stack.importing.run import import_tenant
    from tenant_stack.platform import load_platform

    platform = load_platform(PLATFORM)
    org_admin = None
    if args.weka_org_admin:
        if args.weka_org_password_file is None:
            raise TenantError("--weka-org-admin needs --weka-org-password-file")
        try:
            password = args.weka_org_password_file.read_text().strip()
        except OSError as error:
            raise TenantError(
                f"--weka-org-password-file {args.weka_org_password_file}: {error.strerror}"
            ) from None
        if not password:
            raise TenantError(f"--weka-org-password-file {args.weka_org_password_file} is empty")
        org_admin = Credentials(args.weka_org_admin, password, args.slug)
    start, end = args.term
    report = import_tenant(
        args.slug,
        tenants(args),
        platform,
        Contract(start, end, args.partition_type, args.gpu_sku, args.contact),
        org_admin=org_admin,
    )
    print(json.dumps(report.as_json()) if args.json else "\n".join(report_lines(report)))
    return 0 if report.written else 1


def report_lines(report: ImportReport) -> list[str]:
    """The spec written and what its first `up` changes, every value no backend held or that
    was inferred; or why the tenant is refused."""
    if report.refusals:
        return [
            f"{report.tenant}: not imported, nothing written; the live tenant contradicts "
            "itself or lacks what a spec needs:",
            *(f"  {p.location or 'tenant'}: {p.message}" for p in report.refusals),
        ]
    out = [
        f"{report.tenant}: wrote {report.spec}; review it in a pull request of its own",
        "the first `up` (imported.adopt: true) adopts the tenant and changes only:",
        *(f"  {change}" for change in report.first_up),
    ]
    for kind, title in (
        ("todo", "no backend holds these (review each)"),
        ("inferred", "inferred (check the rule)"),
        ("found", "read as they are"),
    ):
        notes = [n for n in report.notes if n.kind == kind]
        if notes:
            out.append(f"{title}:")
            out += [f"  {n.location}: {n.text}" for n in notes]
    return out
