"""The test suite's time budget, so that a change that makes `make test` slow is seen in its own
submission rather than when CI stops at 90 minutes.

`make test` exports when it started (GPU_TENANTS_TEST_STARTED, seconds since the epoch), so the
budget covers lint, types and the docs too; a bare `pytest` counts from its own start. Past the
goal the run ends with a warning that points at the slowest tests (`--durations`, printed on every
run); past the limit it fails. The limit sits well above the goal, because this machine has run
about twice as slow on some days, and well under CI's 90 minutes.
"""

from __future__ import annotations

import os
import time

import pytest
from _pytest.terminal import TerminalReporter

GOAL_MINUTES = 25
LIMIT_MINUTES = 60

_STARTED = "GPU_TENANTS_TEST_STARTED"


def _is_controller(config: pytest.Config) -> bool:
    """Whether this process runs the session as a whole: not one of pytest-xdist's workers."""
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if _is_controller(config):
        os.environ.setdefault(_STARTED, str(int(time.time())))


def _minutes() -> float:
    return (time.time() - float(os.environ[_STARTED])) / 60


def pytest_terminal_summary(terminalreporter: TerminalReporter, config: pytest.Config) -> None:
    if not _is_controller(config) or _STARTED not in os.environ:
        return
    took = _minutes()
    line = f"the suite took {took:.1f} minutes (goal {GOAL_MINUTES}, limit {LIMIT_MINUTES})"
    if took > LIMIT_MINUTES:
        terminalreporter.write_line(
            f"FAILED: {line}: make the slowest tests above faster (docs/testing.md says how)",
            red=True,
        )
    elif took > GOAL_MINUTES:
        terminalreporter.write_line(
            f"WARNING: {line}: the slowest tests are listed above (docs/testing.md says how to "
            "make a test share a stack or wait on an event)",
            yellow=True,
        )
    else:
        terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if _is_controller(session.config) and _STARTED in os.environ and _minutes() > LIMIT_MINUTES:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
