"""The activities: the fleet commands' own per-stack work, run by a worker. Each returns what the
fleet command reports for the stack, plus which worker did it."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
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


@dataclass(frozen=True)
class StackTask:
    stack: str
    project: str  # the project's folder, the same path on every worker
    pin: RunPin


@activity.defn(name="drift_stack")
def drift_stack(task: StackTask) -> dict[str, Any]:
    """The stack's drift, as `drift` reports it. Read-only and lock-free (a refresh preview), so
    retrying it is safe; a worker on other code than the run's refuses, without retries."""
    project = Path(task.project)
    try:
        task.pin.verify(project)
    except StackError as error:
        raise ApplicationError(str(error), type="PinMismatch", non_retryable=True) from None
    return {**check_stack(Stacks(project), task.stack).as_json(), "worker": WORKER}
