"""The usage report's two charts, as SVG or PNG files (matplotlib): GPU-hours by team per day as
stacked bars, and the GPU-minute budget's burn-down over the window.

Both span the whole window on a date axis with a few labels (a month's every day would be
unreadable), mark today when it falls in the window, and draw no data after it: a day to come
is not a day without jobs. A window with no jobs says so rather than drawing an empty axis.

Figures are made without pyplot, so no GUI backend is chosen, and the one setting changed (text
kept as text in SVG, so a reader or a test can find the labels) is changed for the save only:
the command may run on a host without a display, from cron.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from matplotlib import dates, rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tenant_stack.usage_report import UsageReport

__all__ = ["FORMATS", "MAX_DATE_LABELS", "NO_JOBS", "TODAY", "write_charts"]

FORMATS = ("svg", "png")
MAX_DATE_LABELS = 8
NO_JOBS = "no jobs in this window"
# The id of today's line in an SVG (matplotlib writes an artist's gid as its group's id).
TODAY = "today"


def _axes(report: UsageReport, title: str, unit: str) -> tuple[Figure, Axes]:
    """A figure whose x axis is the report's window, its dates sparse, today marked."""
    figure = Figure(figsize=(10, 4.5), layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(f"{report.tenant}: {title}")
    axes.set_ylabel(unit)
    axes.set_xlim(_on_axis(report.since) - 0.5, _on_axis(report.until) - 0.5)  # in days
    days = (report.until - report.since).days
    # matplotlib.dates' locators and formatters carry no types.
    locator = dates.DayLocator(interval=max(1, -(-days // MAX_DATE_LABELS)))  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(dates.DateFormatter("%d %b"))  # type: ignore[no-untyped-call]
    if report.since <= report.today < report.until:
        axes.axvline(
            _on_axis(report.today), linestyle=":", color="tab:red", label="today", gid=TODAY
        )
    return figure, axes


def _bars(report: UsageReport) -> Figure:
    figure, axes = _axes(report, "GPU-hours by team per day", "GPU-hours")
    days = [day for day, _ in report.burn_down()]
    bottom = [0.0] * len(days)
    for team in report.teams:
        per_day: dict[date, float] = {}
        for row in report.rows:
            if row.team == team:
                per_day[row.day] = per_day.get(row.day, 0.0) + row.gpu_hours
        heights = [per_day.get(day, 0.0) for day in days]
        axes.bar([_on_axis(day) for day in days], heights, width=0.8, bottom=bottom, label=team)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    if not report.rows:
        axes.set_yticks([])
        axes.text(0.5, 0.5, NO_JOBS, transform=axes.transAxes, ha="center", va="center")
    _legend(axes)
    return figure


def _burn_down(report: UsageReport) -> Figure:
    figure, axes = _axes(report, "GPU budget left (GPU-hours)", "GPU-hours left")
    points = report.burn_down()
    axes.plot([_on_axis(day) for day, _ in points], [left for _, left in points], marker=".")
    axes.axhline(report.budget_gpu_hours, linestyle="--", color="grey", label="budget")
    axes.axhline(0, color="black", linewidth=0.8)
    _legend(axes)
    return figure


def _legend(axes: Axes) -> None:
    if axes.get_legend_handles_labels()[0]:
        axes.legend()


def _on_axis(day: date) -> float:
    """A day's place on the axis, where its label's tick is: its bar is centred there."""
    return float(dates.date2num(datetime(day.year, day.month, day.day)))  # type: ignore[no-untyped-call]


def write_charts(report: UsageReport, directory: Path, format: str) -> list[Path]:
    """`<tenant>-gpu-hours.<format>` and `<tenant>-budget.<format>` in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in (("gpu-hours", _bars(report)), ("budget", _burn_down(report))):
        path = directory / f"{report.tenant}-{name}.{format}"
        with rc_context({"svg.fonttype": "none"}):
            figure.savefig(path, format=format)
        written.append(path)
    return written
