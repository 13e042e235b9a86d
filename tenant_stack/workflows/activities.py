"""The activities: the fleet commands' own per-stack work, run by a worker. Each returns what the
fleet command reports for the stack, plus which worker did it.

An update (`pulumi up`) writes to the backends, so it is retried only when its worker died, and
only once the engine that worker started is surely gone: the engine runs in a session of its own
(with the plugins it starts, each in a process group of its own), named in every heartbeat
(host, boot, session), and the next attempt kills that session whole before it clears what the
dead run left (its lock, its pending creates)."""

from __future__ import annotations

import contextvars
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from providers.processes import kill_session, start_time
from tenant_stack.errors import StackError
from tenant_stack.fleet.drift import check_stack
from tenant_stack.fleet.engine_events import failure
from tenant_stack.fleet.rollout import finish_update
from tenant_stack.stacks import Engine, Running, Stacks
from tenant_stack.workflows.pin import RunPin

# The host this worker is on, as the engine sessions it starts are named: a worker on another
# machine asks this one's own queue (`<queue>@<host>`) to make sure they are gone.
# GPU_TENANTS_WORKER_HOST overrides the hostname where machines share one (containers).
HOST = os.environ.get("GPU_TENANTS_WORKER_HOST") or socket.gethostname()
# Which worker ran an activity, in its report: its host and process.
WORKER = f"{HOST}:{os.getpid()}"
# The workflows give up on an attempt after this long without a heartbeat (its worker died), and
# retry it where that is safe. A run can set its own (StackTask.heartbeat_timeout, from
# GPU_TENANTS_HEARTBEAT_TIMEOUT where the run is started): each worker killed is waited out once,
# and the sandbox's tests kill workers on purpose.
HEARTBEAT_TIMEOUT = 20.0
# A worker beats this often while a stack command runs, or four times per timeout where the run's
# is shorter: several beats must be able to go missing before a live attempt is given up on.
HEARTBEAT_EVERY = 5.0
# Below this, a worker busy for a moment (a slow machine, the engine's start) would look dead.
HEARTBEAT_TIMEOUT_MIN = 2.0
# The failure type of an `up` whose earlier attempt's engine ran on another host.
ENGINE_ELSEWHERE = "EngineElsewhere"


@dataclass(frozen=True)
class StackTask:
    stack: str
    project: str  # the project's folder, the same path on every worker
    pin: RunPin
    # The session of an earlier attempt's engine that its own host has since made sure is gone
    # (reap_session): what it left must be cleared before this `up`.
    reaped: dict[str, Any] | None = None
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT  # seconds; the run's, for each attempt


@activity.defn(name="tenant_stacks")
def tenant_stacks(project: str) -> list[str]:
    """Every tenant stack of the project now: what a scheduled run checks."""
    return Stacks(Path(project)).tenants()


@activity.defn(name="drift_stack")
def drift_stack(task: StackTask) -> dict[str, Any]:
    """The stack's drift, as `drift` reports it. Read-only and lock-free (a refresh preview), so
    retrying it is safe; a worker on other code than the run's refuses, without retries."""
    stacks = _pinned(task)
    with _heartbeats():
        report = check_stack(stacks, task.stack)
    return {**report.as_json(), "worker": WORKER}


@dataclass(frozen=True)
class EngineRun:
    """Where an attempt's engine runs: its heartbeats' details, read by the next attempt."""

    host: str
    boot: str  # the host's boot id: a session on a host booted since is surely gone
    session: int  # the engine's session: it and every plugin it started (the engine leads it)
    started: str  # the engine's start time, so that a reused pid is never taken for it


@activity.defn(name="update_stack")
def update_stack(task: StackTask) -> dict[str, Any]:
    """`pulumi up` of the stack: its update as a rollout reports it. A failed `up` is reported,
    never retried (it may have written half); an attempt after one whose worker died first
    makes sure that worker's engine is gone, and clears what it left."""
    stacks = _pinned(task)
    earlier = activity.info().heartbeat_details
    if earlier:
        recovered = _recover(stacks, task.stack, EngineRun(**earlier[0]))
    elif task.reaped:
        recovered = _clear(stacks, task.stack, EngineRun(**task.reaped))
    else:
        recovered = ""
    started = time.monotonic()
    result = _in_own_session(stacks.start_up(task.stack))
    update = finish_update(task.stack, result, time.monotonic() - started, recovered)
    return {**update.as_json(), "worker": WORKER}


def _in_own_session(running: Running) -> Engine:
    """What a command that writes to a stack printed, once it ends; meanwhile every heartbeat
    names its session, which the next attempt kills if this worker dies."""
    sid = running.process.pid
    with _heartbeats(EngineRun(HOST, _boot_id(), sid, start_time(sid) or "")):
        return running.wait()


def _recover(stacks: Stacks, stack: str, earlier: EngineRun) -> str:
    """Kills the earlier attempt's engine, if it may still run, then clears the stack; what was
    done, for the report. An engine on another host cannot be made sure of from here: the
    failure (EngineElsewhere, with the engine in its details) has the workflow ask that host."""
    if earlier.host != HOST:
        raise ApplicationError(
            f"an earlier attempt at `up` of {stack} ran its engine on host {earlier.host} "
            f"(session {earlier.session}), whose worker stopped answering: only that host can "
            "make sure it is gone",
            asdict(earlier),
            type=ENGINE_ELSEWHERE,
            non_retryable=True,
        )
    reap_session(earlier)
    return _clear(stacks, stack, earlier)


@activity.defn(name="reap_session")
def reap_session(engine: EngineRun) -> None:
    """Makes sure an engine session this host started is gone: SIGKILL to every process of it,
    and back once none is left (on a host booted since, nothing is left to kill). Run on the
    host's own queue when another host asks."""
    if engine.boot == _boot_id():
        try:
            kill_session(engine.session, engine.started)
        except TimeoutError as error:
            raise ApplicationError(str(error), type="EngineStuck") from None


def _clear(stacks: Stacks, stack: str, earlier: EngineRun) -> str:
    """Clears what a run whose engine is surely gone left of the stack (its lock, its pending
    creates); what was done, for the report."""
    where = f"host {earlier.host}, session {earlier.session}"
    for args in stacks.after_killed_run(stack):
        result = _in_own_session(stacks.start_write(*args))
        if result.returncode != 0:
            said = failure(result, [])
            raise ApplicationError(f"`{result.command}` failed: {said}", type="RecoveryFailed")
    return (
        f"an earlier attempt's worker died during `up` ({where}): its engine was killed, the "
        "stack's lock released and its pending creates cleared before this `up`"
    )


def _pinned(task: StackTask) -> Stacks:
    """The project's stacks, once this worker is shown to run what the run is pinned to; a
    worker on other code refuses, without retries."""
    project = Path(task.project)
    try:
        task.pin.verify(project)
    except StackError as error:
        raise ApplicationError(str(error), type="PinMismatch", non_retryable=True) from None
    return Stacks(project)


def _boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@contextmanager
def _heartbeats(*details: Any) -> Iterator[None]:
    """Heartbeats (with `details`, which a retry reads) from a thread of their own while the
    block runs: a stack command blocks the activity's thread for as long as the engine runs."""
    # The activity's context, which activity.heartbeat reads, copied for the other thread.
    context = contextvars.copy_context()
    stop = threading.Event()
    every = _beat_every(activity.info().heartbeat_timeout)
    context.run(activity.heartbeat, *details)

    def beating() -> None:
        while not stop.wait(every):
            context.run(activity.heartbeat, *details)

    thread = threading.Thread(target=beating, name="heartbeats", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _beat_every(timeout: timedelta | None) -> float:
    """How often to beat under the heartbeat timeout the workflow set on this attempt (its own,
    not this worker's idea of it: a run started with a shorter one is served by every worker)."""
    if timeout is None:
        return HEARTBEAT_EVERY
    return min(HEARTBEAT_EVERY, timeout.total_seconds() / 4)
