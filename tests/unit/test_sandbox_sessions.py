"""The marks by which a test session tells a sandbox a killed session left behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

from providers.processes import start_time
from sandbox.sessions import SessionMarks


def test_no_marks_is_no_killed_session(tmp_path: Path) -> None:
    assert not SessionMarks(tmp_path / "sessions").left_by_killed_sessions()


def test_a_running_session_holds_its_mark_until_it_ends(tmp_path: Path) -> None:
    marks = SessionMarks(tmp_path / "sessions")
    with marks.held():
        assert [m.name for m in marks.directory.iterdir()] != []
        assert not marks.left_by_killed_sessions()
    assert list(marks.directory.iterdir()) == []


def test_the_mark_of_a_dead_session_is_found(tmp_path: Path) -> None:
    marks = SessionMarks(tmp_path / "sessions")
    dead = subprocess.Popen(["sleep", "30"])
    started = start_time(dead.pid)
    dead.kill()
    dead.wait()
    marks.directory.mkdir()
    (marks.directory / str(dead.pid)).write_text(str(started))
    assert marks.left_by_killed_sessions()
    # While another session runs, the dead one's leftovers may be in its use: nothing is reset.
    with marks.held():
        assert not marks.left_by_killed_sessions()


def test_a_reused_pid_is_not_taken_for_the_dead_session(tmp_path: Path) -> None:
    marks = SessionMarks(tmp_path / "sessions")
    marks.directory.mkdir()
    alive = subprocess.Popen(["sleep", "30"])
    try:
        (marks.directory / str(alive.pid)).write_text("1")  # started at another time
        assert marks.left_by_killed_sessions()
    finally:
        alive.kill()
        alive.wait()
