"""Marks that the processes using a sandbox leave while they run, so that whoever comes next can
tell a sandbox left behind by a killed run (whose leftovers nobody will remove) from one in use."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from providers.processes import start_time


class SessionMarks:
    """One file per running session in `directory`, named by its pid, holding its start time."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def left_by_killed_sessions(self) -> bool:
        """Whether sessions marked the sandbox and none of them is still running."""
        marks = list(self.directory.glob("*"))
        running = [m for m in marks if str(start_time(int(m.name))) == m.read_text()]
        return bool(marks) and not running

    @contextmanager
    def held(self) -> Iterator[None]:
        """This process's mark for the length of the block; a kill leaves it behind."""
        self.directory.mkdir(parents=True, exist_ok=True)
        mark = self.directory / str(os.getpid())
        mark.write_text(str(start_time(os.getpid())))
        try:
            yield
        finally:
            mark.unlink(missing_ok=True)
