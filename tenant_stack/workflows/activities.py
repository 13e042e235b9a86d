"""The activities: the fleet commands' own per-stack work, run by a worker. Each returns what the
fleet command reports for the stack, plus which worker did it."""

from __future__ import annotations

import contextvars
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenant_stack.errors import StackError
from tenant_stack.fleet.drift import check_stack
from tenant_stack.stacks import Stacks
from tenant_stack.workflows.pin import RunPin

# Which worker ran an activity, in its report: its host and process.
WORKER = f"{socket.gethostname()}:{os.getpid()}"
# A worker beats this often while a stack command runs; the workflows give up on an attempt after
# HEARTBEAT_TIMEOUT without one (the worker died), and retry it where that is safe.
HEARTBEAT_EVERY = 5.0
HEARTBEAT_TIMEOUT = timedelta(seconds=20)


@dataclass(frozen=True)
class StackTask:
    stack: str
    project: str  # the project's folder, the same path on every worker
    pin: RunPin


@activity.defn(name="tenant_stacks")
def tenant_stacks(project: str) -> list[str]:
    """Every tenant stack of the project now: what a scheduled run checks."""
    return Stacks(Path(project)).tenants()


@activity.defn(name="drift_stack")
def drift_stack(task: StackTask) -> dict[str, Any]:
    """The stack's drift, as `drift` reports it. Read-only and lock-free (a refresh preview), so
    retrying it is safe; a worker on other code than the run's refuses, without retries."""
    project = Path(task.project)
    try:
        task.pin.verify(project)
    except StackError as error:
        raise ApplicationError(str(error), type="PinMismatch", non_retryable=True) from None
    with _heartbeats():
        report = check_stack(Stacks(project), task.stack)
    return {**report.as_json(), "worker": WORKER}


@contextmanager
def _heartbeats() -> Iterator[None]:
    """Heartbeats from a thread of their own while the block runs: a stack command blocks the
    activity's thread for as long as the engine runs."""
    # The activity's context, which activity.heartbeat reads, copied for the other thread.
    context = contextvars.copy_context()
    stop = threading.Event()

    def beating() -> None:
        while not stop.wait(HEARTBEAT_EVERY):
            context.run(activity.heartbeat)

    thread = threading.Thread(target=beating, name="heartbeats", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
