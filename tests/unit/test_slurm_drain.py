"""The drain's reading of squeue and what it tells the operator when the queue is not empty yet."""

from __future__ import annotations

import time
from datetime import datetime

from providers.slurm.drain_provider import _next_step, _progress, _stuck
from providers.slurm.queue import Job, parse_squeue, stuck_completing, unstick

SQUEUE = """\
31|RUNNING|dave|tenant-bar|tenant-bar|2026-12-01T01:10:00|gpu-14
32|PENDING|erin|tenant-bar|tenant-bar|N/A|
33|RUNNING|dave|tenant-bar|tenant-bar|2026-12-01T02:00:00|gpu-[14-15]
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
    assert jobs[2].nodes == "gpu-[14-15]"
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
    held = [Job("40", "PENDING", "erin", "tenant-bar", "tenant-bar", "N/A", "")]
    assert _progress(drain("graceful", 1), held) == "1 jobs still in the queue (40 (erin, pending))"


def test_a_job_completing_past_its_bound_is_stuck_and_the_way_out_names_its_node() -> None:
    ended = datetime.fromisoformat("2026-12-01T02:00:00").timestamp()
    jobs = parse_squeue(
        "41|COMPLETING|dave|tenant-bar|tenant-bar|2026-12-01T02:00:00|gpu-15\n"
        "42|COMPLETING|erin|tenant-bar|tenant-bar|2026-12-01T02:04:50|gpu-14\n"
        "43|RUNNING|erin|tenant-bar|tenant-bar|2026-12-01T01:00:00|gpu-14\n"
        "44|COMPLETING|erin|tenant-bar|tenant-bar|Unknown|gpu-14\n"
    )
    # Five minutes after 41 ended: 42 ended ten seconds ago, 43 runs, 44's end is not known.
    stuck = stuck_completing(jobs, 60, ended + 300)
    assert [job.id for job in stuck] == ["41"]
    assert _stuck(stuck) == (
        "1 jobs stuck completing (CG): 41 (dave, completing) on gpu-15, ended 2026-12-01T02:00:00"
    )
    step = unstick(stuck)
    assert "scontrol update NodeName=gpu-15 State=DOWN Reason=stuck-epilog" in step
    assert "ps -ef | grep -E 'epilog|slurmd'" in step
