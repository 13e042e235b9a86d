"""The retention calendar's decisions: what a stack retains, legal holds and their extension,
what the purge deletes on a given day and in which order."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from providers.retention.ledger import Entry
from tenant_stack.commands import main
from tenant_stack.commands.retention import report_lines
from tenant_stack.retention_calendar import (
    HoldState,
    Retained,
    due,
    hold_state,
    purged_items,
    retained_in,
)
from tenant_stack.retention_job import Report

T = "tenant-foo"
DAY0 = datetime(2027, 1, 1, tzinfo=UTC)


def resource(type_: str, until: str | None, protect: bool = True, **outputs: Any) -> dict[str, Any]:
    return {
        "urn": f"urn:pulumi:{T}::gpu-tenants::{type_}::{len(outputs)}-{until}",
        "type": f"pulumi-python:dynamic/{type_}",
        "protect": protect,
        "outputs": {**outputs, "retention_until": until},
    }


def entry(action: str, day: int, **details: str) -> Entry:
    return Entry(T, action, DAY0 + timedelta(days=day), details)


def item(name: str, kind: str, until: date) -> Retained:
    return Retained(T, name, kind, f"urn:{name}", until)


def test_the_retained_resources_of_a_state_are_the_protected_ones_with_a_date() -> None:
    state = [
        resource("retention:SlurmArchive", "2034-01-01", kind="jobs"),
        resource("retention:SlurmArchive", "2027-04-01", kind="logs"),
        resource("retention:DirectoryCopy", "2027-02-01", filesystem="home"),
        resource("weka:UploadedSnapshot", "2027-02-01", filesystem="foo-home"),
        resource("authentik:TenantUser", "2034-01-01", username="alice"),
        # A live user: no retention date. An archive not protected: not the purge's to delete.
        resource("authentik:TenantUser", None, username="bob"),
        resource("retention:SlurmArchive", "2034-01-01", protect=False, kind="steps"),
        {"urn": "urn:stack", "type": "pulumi:pulumi:Stack", "outputs": {}},
    ]
    found = {(r.item, r.kind, str(r.until)) for r in retained_in(T, state)}
    assert found == {
        ("jobs", "accounting", "2034-01-01"),
        ("logs", "logs", "2027-04-01"),
        ("copy:home", "copies", "2027-02-01"),
        ("snapshot:foo-home", "copies", "2027-02-01"),
        ("user:alice", "identity", "2034-01-01"),
    }


def test_a_hold_open_from_any_source_holds_the_tenant_and_closed_holds_add_their_days() -> None:
    entries = [
        entry("hold", 10, source="spec", by="spec"),
        entry("hold", 12, source="command", by="Lee"),
        entry("release", 14, source="spec"),  # the command's hold still holds
        entry("release", 15, source="command"),  # held from day 10 to 15
        entry("hold", 20, source="command", by="Lee"),
        entry("release", 21, source="command"),
    ]
    # The ledger as written so far, entry by entry.
    assert hold_state(entries[:2]).held
    assert hold_state(entries[:2]).held_by == "spec"
    assert hold_state(entries[:3]).held
    assert hold_state(entries[:3]).held_by == "Lee"
    after = hold_state(entries)
    assert not after.held
    assert after.held_days == 6
    # A release without a hold from its source changes nothing.
    assert hold_state([entry("release", 1, source="spec")]).held_days == 0


def test_a_hold_is_in_force_from_when_it_is_written_whatever_day_it_says() -> None:
    # Written after a release, dated before it (a writer's clock, a day given by hand): the
    # hold still holds, and no day held is lost to the back-dating.
    entries = [
        entry("hold", 10, source="command", by="Lee"),
        entry("release", 12, source="command"),
        entry("hold", 5, source="command", by="Kim"),
    ]
    held = hold_state(entries)
    assert held.held
    assert held.held_by == "Kim"
    assert held.held_since == DAY0 + timedelta(days=12)
    # A release dated before its hold adds nothing, and takes nothing back.
    back = [*entries, entry("release", 1, source="command")]
    assert not hold_state(back).held
    assert hold_state(back).held_days == 2


def test_part_of_a_day_held_counts_as_a_whole_day() -> None:
    entries = [entry("hold", 1, source="command"), entry("release", 1, source="command")]
    entries[1] = Entry(T, "release", entries[0].at + timedelta(hours=3), {"source": "command"})
    assert hold_state(entries).held_days == 1


def test_due_is_what_expired_before_today_soonest_first_tombstones_last() -> None:
    retained = [
        item("user:alice", "identity", date(2034, 1, 1)),
        item("jobs", "accounting", date(2034, 1, 1)),
        item("logs", "logs", date(2027, 4, 1)),
        item("snapshot:foo-home", "copies", date(2027, 2, 1)),
    ]
    not_held = HoldState(None, "", 0)
    assert due(retained, not_held, date(2027, 2, 1)) == []  # the last day it is kept
    assert [r.item for r in due(retained, not_held, date(2027, 4, 2))] == [
        "snapshot:foo-home",
        "logs",
    ]
    assert [r.item for r in due(retained, not_held, date(2034, 1, 2))] == [
        "snapshot:foo-home",
        "logs",
        "jobs",
        "user:alice",
    ]
    # A tombstone outlives its date while the tenant's accounting is kept (held longer, say).
    tombstone = [item("user:alice", "identity", date(2030, 1, 1)), retained[1]]
    assert due(tombstone, not_held, date(2031, 1, 1)) == []


def test_a_held_tenant_has_nothing_due_and_its_dates_move_on_by_the_days_held() -> None:
    retained = [item("logs", "logs", date(2027, 4, 1))]
    assert due(retained, HoldState(DAY0, "Lee", 0), date(2099, 1, 1)) == []
    extended = HoldState(None, "", 10)
    assert extended.until(retained[0]) == date(2027, 4, 11)
    assert due(retained, extended, date(2027, 4, 11)) == []
    assert due(retained, extended, date(2027, 4, 12)) == retained


def test_what_the_purge_began_is_purged_for_the_program() -> None:
    entries = [
        entry("purging", 1, item="logs"),
        entry("purging", 2, item="jobs"),
        entry("purged", 2, item="jobs"),
        entry("hold", 3, source="spec"),
    ]
    assert purged_items(entries) == {"logs", "jobs"}


def test_the_report_says_why_a_tenant_was_skipped_and_what_went() -> None:
    held = Report(T, hold=HoldState(DAY0, "Lee Counsel", 0))
    assert report_lines(held, dry_run=False) == [
        f"{T}: skipped: under legal hold since 2027-01-01 (Lee Counsel); every retention timer "
        "is paused"
    ]
    logs = item("logs", "logs", date(2027, 4, 1))
    done = Report(T, hold=HoldState(None, "", 3), retained=[logs], due=[logs], purged=[logs])
    assert report_lines(done, dry_run=False) == [f"{T}: purged logs (kept until 2027-04-04)"]
    assert report_lines(done, dry_run=True) == [f"{T}: would purge logs (kept until 2027-04-04)"]
    assert report_lines(Report(T, hold=HoldState(None, "", 0)), dry_run=False) == [
        f"{T}: nothing expired"
    ]
    assert report_lines(Report(T, error="boom"), dry_run=False) == [f"{T}: error: boom"]


def test_a_purge_as_of_a_later_day_is_refused_unless_confirmed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = (datetime.now(UTC).date() + timedelta(days=400)).isoformat()
    assert main(["retention", "run", "--now", later, "--project", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert f"--now {later} is after today" in said
    assert "--dry-run" in said
    assert "--confirm-ahead" in said
    assert "nothing was deleted" in said


@pytest.mark.parametrize("action", [["hold", "--reason", "LIT-77"], ["release"]])
def test_a_hold_or_release_takes_no_day(
    action: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["retention", *action, "tenant-foo", "--by", "Lee", "--now", "2020-01-01"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --now" in capsys.readouterr().err
