"""Contracts that end: each tenant's days left in its term, the tenants whose term ends within a
window (or has ended while they are still on the cluster), and the reminders the operators get
before it does.

A reminder goes out at each of `REMINDER_DAYS` before the term's last day, once: what was sent
is appended to the tenant's retention ledger (action `term-reminder`, with the term's end and
the threshold), so a rerun, or the next day's run on any machine, reads it and sends nothing
twice (two runs at the same moment are not guarded against: schedule one). A run that finds
several thresholds passed since the last reminder (the job did not run for a while) sends the
nearest one only: the earlier ones would say less than it does. A changed term end (a renewal)
starts its reminders afresh.

The send comes before the ledger's entry, so a run killed between the two sends that reminder
again next time, rather than never.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from providers.retention.ledger import Entry, Ledger
from providers.webhook import Webhook
from tenant_stack.spec import TenantSpec

__all__ = [
    "REMINDER_ACTION",
    "REMINDER_DAYS",
    "Expiring",
    "Reminder",
    "days_left",
    "due_threshold",
    "expiring",
    "send_reminders",
]

# ColdFront's allocation expiry notices: a month, two weeks, a week, and the last day.
REMINDER_DAYS = (30, 14, 7, 0)
REMINDER_ACTION = "term-reminder"


def days_left(spec: TenantSpec, today: date) -> int:
    """Days from `today` to the term's last day: 0 on that day, below 0 once it has passed."""
    return (spec.contract.term.end - today).days


@dataclass(frozen=True)
class Expiring:
    """A tenant whose term ends within the window, or ended while it is not yet destroyed."""

    tenant: str
    term_end: date
    days_left: int
    stage: str
    next_step: str

    def as_json(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "term_end": self.term_end.isoformat(),
            "days_left": self.days_left,
            "stage": self.stage,
            "next_step": self.next_step,
        }

    @property
    def when(self) -> str:
        if self.days_left > 0:
            return f"ends in {self.days_left} day{'s' if self.days_left != 1 else ''}"
        if self.days_left == 0:
            return "ends today"
        return f"ended {-self.days_left} day{'s' if self.days_left != -1 else ''} ago"


def _next_step(spec: TenantSpec) -> str:
    following = spec.lifecycle.next_stage
    if spec.lifecycle.stage == "active":
        return (
            f"the freeze pull request: `gpu-tenants stage {spec.slug} frozen`, unless the "
            "contract is renewed (then a pull request moving contract.term.end)"
        )
    return f"offboarding goes on: `gpu-tenants stage {spec.slug} {following}`"


def expiring(specs: Iterable[TenantSpec], today: date, within_days: int) -> list[Expiring]:
    """The tenants not yet at stage destroy whose term ends within `within_days` of `today`, or
    has ended; soonest first."""
    found = [
        Expiring(
            spec.slug,
            spec.contract.term.end,
            days_left(spec, today),
            spec.lifecycle.stage,
            _next_step(spec),
        )
        for spec in specs
        if spec.lifecycle.stage != "destroy" and days_left(spec, today) <= within_days
    ]
    return sorted(found, key=lambda e: (e.days_left, e.tenant))


def due_threshold(left: int, thresholds: Sequence[int], sent: Iterable[int]) -> int | None:
    """The threshold whose reminder is due `left` days before the end: the nearest one passed,
    unless it, or a nearer one, was sent already."""
    passed = [t for t in thresholds if left <= t]
    if not passed:
        return None
    nearest = min(passed)
    return None if any(s <= nearest for s in sent) else nearest


def _sent(entries: Sequence[Entry], term_end: date) -> list[int]:
    return [
        int(entry.details["days"])
        for entry in entries
        if entry.action == REMINDER_ACTION and entry.details.get("term_end") == term_end.isoformat()
    ]


@dataclass(frozen=True)
class Reminder:
    """A reminder sent: the tenant, the threshold it was for, and the message."""

    tenant: str
    days: int
    text: str

    def as_json(self) -> dict[str, object]:
        return {"tenant": self.tenant, "days": self.days, "text": self.text}


def _text(tenant: Expiring) -> str:
    return (
        f"gpu-tenants: the contract of {tenant.tenant} {tenant.when} "
        f"(term end {tenant.term_end.isoformat()}, stage {tenant.stage}). "
        f"Next: {tenant.next_step}."
    )


def send_reminders(
    tenants: Sequence[Expiring],
    ledger: Ledger,
    webhook: Webhook,
    today: date,
    thresholds: Sequence[int] = REMINDER_DAYS,
) -> list[Reminder]:
    """Sends each tenant's due reminder to `webhook` and records it in `ledger`; returns those
    sent. A failed post raises (WebhookError) after the ones before it were recorded."""
    sent = []
    at = datetime.combine(today, time(), tzinfo=UTC)
    for tenant in tenants:
        sent_before = _sent(ledger.entries(tenant.tenant), tenant.term_end)
        due = due_threshold(tenant.days_left, thresholds, sent_before)
        if due is None:
            continue
        reminder = Reminder(tenant.tenant, due, _text(tenant))
        webhook.post(reminder.text)
        details: Mapping[str, str] = {
            "term_end": tenant.term_end.isoformat(),
            "days": str(due),
            "days_left": str(tenant.days_left),
        }
        ledger.append(tenant.tenant, REMINDER_ACTION, at, details)
        sent.append(reminder)
    return sent
