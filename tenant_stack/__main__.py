"""The operator's commands: `python -m tenant_stack <command> --help`.

    handover <slug>            onboarding step 8: the connection sheet for the tenant
    verify-offboarded <slug>   offboarding step 8: is anything of the tenant left live, and is
                               everything that must be retained in the retention store?

Exit status: 0 done (every check passed); 1 a check failed (the output says which); 2 the command
could not run (bad arguments, or the tenant's spec does not load).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tenant_stack.errors import TenantError
from tenant_stack.handover import connection_sheet
from tenant_stack.offboarded import as_json, checklist, verify
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tenant_stack",
        description="Operator commands for tenant stacks.",
        epilog="Exit status: 0 all checks passed, 1 a check failed, 2 the command could not run.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    handover = commands.add_parser(
        "handover",
        help="onboarding step 8: print the tenant's connection sheet (Markdown)",
        description="Prints the connection sheet the tenant receives, from its spec alone.",
    )
    handover.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml")
    handover.add_argument("--json", action="store_true", help="print it as a JSON string")
    offboarded = commands.add_parser(
        "verify-offboarded",
        help="runbook step 8: search every backend for the tenant and list what is retained",
        description="Searches Kubernetes, Slurm, Authentik, Weka and the retention store for "
        "anything of the tenant left live, lists its archives with their retention dates, and "
        "prints the change ticket's 'offboarded' checklist in Markdown.",
    )
    offboarded.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml")
    offboarded.add_argument("--json", action="store_true", help="print the checks as JSON")
    for command in (handover, offboarded):
        command.add_argument(
            "--tenants", type=Path, default=ROOT / "tenants", help="where the specs are"
        )
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        platform = load_platform(ROOT / "Pulumi.prod.yaml")
        spec = load_spec(args.tenants, args.slug, platform)
    except TenantError as error:
        print(error, file=sys.stderr)
        return 2
    if args.command == "handover":
        sheet = connection_sheet(spec, platform)
        print(json.dumps(sheet) if args.json else sheet, end="\n" if args.json else "")
        return 0
    checks = verify(spec, platform)
    print(as_json(spec, checks) if args.json else checklist(spec, checks), end="\n")
    return 0 if all(check.ok for check in checks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
