"""What /proc says of a process, for code that records a process and must later act on it: a pid
alone may by then name another process, so a process is named by its pid and start time."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["group_members", "kill_group", "start_time"]


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (which may hold spaces), or None when
    there is no such process or it is a zombie (dead, waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields


def start_time(pid: int) -> str | None:
    """When the process `pid` started (clock ticks since boot), or None if there is none: with
    the pid, it names one process even after the kernel reuses the pid."""
    fields = _stat(pid)
    return fields[19] if fields else None


def group_members(pgid: int) -> list[int]:
    """The live processes in process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def kill_group(leader: int, started: str, timeout: float = 60.0) -> None:
    """SIGKILLs the process group that the process `leader` (started at `started`) leads, and
    returns once none of it is left. A leader pid since given to another process means the old
    group is gone (the kernel never hands out a pid that is still a group's id), and nothing is
    signalled. TimeoutError if the group outlives `timeout` (a process stuck in the kernel)."""
    now = start_time(leader)
    if now is not None and now != started:
        return
    try:
        os.killpg(leader, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while members := group_members(leader):
        if time.monotonic() > deadline:
            raise TimeoutError(f"process group {leader} still has {members} after SIGKILL")
        time.sleep(0.1)
