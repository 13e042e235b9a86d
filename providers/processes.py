"""What /proc says of a process, for code that records a process and must later act on it: a pid
alone may by then name another process, so a process is named by its pid and start time."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["kill_session", "session_members", "start_time"]


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


def session_members(sid: int) -> list[int]:
    """The live processes in session `sid`, whatever their process groups."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


def kill_session(leader: int, started: str, timeout: float = 60.0) -> None:
    """SIGKILLs every process of the session that the process `leader` (started at `started`)
    leads, and returns once none is left: a whole session, since a program may put its children
    in process groups of their own (the Pulumi engine does so with its plugins). A leader pid
    since given to another process means the old session is gone (the kernel never hands out a
    pid that is still a session's id), and nothing is signalled. TimeoutError if the session
    outlives `timeout` (a process stuck in the kernel)."""
    now = start_time(leader)
    if now is not None and now != started:
        return
    deadline = time.monotonic() + timeout
    while members := session_members(leader):
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise TimeoutError(f"session {leader} still has {members} after SIGKILL")
        time.sleep(0.1)
