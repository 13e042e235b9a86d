"""Killing a recorded session whole, and never a process that only reuses its pid."""

from __future__ import annotations

import os
import subprocess
import time

from providers.processes import kill_session, session_members, start_time


def test_the_whole_session_is_gone_when_kill_session_returns() -> None:
    # A leader with children in process groups of their own (job control), as the engine
    # starts its plugins.
    leader = subprocess.Popen(
        ["bash", "-c", "set -m; sleep 60 & sleep 60 & wait"], start_new_session=True
    )
    started = start_time(leader.pid)
    assert started is not None
    # bash and both sleeps, each in its group: a child is in bash's group until its setpgid.
    deadline = time.monotonic() + 10
    while len({os.getpgid(pid) for pid in session_members(leader.pid)}) < 3:
        assert time.monotonic() < deadline, session_members(leader.pid)
        time.sleep(0.05)
    kill_session(leader.pid, started)
    assert session_members(leader.pid) == []
    assert leader.wait(timeout=5) == -9


def test_a_pid_given_to_another_process_is_not_signalled() -> None:
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        kill_session(other.pid, "1")  # the recorded process started at another time
        assert other.poll() is None
        assert session_members(other.pid) == [other.pid]
    finally:
        other.kill()
        other.wait()


def test_a_session_already_gone_is_nothing_to_do() -> None:
    gone = subprocess.Popen(["true"], start_new_session=True)
    started = start_time(gone.pid) or "0"
    gone.wait()
    kill_session(gone.pid, started)
    assert start_time(gone.pid) is None
