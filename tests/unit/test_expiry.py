"""Contract expiry: days left in a term, which tenants `expiring` lists, and which reminder is
due (the thresholds, the catch-up after days without a run, a renewal)."""

from __future__ import annotations

from datetime import date

import pytest

from tenant_stack.expiry import REMINDER_DAYS, days_left, due_threshold, expiring
from tenant_stack.platform import load_platform
from tenant_stack.spec import TenantSpec, load_spec
from tests.conftest import ROOT

END = date(2028, 1, 4)  # tenant-foo's term end


@pytest.fixture(scope="module")
def foo() -> TenantSpec:
    return load_spec(ROOT / "tenants", "tenant-foo", load_platform(ROOT / "Pulumi.prod.yaml"))


def staged(spec: TenantSpec, stage: str, end: date = END) -> TenantSpec:
    term = spec.contract.term.model_copy(update={"end": end})
    return spec.model_copy(
        update={
            "contract": spec.contract.model_copy(update={"term": term}),
            "lifecycle": spec.lifecycle.model_copy(update={"stage": stage}),
        }
    )


def test_days_left_counts_to_the_terms_last_day(foo: TenantSpec) -> None:
    assert days_left(foo, date(2027, 12, 5)) == 30
    assert days_left(foo, END) == 0
    assert days_left(foo, date(2028, 1, 7)) == -3


def test_expiring_lists_the_soonest_first_and_not_the_destroyed(foo: TenantSpec) -> None:
    later = staged(foo, "active", date(2028, 1, 20)).model_copy(update={"slug": "tenant-later"})
    ended = staged(foo, "frozen", date(2027, 11, 30)).model_copy(update={"slug": "tenant-ended"})
    gone = staged(foo, "destroy", date(2027, 11, 1)).model_copy(update={"slug": "tenant-gone"})
    listed = expiring([later, foo, ended, gone], date(2027, 12, 10), within_days=30)
    assert [(e.tenant, e.days_left, e.when) for e in listed] == [
        ("tenant-ended", -10, "ended 10 days ago"),
        ("tenant-foo", 25, "ends in 25 days"),
    ]
    assert "gpu-tenants stage tenant-foo frozen" in listed[1].next_step
    assert "gpu-tenants stage tenant-ended drained" in listed[0].next_step
    assert [e.tenant for e in expiring([later, foo], date(2027, 12, 10), 45)] == [
        "tenant-foo",
        "tenant-later",
    ]


@pytest.mark.parametrize(
    ("left", "sent", "due"),
    [
        (31, [], None),
        (30, [], 30),
        (29, [30], None),
        (10, [], 14),  # the job missed the 30-day one: only the nearest is sent
        (10, [30], 14),
        (7, [30, 14], 7),
        (0, [30, 14, 7], 0),
        (-5, [30, 14, 7, 0], None),
        (-5, [], 0),  # ended before any run: the last-day reminder, once
        (20, [7], None),  # a nearer one was sent already (a clock moved back)
    ],
)
def test_the_due_reminder(left: int, sent: list[int], due: int | None) -> None:
    assert due_threshold(left, REMINDER_DAYS, sent) == due
