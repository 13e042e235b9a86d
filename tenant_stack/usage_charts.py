"""The usage report's two charts, as SVG or PNG files (matplotlib): GPU-hours by team per day as
stacked bars, and the GPU-minute budget's burn-down over the window.

Figures are made without pyplot, so no GUI backend is chosen and nothing global changes: the
command may run on a host without a display, from cron.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from tenant_stack.usage_report import UsageReport

__all__ = ["FORMATS", "write_charts"]

FORMATS = ("svg", "png")


def _bars(report: UsageReport) -> Figure:
    figure = Figure(figsize=(10, 4.5), layout="constrained")
    axes = figure.add_subplot()
    days = [day.isoformat() for day, _ in report.burn_down()]
    bottom = [0.0] * len(days)
    for team in report.teams:
        per_day = {row.day.isoformat(): 0.0 for row in report.rows}
        for row in report.rows:
            if row.team == team:
                per_day[row.day.isoformat()] += row.gpu_hours
        heights = [per_day.get(day, 0.0) for day in days]
        axes.bar(days, heights, bottom=bottom, label=team)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axes.set_title(f"{report.tenant}: GPU-hours by team per day")
    axes.set_ylabel("GPU-hours")
    axes.tick_params(axis="x", labelrotation=90, labelsize=7)
    if report.teams:
        axes.legend()
    return figure


def _burn_down(report: UsageReport) -> Figure:
    figure = Figure(figsize=(10, 4.5), layout="constrained")
    axes = figure.add_subplot()
    points = report.burn_down()
    axes.plot([day.isoformat() for day, _ in points], [left for _, left in points], marker=".")
    axes.axhline(report.budget_gpu_hours, linestyle="--", color="grey", label="budget")
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_title(f"{report.tenant}: GPU budget left (GPU-hours)")
    axes.set_ylabel("GPU-hours left")
    axes.tick_params(axis="x", labelrotation=90, labelsize=7)
    axes.legend()
    return figure


def write_charts(report: UsageReport, directory: Path, format: str) -> list[Path]:
    """`<tenant>-gpu-hours.<format>` and `<tenant>-budget.<format>` in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, figure in (("gpu-hours", _bars(report)), ("budget", _burn_down(report))):
        path = directory / f"{report.tenant}-{name}.{format}"
        figure.savefig(path, format=format)
        written.append(path)
    return written
