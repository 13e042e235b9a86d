"""`gpu-tenants expiring [--within 30d] [--remind]`: the tenants whose contract ends soon, or has
ended while they are still on the cluster, each with its next step; with --remind, the daily
job that posts each reminder (30, 14, 7 and 0 days before the end) once to the webhook."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tenant_stack.commands.options import (
    PLATFORM,
    add_output_format,
    add_project,
    add_tenants,
    tenants,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import table

if TYPE_CHECKING:
    from tenant_stack.expiry import Expiring, Reminder


def _days(text: str) -> int:
    found = re.fullmatch(r"(\d+)d?", text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days, such as 30d")
    return int(found.group(1))


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "expiring",
        help="the tenants whose contract term ends soon, and the reminders before it does",
        description="Lists the tenants (not yet at stage destroy) whose contract.term.end is "
        "within --within days, or has passed, soonest first, each with the next step: the "
        "freeze pull request, or the renewal. With --remind it also posts the reminder due "
        "for each (30, 14, 7 and 0 days before the end, each once: the tenant's retention "
        "ledger records what was sent) to GPU_TENANTS_WEBHOOK_URL, as Slack-style JSON; run it "
        "daily (cron or a scheduler).",
        epilog="Exit status: 0 no tenant's term ends within the window, 1 one does (or has "
        "ended), 2 the command could not run (a spec does not load, --remind without "
        "GPU_TENANTS_WEBHOOK_URL, the webhook or the ledger failed: the reminders sent before "
        "the failure are recorded).",
    )
    command.add_argument(
        "--within", type=_days, default=30, help="the window, in days (30d or 30; default 30)"
    )
    command.add_argument("--now", help="the date (YYYY-MM-DD) to count from; default: today")
    command.add_argument(
        "--remind",
        action="store_true",
        help="post the reminders due today to GPU_TENANTS_WEBHOOK_URL (each once)",
    )
    add_output_format(command)
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants expiring", "the terms that end within 30 days"),
        ("gpu-tenants expiring --within 90d -o json", "a quarter ahead, for a script"),
        ("gpu-tenants expiring --remind", "daily: the reminders due today, each sent once"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from providers.retention.ledger import Ledger
    from providers.webhook import URL_VARIABLE, Webhook
    from tenant_stack.errors import TenantError
    from tenant_stack.expiry import REMINDER_DAYS, expiring, send_reminders
    from tenant_stack.platform import load_platform
    from tenant_stack.retention_job import parse_now
    from tenant_stack.spec.fleet import load_fleet

    today = parse_now(args.now).date()
    specs, broken = load_fleet(tenants(args), load_platform(PLATFORM))
    if broken:
        raise TenantError("\n".join(str(error) for error in broken.values()))
    listed = expiring(specs.values(), today, args.within)
    sent: list[Reminder] = []
    if args.remind:
        webhook = Webhook.from_environment()
        if webhook is None:
            raise TenantError(f"--remind: set {URL_VARIABLE} to the operators' webhook")
        due = expiring(specs.values(), today, max(REMINDER_DAYS))
        with webhook, Ledger.open() as ledger:
            sent = send_reminders(due, ledger, webhook, today)
    if args.json:
        print(
            json.dumps(
                {
                    "today": today.isoformat(),
                    "within_days": args.within,
                    "tenants": [tenant.as_json() for tenant in listed],
                    "reminders_sent": [reminder.as_json() for reminder in sent],
                }
            )
        )
    else:
        print(expiring_text(listed, sent, args.within))
    return 1 if listed else 0


def expiring_text(listed: Sequence[Expiring], sent: Sequence[Reminder], within: int) -> str:
    if not listed:
        lines = [f"no tenant's term ends within {within} days"]
    else:
        rows = [(t.tenant, t.term_end.isoformat(), t.when, t.stage) for t in listed]
        lines = [table(("TENANT", "TERM END", "WHEN", "STAGE"), rows)]
        lines += [f"{t.tenant}: next: {t.next_step}" for t in listed]
    lines += [f"reminder sent: {r.tenant}, {r.days} days before the end" for r in sent]
    return "\n".join(lines)
