"""Killing a recorded process group whole, and never a process that only reuses its pid."""

from __future__ import annotations

import subprocess
import time

from providers.processes import group_members, kill_group, start_time


def test_the_whole_group_is_gone_when_kill_group_returns() -> None:
    # A leader with a child of its own, as the engine with its plugins.
    leader = subprocess.Popen(["bash", "-c", "sleep 60 & sleep 60"], start_new_session=True)
    started = start_time(leader.pid)
    assert started is not None
    while len(group_members(leader.pid)) < 3:  # bash and both sleeps
        time.sleep(0.05)
    kill_group(leader.pid, started)
    assert group_members(leader.pid) == []
    assert leader.wait(timeout=5) == -9


def test_a_pid_given_to_another_process_is_not_signalled() -> None:
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        kill_group(other.pid, "1")  # the recorded process started at another time
        assert other.poll() is None
        assert group_members(other.pid) == [other.pid]
    finally:
        other.kill()
        other.wait()


def test_a_group_already_gone_is_nothing_to_do() -> None:
    gone = subprocess.Popen(["true"], start_new_session=True)
    started = start_time(gone.pid) or "0"
    gone.wait()
    kill_group(gone.pid, started)
    assert start_time(gone.pid) is None
