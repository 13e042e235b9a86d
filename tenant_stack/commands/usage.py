"""`gpu-tenants usage [SLUG...] --from DATE --to DATE`: each tenant's GPU-hours by team, user and
day against its contract and its GPU-minute budget, as Markdown, CSV for billing, JSON and
charts; from Slurm's accounting, or from the offboarding archive's jobs.csv (--archived)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    PLATFORM,
    add_output_format,
    add_project,
    add_slugs,
    add_tenants,
    chosen_slugs,
    output,
    tenants,
)
from tenant_stack.commands.parser import add_examples

if TYPE_CHECKING:
    from tenant_stack.spec import TenantSpec
    from tenant_stack.usage_report import UsageReport


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date such as 2026-12-01") from None


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    today = date.today()
    command = commands.add_parser(
        "usage",
        help="GPU-hours by team, user and day against the contract and the budget",
        description="For each tenant (default: every spec in tenants/), the GPU-hours its jobs "
        "held from --from to --to (both days included, the Slurm hosts' days), by team, user "
        "and day, against the contract's GPUs for those days and the GPU-minute budget, with "
        "the budget's burn-down; live from sacct (and Slurm's own count, sshare), or from the "
        "offboarding archive's jobs.csv with --archived. Markdown on stdout unless --json.",
        epilog="Exit status: 0 the report is made, 2 it could not be (a spec does not load, "
        "Slurm or the retention store cannot be read, no archived jobs.csv).",
    )
    add_slugs(command)
    command.add_argument(
        "--from",
        dest="since",
        metavar="DATE",
        type=_day,
        default=today.replace(day=1),
        help="the first day (default: the first of this month)",
    )
    command.add_argument(
        "--to", metavar="DATE", type=_day, default=today, help="the last day (default: today)"
    )
    command.add_argument(
        "--archived",
        action="store_true",
        help="read the jobs from the offboarding archive's <slug>/slurm/jobs.csv in the "
        "retention store, not from Slurm",
    )
    command.add_argument(
        "--csv",
        type=output,
        metavar="FILE",
        help="also write the rows for billing to this file (RFC 4180)",
    )
    command.add_argument(
        "--charts",
        type=output,
        metavar="DIR",
        help="also write each tenant's charts into this directory: <slug>-gpu-hours and "
        "<slug>-budget",
    )
    command.add_argument(
        "--chart-format", choices=("svg", "png"), default="svg", help="the charts' format (svg)"
    )
    add_output_format(command)
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        (
            (
                "gpu-tenants usage tenant-foo --from 2026-11-01 --to 2026-11-30 \\\n"
                "    --csv november.csv"
            ),
            "November's GPU-hours, and the rows for billing",
        ),
        ("gpu-tenants usage --charts charts/", "every tenant this month, with its charts"),
        (
            ("gpu-tenants usage tenant-foo --archived --from 2026-01-05 \\\n    --to 2027-01-04"),
            "an offboarded tenant's term, from its archive",
        ),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from tenant_stack.errors import TenantError
    from tenant_stack.platform import load_platform
    from tenant_stack.spec import load_spec

    if args.to < args.since:
        raise TenantError(f"--to {args.to} is before --from {args.since}")
    platform = load_platform(PLATFORM)
    specs_dir = tenants(args)
    slugs = chosen_slugs(args)
    specs = [load_spec(specs_dir, slug, platform) for slug in slugs]
    until = args.to + timedelta(days=1)
    reports = [_report(spec, args.since, until, args.archived) for spec in specs]
    charts: list[Path] = []
    if args.charts:
        from tenant_stack.usage_charts import write_charts

        for report in reports:
            charts += write_charts(report, args.charts, args.chart_format)
    if args.csv:
        from tenant_stack.usage_report import csv_text

        args.csv.write_text(csv_text(reports), newline="")
    if args.json:
        out = {"tenants": [r.as_json() for r in reports], "charts": [str(p) for p in charts]}
        print(json.dumps(out))
    else:
        print(markdown(reports))
        for path in [*charts, *([args.csv] if args.csv else [])]:
            print(f"written: {path}", file=sys.stderr)
    return 0


def _report(spec: TenantSpec, since: date, until: date, archived: bool) -> UsageReport:
    from tenant_stack.usage_report import usage_report

    if archived:
        from providers.retention.client import RetentionStore
        from providers.retention.objects import archive_key
        from providers.slurm.job_history import parse_jobs
        from tenant_stack.errors import TenantError

        key = archive_key(spec.slug, "jobs", "csv")
        with RetentionStore.from_environment() as store:
            if store.head(key) is None:
                raise TenantError(
                    f"{spec.slug}: no archived jobs at {store.url(key)}: the archive is made at "
                    "stage archived; for a tenant that has not reached it, leave out --archived"
                )
            jobs = parse_jobs(store.get(key).decode())
        return usage_report(spec, jobs, since, until, datetime.now())
    from providers.slurm.job_history import read_jobs
    from providers.slurm.settings import Settings
    from providers.slurm.usage import SlurmUsage

    transport = Settings.from_environment().make_transport()
    # From the term's start, whatever the window: the burn-down needs what came before it.
    first = min(since, spec.contract.term.start)
    jobs = read_jobs(transport, spec.slurm_accounts, first, until)
    budget = SlurmUsage(transport).gpu_minutes(spec.slurm_accounts)
    return usage_report(spec, jobs, since, until, datetime.now(), budget)


def _table(header: tuple[str, ...], rows: Sequence[tuple[object, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def markdown(reports: Sequence[UsageReport]) -> str:
    """Each tenant's report for a person or a ticket: the totals, then by team, user and day."""
    lines: list[str] = []
    for report in reports:
        last = report.until - timedelta(days=1)
        left = report.burn_down()[-1][1]
        share = f"{report.utilisation:.1%}" if report.utilisation is not None else "-"
        lines += [f"## {report.tenant}: GPU use {report.since} to {last}", ""]
        lines += _table(
            ("", "GPU-hours"),
            [
                ("used", f"{report.gpu_hours:.2f}"),
                (
                    f"contract ({report.contract_gpus} GPUs, the window's days in the term)",
                    f"{report.capacity_gpu_hours:.2f}",
                ),
                ("used of the contract", share),
                ("budget (contract.gpu_minutes)", f"{report.budget_gpu_hours:.2f}"),
                ("budget used before the window", f"{report.used_before_gpu_hours:.2f}"),
                (f"budget left at the end of {last}", f"{left:.2f}"),
            ],
        )
        for key, title in (("team", "By team"), ("user", "By user")):
            lines += ["", f"### {title}", ""]
            lines += _table(
                (key, "GPU-hours"), [(k, f"{v:.2f}") for k, v in report.by(key).items()]
            )
        lines += ["", "### By day", ""]
        per_day = report.by("day")
        lines += _table(
            ("day", "GPU-hours", "budget left"),
            [
                (day, f"{per_day.get(day.isoformat(), 0.0):.2f}", f"{left_then:.2f}")
                for day, left_then in report.burn_down()
            ],
        )
        if report.slurm_budget:
            lines += ["", "### Slurm's own count (sshare: GrpTRESRaw against GrpTRESMins)", ""]
            lines += _table(
                ("account", "user", "GPU-minutes used", "budget"),
                [
                    (g.account, g.user or "(account)", g.used, g.budget or "unlimited")
                    for g in report.slurm_budget
                ],
            )
        lines.append("")
    return "\n".join(lines).rstrip() or "no tenant"
