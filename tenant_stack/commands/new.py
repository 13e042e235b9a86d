"""`gpu-tenants new SLUG --users FILE ...`: a new tenant's spec, tenants/<slug>.yaml, from a
contract's terms and its users file, with its nodes, numbers and budgets chosen and a comment on
every value chosen."""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    PLATFORM,
    add_contact,
    add_output_format,
    add_project,
    add_tenants,
    positive,
    tenants,
    term,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.partition_types import PARTITION_TYPES

if TYPE_CHECKING:
    from tenant_stack.authoring.new_tenant import NewTenantReport


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "new",
        help="a new tenant's spec from its contract's terms and a users file",
        description="Writes tenants/<slug>.yaml from the contract's terms (the options) and its "
        "users (--users: CSV with the columns username,name,email,ssh_keys[,team], several keys "
        "one per line of the quoted cell; or YAML, a list of users with those fields). For a "
        "reserved tenant it picks the nodes runbook step 1 finds free (Ready, schedulable, "
        "untainted, in no Reservation) of the SKU and pool, less those another spec names; it "
        "pins the next uids and gids above every spec's and Authentik's; it computes the "
        "GPU-minute budget (GPUs x the term's minutes, split evenly between the users) and the "
        "QoS caps, and sets the rest to the runbook's and the platform's values, with a "
        "comment on each value it chose. Nothing is written unless the spec passes every rule "
        "`check` and `pulumi preview` apply. Reads the cluster, Authentik and the project's "
        "stacks; writes nothing but the spec.",
        epilog="Exit status: 0 the spec is written; 1 refused, nothing written (the output names "
        "the option or the users file's line to change: an unknown SKU, a user twice, a key "
        "that does not parse, a slug taken or reserved, too few free nodes); 2 the command could "
        "not run (the cluster, Authentik or the state backend unreachable, bad arguments).",
    )
    command.add_argument("slug", metavar="SLUG", help="the tenant's slug, such as tenant-foo")
    command.add_argument(
        "--users",
        type=Path,
        required=True,
        metavar="FILE",
        help="the users: a .csv or .yaml file (see above)",
    )
    contract = command.add_argument_group("the contract's terms")
    contract.add_argument("--gpu-sku", required=True, help="the SKU, as the platform names it")
    contract.add_argument("--gpus", type=positive, required=True, help="the GPUs contracted")
    contract.add_argument(
        "--partition-type",
        choices=PARTITION_TYPES,
        required=True,
        help="reserved: nodes of the tenant's own, chosen from those free in its pool; "
        "on-demand or spot: the shared pool's, no nodes named",
    )
    contract.add_argument(
        "--term",
        type=term,
        required=True,
        help="the contract's term START:END (ISO dates, both included)",
    )
    contract.add_argument(
        "--wall-limit", required=True, help="the normal jobs' wall limit (24h, 2d, UNLIMITED)"
    )
    contract.add_argument(
        "--interactive-wall-limit", help="the interactive jobs' (default: 4h, runbook 4c)"
    )
    contract.add_argument(
        "--gpu-minutes",
        type=positive,
        help="the budget, when the contract states one (default: GPUs x the term's minutes)",
    )
    contract.add_argument("--home", required=True, help="/home in all (5TB): home_capacity")
    contract.add_argument(
        "--home-per-user", help="each user's /home hard quota (default: 100GB, runbook 4e)"
    )
    contract.add_argument("--scratch", required=True, help="the /scratch hard quota (50TB)")
    contract.add_argument(
        "--storage-isolation",
        choices=("org", "directory"),
        required=True,
        help="org: a Weka organization of its own; directory: directories in the shared one",
    )
    contract.add_argument(
        "--hardware-pool", help="the pool of the SKU's nodes (needed when it has several)"
    )
    command.add_argument(
        "--admin",
        action="append",
        default=[],
        metavar="USERNAME",
        help="a user of the file who administers the namespace (runbook 3e; repeat for more)",
    )
    command.add_argument("--display-name", help="the customer's name (default: from the slug)")
    add_contact(command)
    command.add_argument(
        "--rehearsal",
        action="store_true",
        help="a rehearsal: its destroy deletes everything at any stage, with no archive",
    )
    add_tenants(command)
    add_project(command)
    add_output_format(command)
    add_examples(
        command,
        (
            (
                "gpu-tenants new tenant-baz --users examples/tenant-baz-users.csv \\\n"
                "    --gpu-sku h100-8x --gpus 16 --partition-type reserved \\\n"
                "    --term 2027-01-04:2028-01-03 --wall-limit 24h --home 5TB \\\n"
                "    --scratch 50TB --storage-isolation org \\\n"
                '    --contact "Ines Baz <ines.baz@tenant-baz.example>"'
            ),
            "a reserved tenant of 16 GPUs with an organization of its own, on free nodes",
        ),
        (
            (
                "gpu-tenants new tenant-qux --users qux.yaml --gpu-sku h100-8x --gpus 8 \\\n"
                "    --partition-type on-demand --term 2027-02-01:2027-07-31 \\\n"
                "    --wall-limit 2d --home 1TB --scratch 10TB \\\n"
                "    --storage-isolation directory --admin erin"
            ),
            "an on-demand tenant in the shared filesystems' directories, erin its admin",
        ),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.authoring.new_tenant import Terms, new_tenant, read_live
    from tenant_stack.platform import load_platform

    terms = Terms(
        slug=args.slug,
        gpu_sku=args.gpu_sku,
        gpus=args.gpus,
        partition_type=args.partition_type,
        term=args.term,
        wall_limit=args.wall_limit,
        interactive_wall_limit=args.interactive_wall_limit,
        gpu_minutes=args.gpu_minutes,
        home=args.home,
        home_per_user=args.home_per_user,
        scratch=args.scratch,
        storage_isolation=args.storage_isolation,
        hardware_pool=args.hardware_pool,
        admins=tuple(args.admin),
        display_name=args.display_name,
        contact=args.contact,
        rehearsal=args.rehearsal,
    )
    project: Path = args.project
    report = new_tenant(
        terms,
        args.users,
        tenants(args),
        load_platform(PLATFORM),
        lambda slug: read_live(slug, project),
        today=date.today(),
    )
    print(json.dumps(report.as_json()) if args.json else "\n".join(report_lines(report)))
    return 0 if report.written else 1


def report_lines(report: NewTenantReport) -> list[str]:
    """The spec written and what was chosen for it; or why nothing was, where to change it."""
    if not report.written:
        return [
            f"{report.tenant}: refused, nothing written:",
            *(f"  {p.location}: {p.message}" for p in report.refusals),
        ]
    nodes = report.chosen("reservation.nodes") or []
    uids = [c.value for c in report.choices if c.location.endswith(".uid")]
    gids = [report.chosen("identity.gid"), report.chosen("identity.admins_gid")]
    return [
        f"{report.tenant}: wrote {report.spec}; review it in a pull request, then "
        f"`pulumi up --stack {report.tenant}`",
        f"  nodes: {', '.join(nodes) or 'none (not reserved)'}",
        f"  uids: {', '.join(map(str, uids))}; gids: {', '.join(str(g) for g in gids if g)}",
        "chosen (each with its comment in the spec):",
        *(f"  {c.location}: {c.why}" for c in report.choices),
    ]
