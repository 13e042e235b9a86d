"""`gpu-tenants retention calendar|run|hold|release|erase`: offboarding step 9, what every
tenant stack retains until when, the purge of what has expired, legal holds, and a user's
right to erasure."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    add_output_format,
    add_project,
    add_slug,
    add_slugs,
    add_tenants,
    stacks,
    tenants,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import table

if TYPE_CHECKING:
    from tenant_stack.retention_job import Report


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    retention = commands.add_parser(
        "retention",
        help="runbook step 9: the retention calendar, the purge, legal holds",
        description="What offboarding keeps is deleted through the engine once its retention "
        "date has passed (Pulumi.prod.yaml `retention`), unless the tenant is under legal hold. "
        "Every action is recorded in the tenant's ledger in the retention store.",
    )
    retention.set_defaults(run=run)
    actions = retention.add_subparsers(dest="action", required=True, metavar="ACTION")
    calendar = actions.add_parser(
        "calendar",
        help="list every retained resource of every tenant stack, soonest first",
        description="Every resource offboarding keeps (archives, copies, snapshots, "
        "accounting, the users' tombstones), per tenant stack, with the date it is kept until "
        "(held days added) and whether a purge would delete it today. Read-only.",
        epilog="Exit status: 0 every stack was read, 1 one could not be (the output says "
        "which), 2 the command could not run.",
    )
    purge = actions.add_parser(
        "run",
        help="delete what has expired (a scheduler runs this daily)",
        description="For every tenant stack: skips it while under legal hold; else deletes "
        "each expired resource with `pulumi destroy --target <urn> --ignore-protect`, the "
        "users' Authentik tombstones last, once no accounting is left. Safe to rerun.",
        epilog="Exit status: 0 every tenant's purge done (or nothing due), 1 a tenant's purge "
        "failed (the others still ran), 2 the command could not run.",
    )
    purge.add_argument("--dry-run", action="store_true", help="say what would be deleted, only")
    purge.add_argument(
        "--confirm-ahead",
        action="store_true",
        help="with --now after today: delete for real what would be due that day (a rehearsal "
        "of the purge on a test cluster); without it such a run is refused",
    )
    hold = actions.add_parser(
        "hold",
        help="put a tenant under legal hold (no code change)",
        description="In force from the moment it is written to the tenant's ledger, until "
        "`retention release`: no purge deletes anything of the tenant, and every retention date "
        "moves later by the days held. A hold a spec sets (`lifecycle.legal_hold`) is lifted "
        "only by the spec's own `up`.",
        epilog="Exit status: 0 the hold is recorded, 2 it could not be (no such tenant, one "
        "this command set already open, the ledger unreachable): nothing written.",
    )
    hold.add_argument("--reason", required=True, help="the matter or ticket, for the ledger")
    release = actions.add_parser(
        "release",
        help="lift the legal hold `hold` set",
        description="Lifts the hold `retention hold` set, from the moment the release is "
        "written to the tenant's ledger; the days held count toward the tenant's retention "
        "dates. A spec's own hold stays until its `up` lifts it.",
        epilog="Exit status: 0 the release is recorded, 2 it could not be (no such tenant, no "
        "hold this command set, the ledger unreachable): nothing written.",
    )
    erase = actions.add_parser(
        "erase",
        help="a user's right to erasure: their files out of every retained copy",
        description="For an offboarded tenant: records the request in the ledger, then runs "
        "`pulumi up` of the tenant's stack, in which each retained copy is redone without the "
        "user's files (an uploaded snapshot through a filesystem made from it) and their "
        "Authentik record keeps username and uid, name and email redacted; checks the result "
        "and marks the tenant's objects in the retention store gdpr-redacted. Safe to rerun.",
        epilog="Exit status: 0 the user is erased from every retained copy, 2 the erasure "
        "could not run or finish (the output says where it stopped; rerun it).",
    )
    for command in (hold, release, erase):
        add_slug(command)
    erase.add_argument("user", metavar="USER", help="the username, as in the tenant's spec")
    erase.add_argument("--approved-by", required=True, help="who approved the request")
    erase.add_argument("--request", required=True, help="the request's ticket or reference")
    for command in (hold, release):
        command.add_argument("--by", required=True, help="who sets or lifts it, for the ledger")
    for command in (calendar, purge):
        add_slugs(command, "every tenant stack")
    # Not on hold and release: a hold counts from when it is written, never from a day given.
    for command in (calendar, purge, erase):
        command.add_argument(
            "--now", help="the date (YYYY-MM-DD) or time to act as of; default: now"
        )
    for command in (calendar, purge, hold, release, erase):
        add_output_format(command)
        add_tenants(command)
        add_project(command)
    add_examples(
        calendar,
        ("gpu-tenants retention calendar", "what every tenant stack keeps, soonest first"),
        ("gpu-tenants retention calendar tenant-foo --now 2033-01-01", "what is due by 2033"),
    )
    add_examples(
        purge,
        ("gpu-tenants retention run --dry-run", "what today's purge would delete"),
        ("gpu-tenants retention run", "daily, from a scheduler"),
    )
    add_examples(
        hold,
        (
            'gpu-tenants retention hold tenant-foo --by "Dana Ops" --reason LEGAL-42',
            "a litigation hold, from now",
        ),
    )
    add_examples(
        release,
        ('gpu-tenants retention release tenant-foo --by "Dana Ops"', "the hold lifted"),
    )
    add_examples(
        erase,
        (
            'gpu-tenants retention erase tenant-foo bob --approved-by "Lee DPO" --request DSR-7',
            "bob's files out of every retained copy",
        ),
    )


def run(args: argparse.Namespace) -> int:
    from tenant_stack import retention_job
    from tenant_stack.platform import load_platform

    # Hold and release take no day: theirs is when they are written.
    now = retention_job.parse_now(getattr(args, "now", None))
    if args.action == "run" and not args.dry_run:
        retention_job.refuse_ahead(now, args.confirm_ahead)
    project = stacks(args)
    specs = tenants(args)
    # A typo would hold, erase or report nothing, and say so only by its silence.
    for slug in [args.slug] if "slug" in args else args.slugs:
        retention_job.known_tenant(slug, specs, project)
    if args.action in ("hold", "release"):
        if args.action == "hold":
            entry = retention_job.hold(args.slug, args.by, args.reason)
        else:
            entry = retention_job.release(args.slug, args.by)
        print(json.dumps(entry.as_json()) if args.json else f"{args.slug}: {args.action} recorded")
        return 0
    platform = load_platform(args.project / "Pulumi.prod.yaml")
    if args.action == "erase":
        done = retention_job.erase(
            project,
            specs,
            platform,
            args.slug,
            args.user,
            approved_by=args.approved_by,
            request=args.request,
            now=now,
        )
        if args.json:
            print(json.dumps(done.as_json()))
        else:
            print(f"{args.slug}: {args.user} erased from {', '.join(done.copies) or 'no copy'}")
        return 0
    dry_run = args.action == "calendar" or args.dry_run
    reports = retention_job.run(project, specs, platform, now, dry_run=dry_run, only=args.slugs)
    if args.json:
        print(json.dumps({"now": now.isoformat(), "tenants": [r.as_json() for r in reports]}))
    elif args.action == "calendar":
        print(table(("TENANT", "ITEM", "CLASS", "UNTIL", "STATUS"), calendar_rows(reports)))
        for report in reports:
            if report.error or report.hold.held:
                print("\n".join(report_lines(report, dry_run)))
    else:
        for report in reports:
            print("\n".join(report_lines(report, dry_run)))
    return 1 if any(report.error for report in reports) else 0


def report_lines(report: Report, dry_run: bool) -> list[str]:
    """One tenant's part of a run: its error, its hold, or what was (or would be) purged."""
    hold = report.hold
    if report.error:
        return [f"{report.tenant}: error: {report.error}"]
    if hold.held:
        since = hold.held_since.date() if hold.held_since else "?"
        return [
            f"{report.tenant}: skipped: under legal hold since {since} ({hold.held_by}); "
            "every retention timer is paused"
        ]
    done = report.due if dry_run else report.purged
    verb = "would purge" if dry_run else "purged"
    found = [f"{report.tenant}: {verb} {r.item} (kept until {hold.until(r)})" for r in done]
    return found or [f"{report.tenant}: nothing expired"]


def calendar_rows(reports: Sequence[Report]) -> list[tuple[str, str, str, str, str]]:
    """(tenant, item, class, until, status) for every retained resource, soonest first."""
    rows = []
    for report in reports:
        hold = report.hold
        for retained in report.retained:
            status = "held" if hold.held else ("due" if retained in report.due else "kept")
            rows.append(
                (report.tenant, retained.item, retained.kind, str(hold.until(retained)), status)
            )
    return sorted(rows, key=lambda row: (row[3], row[0], row[1]))
