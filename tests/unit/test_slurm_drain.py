"""The drain's reading of squeue and what it tells the operator when the queue is not empty yet."""

from __future__ import annotations

import time

from providers.slurm.drain_provider import _next_step, _progress
from providers.slurm.queue import Job, parse_squeue

SQUEUE = """\
31|RUNNING|dave|tenant-bar|tenant-bar|2026-12-01T01:10:00
32|PENDING|erin|tenant-bar|tenant-bar|N/A
33|RUNNING|dave|tenant-bar|tenant-bar|2026-12-01T02:00:00
"""


def drain(mode: str, started_ago: float, timeout: int = 3600) -> dict[str, object]:
    started = time.time() - started_ago
    return {
        "tenant": "tenant-bar",
        "mode": mode,
        "started_at": started,
        "term_sent_at": started if mode == "hard" else None,
        "timeout_seconds": timeout,
    }


def test_squeue_lines_become_jobs() -> None:
    jobs = parse_squeue(SQUEUE)
    assert [(j.id, j.pending) for j in jobs] == [("31", False), ("32", True), ("33", False)]
    assert str(jobs[1]) == "32 (erin, pending)"


def test_progress_counts_the_jobs_and_names_the_latest_expected_end() -> None:
    said = _progress(drain("graceful", 60), parse_squeue(SQUEUE))
    assert said.startswith("3 jobs still in the queue (31 (dave, running), 32 (erin, pending)")
    assert said.endswith("the latest expected end is 2026-12-01T02:00:00")


def test_a_graceful_drain_says_to_rerun_then_past_its_timeout_to_switch_to_hard() -> None:
    assert "run `pulumi up` again later" in _next_step(drain("graceful", 60))
    late = _next_step(drain("graceful", 7200))
    assert "past lifecycle.drain_timeout: switch lifecycle.drain_mode to hard" in late


def test_a_hard_drain_says_when_what_is_left_is_killed() -> None:
    step = _next_step(drain("hard", 10, timeout=60))
    assert step.startswith("TERM was sent; what is left is killed at ")
    assert "nothing is done twice" in step


def test_a_job_without_a_known_end_adds_no_end() -> None:
    held = [Job("40", "PENDING", "erin", "tenant-bar", "tenant-bar", "N/A")]
    assert _progress(drain("graceful", 1), held) == "1 jobs still in the queue (40 (erin, pending))"
