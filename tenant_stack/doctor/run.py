"""Every check at once, each group on a thread of its own, each bounded: the backends are
independent, and one that hangs must not hide the others' answers."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tenant_stack.doctor.backends import (
    check_authentik,
    check_retention,
    check_slurm,
    check_temporal,
    check_weka,
)
from tenant_stack.doctor.engine import check_engine, check_state
from tenant_stack.doctor.kubernetes import check_kubernetes, steps_needed
from tenant_stack.doctor.report import FAILED, Check

__all__ = ["DoctorError", "run_checks"]


class DoctorError(Exception):
    """A check could not run at all (a bug or a broken install, not a backend's answer)."""


def run_checks(project: Path, timeout: float) -> list[Check]:
    """The checks of every backend, in a fixed order. Each command or request is bounded by
    `timeout` seconds, and each backend's group by `timeout` per call it makes; a group that
    has not finished by then is one failed check (its thread is a daemon: it cannot keep the
    command from exiting)."""
    groups: dict[str, tuple[int, Callable[[], list[Check]]]] = {
        "kubernetes": (steps_needed(os.environ), lambda: check_kubernetes(timeout)),
        "authentik": (3, lambda: check_authentik(timeout)),
        "weka": (4, lambda: check_weka(timeout)),
        "slurm": (5, lambda: check_slurm(timeout)),
        "retention": (2, check_retention),
        "pulumi engine": (2, lambda: check_engine(project, timeout)),
        "pulumi state": (5, lambda: check_state(project, timeout)),
        "temporal": (2, lambda: check_temporal(os.environ.get("TEMPORAL_ADDRESS"), timeout)),
    }
    results: dict[str, list[Check]] = {}
    broken: dict[str, BaseException] = {}

    def run(name: str, check: Callable[[], list[Check]]) -> None:
        # What a check does not expect is not a backend's answer: the command stops with it
        # (exit 2) rather than reporting it as a failed check.
        try:
            results[name] = check()
        except Exception as error:
            broken[name] = error

    threads = {
        name: threading.Thread(target=run, args=(name, check), daemon=True)
        for name, (_, check) in groups.items()
    }
    for thread in threads.values():
        thread.start()
    started = time.monotonic()
    for name, thread in threads.items():
        steps = groups[name][0]
        thread.join(max(0.0, started + steps * timeout - time.monotonic()))
    if broken:
        name, error = next(iter(broken.items()))
        raise DoctorError(f"the {name} checks could not run: {type(error).__name__}: {error}")
    checks: list[Check] = []
    for name, (steps, _) in groups.items():
        checks += results.get(name) or [
            Check(
                name,
                FAILED,
                f"no answer within {steps * timeout:g}s",
                f"check that {name} is up and reachable from here",
            )
        ]
    return checks
