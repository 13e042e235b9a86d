"""The usage report from sacct's job records (in the form `sacct -X --parsable2` prints them on the
sandbox, and the offboarding archive keeps them): GPU-hours split at midnight and clipped to the
window, a running job counted until now, a pending one not at all, teams from the account, the
contract's capacity, the budget's burn-down, CSV as RFC 4180, and the charts as real images."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ElementTree
from datetime import date, datetime
from pathlib import Path

import pytest
from PIL import Image

from providers.slurm.job_history import parse_jobs
from tenant_stack.platform import load_platform
from tenant_stack.spec import TenantSpec, load_spec
from tenant_stack.usage_charts import MAX_DATE_LABELS, NO_JOBS, TODAY, write_charts
from tenant_stack.usage_report import CSV_HEADER, UsageReport, csv_text, usage_report
from tests.conftest import ROOT

HEADER = (
    "JobID|JobName|User|Account|Partition|QOS|ReqTRES|AllocTRES|Submit|Start|End|Elapsed|State|"
    "ExitCode|NodeList"
)


def row(
    job: int, user: str, account: str, gpus: int, start: str, end: str, state: str = "COMPLETED"
) -> str:
    alloc = f"billing=2,cpu=2,gres/gpu={gpus},mem=64M,node=1" if gpus else "billing=2,cpu=2"
    if start == "Unknown":
        alloc = ""
    return (
        f"{job}|wrap|{user}|{account}|tenant-foo|normal-foo|billing=1,cpu=1,gres/gpu={gpus}|"
        f"{alloc}|2026-11-30T09:00:00|{start}|{end}|00:00:00|{state}|0:0|gpu-14"
    )


SACCT = "\n".join(
    [
        HEADER,
        # before the window: the budget's burn-down starts below the budget by 10 GPU-hours
        row(
            1, "alice", "ml-team-foo", 5, "2026-11-30T10:00:00", "2026-11-30T12:00:00", "COMPLETED"
        ),
        row(
            2, "alice", "ml-team-foo", 2, "2026-12-01T10:00:00", "2026-12-01T12:00:00", "COMPLETED"
        ),
        row(3, "bob", "tenant-foo", 1, "2026-12-01T23:00:00", "2026-12-02T01:00:00", "FAILED"),
        row(4, "carol", "ml-team-foo", 8, "2026-12-02T22:00:00", "Unknown", "RUNNING"),
        row(5, "carol", "ml-team-foo", 4, "Unknown", "Unknown", "PENDING"),
        row(6, "bob", "tenant-foo", 0, "2026-12-02T08:00:00", "2026-12-02T09:00:00"),
    ]
)
NOW = datetime(2026, 12, 3, 0, 30)


@pytest.fixture(scope="module")
def foo() -> TenantSpec:
    return load_spec(ROOT / "tenants", "tenant-foo", load_platform(ROOT / "Pulumi.prod.yaml"))


@pytest.fixture(scope="module")
def report(foo: TenantSpec) -> UsageReport:
    return usage_report(foo, parse_jobs(SACCT), date(2026, 12, 1), date(2026, 12, 4), NOW)


def test_gpu_hours_by_day_team_and_user(report: UsageReport) -> None:
    assert report.by("day") == {"2026-12-01": 5.0, "2026-12-02": 17.0, "2026-12-03": 4.0}
    assert report.by("team") == {"ml-team-foo": 24.0, "(no team)": 2.0}
    assert report.by("user") == {"carol": 20.0, "alice": 4.0, "bob": 2.0}
    assert report.gpu_hours == 26.0
    bob = [(r.day.isoformat(), r.gpu_hours, r.jobs) for r in report.rows if r.user == "bob"]
    assert bob == [("2026-12-01", 1.0, 1), ("2026-12-02", 1.0, 1)]


def test_against_the_contract_and_the_budget(report: UsageReport) -> None:
    assert report.capacity_gpu_hours == 64 * 72
    assert report.budget_gpu_hours == 720000 / 60
    assert report.used_before_gpu_hours == 10.0
    assert [(d.isoformat(), left) for d, left in report.burn_down()] == [
        ("2026-12-01", 12000 - 10 - 5),
        ("2026-12-02", 12000 - 10 - 5 - 17),
        ("2026-12-03", 12000 - 10 - 5 - 17 - 4),
    ]
    as_json = report.as_json()
    assert (as_json["from"], as_json["to"]) == ("2026-12-01", "2026-12-03")
    assert as_json["budget_left_gpu_hours"] == 12000 - 36


def test_a_window_past_the_terms_end_has_no_capacity_there(foo: TenantSpec) -> None:
    late = usage_report(foo, [], date(2028, 1, 3), date(2028, 1, 10), NOW)
    assert late.capacity_gpu_hours == 64 * 48  # the term's last two days only
    assert late.rows == []


def test_the_csv_is_rfc_4180(report: UsageReport) -> None:
    text = csv_text([report])
    assert text.endswith("\r\n")
    assert "\n" not in text.replace("\r\n", "")
    rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert tuple(rows[0]) == CSV_HEADER
    assert sum(float(r[4]) for r in rows[1:]) == pytest.approx(26.0)
    assert ["tenant-foo", "2026-12-02", "(no team)", "bob", "1.0000", "1"] in rows


def test_sacct_output_without_its_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="no AllocTRES, Start"):
        parse_jobs("JobID|User|Account|End\n1|a|b|c")


def test_the_charts_open_as_images(report: UsageReport, tmp_path: Path) -> None:
    svgs = write_charts(report, tmp_path / "svg", "svg")
    assert [p.name for p in svgs] == ["tenant-foo-gpu-hours.svg", "tenant-foo-budget.svg"]
    for path in svgs:
        root = ElementTree.parse(path).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert "tenant-foo" in path.read_text()
    for path in write_charts(report, tmp_path / "png", "png"):
        with Image.open(path) as image:
            image.verify()
            assert image.format == "PNG"
            assert image.size[0] > 500


SVG = "{http://www.w3.org/2000/svg}"


def chart_facts(path: Path) -> tuple[list[str], bool, bool]:
    """An SVG chart's date labels along x, whether it marks today, and whether it says the
    window had no jobs: read from the file, as a reader of the chart sees it."""
    groups = list(ElementTree.parse(path).getroot().iter(f"{SVG}g"))
    ticks = [g for g in groups if (g.get("id") or "").startswith("xtick_")]
    labels = ["".join(text.itertext()).strip() for g in ticks for text in g.iter(f"{SVG}text")]
    texts = ["".join(t.itertext()) for g in groups for t in g.iter(f"{SVG}text")]
    return labels, any(g.get("id") == TODAY for g in groups), NO_JOBS in texts


def test_a_two_month_chart_has_a_few_dates_todays_mark_and_no_days_to_come(
    foo: TenantSpec, tmp_path: Path
) -> None:
    two_months = usage_report(foo, parse_jobs(SACCT), date(2026, 11, 1), date(2027, 1, 1), NOW)
    assert two_months.burn_down()[-1][0] == NOW.date(), "no day after today is data"
    assert len(two_months.as_json()["burn_down"]) == 33  # type: ignore[arg-type]
    bars, budget = write_charts(two_months, tmp_path, "svg")
    for chart in (bars, budget):
        labels, today, empty = chart_facts(chart)
        assert 2 <= len(labels) <= MAX_DATE_LABELS, labels
        assert (labels[0][-4:], labels[-1][-4:]) == (" Nov", " Dec")
        assert (today, empty) == (True, False)


def test_a_window_without_jobs_says_so_and_one_in_the_past_has_no_today(
    foo: TenantSpec, tmp_path: Path
) -> None:
    quiet = usage_report(foo, [], date(2026, 11, 1), date(2026, 11, 8), NOW)
    bars, budget = write_charts(quiet, tmp_path, "svg")
    labels, today, empty = chart_facts(bars)
    assert labels == [f"0{day} Nov" for day in range(1, 8)]
    assert (today, empty) == (False, True)
    assert not chart_facts(budget)[2], "the budget is drawn, jobs or not"
