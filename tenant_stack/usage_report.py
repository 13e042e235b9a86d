"""A tenant's GPU use over a window, for the customer and for billing: GPU-hours by day, team and
user from Slurm's job records, against what the contract bought (its GPUs for every hour of the
window inside its term) and against its GPU-minute budget, with the budget's burn-down.

The records are the live `sacct`'s, or the `jobs.csv` the offboarding archive kept, which holds
the same fields, so "why were we billed X" is answered from the retained copy with the same
numbers. A job's GPU-hours are its allocated GPUs times the time it ran, split at midnight into
the days it ran on, and clipped to the window; a job still running counts until now. The
burn-down starts from the budget less what the term used before the window.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta

from providers.slurm.job_history import JobRecord
from providers.slurm.usage import GpuMinutes
from tenant_stack.spec import TenantSpec

__all__ = ["CSV_HEADER", "DayUsage", "UsageReport", "csv_text", "usage_report"]

# A job run under the tenant's own account rather than a team's sub-account.
NO_TEAM = "(no team)"
CSV_HEADER = ("tenant", "day", "team", "user", "gpu_hours", "jobs")


@dataclass(frozen=True)
class DayUsage:
    day: date
    team: str
    user: str
    gpu_hours: float
    jobs: int


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time())


def _days(since: date, until: date) -> Iterator[date]:
    day = since
    while day < until:
        yield day
        day += timedelta(days=1)


@dataclass(frozen=True)
class UsageReport:
    """`rows` per day, team and user with any use, from `since` to before `until`."""

    tenant: str
    since: date
    until: date
    rows: list[DayUsage]
    contract_gpus: int
    capacity_gpu_hours: float  # the contract's GPUs, every hour of the window inside the term
    budget_gpu_hours: float  # contract.gpu_minutes
    used_before_gpu_hours: float  # by the term before the window
    today: date  # the day the report was made on: no day after it has data yet
    slurm_budget: list[GpuMinutes] = field(default_factory=list)  # sshare's, when read live

    @property
    def gpu_hours(self) -> float:
        return sum(row.gpu_hours for row in self.rows)

    @property
    def utilisation(self) -> float | None:
        return self.gpu_hours / self.capacity_gpu_hours if self.capacity_gpu_hours else None

    def by(self, key: str) -> dict[str, float]:
        """GPU-hours by `team`, `user` or `day` (ISO dates), largest first for teams and users."""
        totals: dict[str, float] = defaultdict(float)
        for row in self.rows:
            totals[str(getattr(row, key))] += row.gpu_hours
        if key == "day":
            return dict(sorted(totals.items()))
        return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))

    @property
    def teams(self) -> list[str]:
        return list(self.by("team"))

    def burn_down(self) -> list[tuple[date, float]]:
        """The budget left at the end of each day of the window up to today, in GPU-hours."""
        per_day = self.by("day")
        left = self.budget_gpu_hours - self.used_before_gpu_hours
        points = []
        for day in _days(self.since, min(self.until, self.today + timedelta(days=1))):
            left -= per_day.get(day.isoformat(), 0.0)
            points.append((day, left))
        return points

    def as_json(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "from": self.since.isoformat(),
            "to": (self.until - timedelta(days=1)).isoformat(),
            "gpu_hours": round(self.gpu_hours, 4),
            "contract_gpus": self.contract_gpus,
            "capacity_gpu_hours": round(self.capacity_gpu_hours, 4),
            "utilisation": round(self.utilisation, 6) if self.utilisation is not None else None,
            "budget_gpu_hours": round(self.budget_gpu_hours, 4),
            "budget_left_gpu_hours": round(self.burn_down()[-1][1], 4) if self.rows else None,
            "by_team": _rounded(self.by("team")),
            "by_user": _rounded(self.by("user")),
            "by_day": _rounded(self.by("day")),
            "burn_down": [{"day": d.isoformat(), "left": round(v, 4)} for d, v in self.burn_down()],
            "rows": [
                {
                    "day": r.day.isoformat(),
                    "team": r.team,
                    "user": r.user,
                    "gpu_hours": round(r.gpu_hours, 4),
                    "jobs": r.jobs,
                }
                for r in self.rows
            ],
            "slurm_budget": [
                {"account": g.account, "user": g.user, "used_minutes": g.used, "budget": g.budget}
                for g in self.slurm_budget
            ],
        }


def _rounded(totals: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 4) for key, value in totals.items()}


def usage_report(
    spec: TenantSpec,
    jobs: Sequence[JobRecord],
    since: date,
    until: date,
    now: datetime,
    slurm_budget: Sequence[GpuMinutes] = (),
) -> UsageReport:
    """The report of `spec`'s `jobs` from `since` to before `until`; a job still running counts
    until `now`. `jobs` should reach back to the term's start, for the burn-down."""
    teams = {team.name for team in spec.slurm.teams}
    ended = [job if job.end else replace(job, end=now) for job in jobs]
    cells: dict[tuple[date, str, str], list[float]] = {}
    for day in _days(since, until):
        start, end = _midnight(day), _midnight(day + timedelta(days=1))
        for job in ended:
            seconds = job.gpu_seconds(start, end)
            if seconds > 0:
                team = job.account if job.account in teams else NO_TEAM
                cell = cells.setdefault((day, team, job.user), [0.0, 0])
                cell[0] += seconds / 3600
                cell[1] += 1
    rows = [
        DayUsage(day, team, user, hours, int(count))
        for (day, team, user), (hours, count) in sorted(cells.items())
    ]
    term = spec.contract.term
    term_start, term_end = _midnight(term.start), _midnight(term.end + timedelta(days=1))
    window_start, window_end = _midnight(since), _midnight(until)
    inside = min(term_end, window_end) - max(term_start, window_start)
    before = sum(job.gpu_seconds(term_start, min(window_start, term_end)) for job in ended)
    return UsageReport(
        tenant=spec.slug,
        since=since,
        until=until,
        rows=rows,
        contract_gpus=spec.contract.gpus,
        capacity_gpu_hours=max(inside.total_seconds(), 0.0) / 3600 * spec.contract.gpus,
        budget_gpu_hours=spec.contract.gpu_minutes / 60,
        used_before_gpu_hours=before / 3600,
        today=now.date(),
        slurm_budget=list(slurm_budget),
    )


def csv_text(reports: Sequence[UsageReport]) -> str:
    """Every report's rows as CSV for billing (RFC 4180: a header, CRLF line ends, quoted as
    needed), GPU-hours to four decimals."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    for report in reports:
        for row in report.rows:
            day, hours = row.day.isoformat(), f"{row.gpu_hours:.4f}"
            writer.writerow((report.tenant, day, row.team, row.user, hours, row.jobs))
    return out.getvalue()
