"""Helpers of the tests of the fleet on Temporal: the Temporal CLI against the tests' sandbox,
fleet workers as separate processes, and a small project whose stacks live in the sandbox's S3
state backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.backends import run_pulumi

ROOT = Path(__file__).resolve().parents[1]


def temporal(*args: str) -> subprocess.CompletedProcess[str]:
    """The Temporal CLI against the sandbox's server (TEMPORAL_ADDRESS)."""
    return subprocess.run(
        ["temporal", *args], capture_output=True, text=True, timeout=120, check=False
    )


def events(workflow_id: str) -> list[str]:
    """The event types of the workflow's (latest run's) history."""
    shown = temporal("workflow", "show", "--workflow-id", workflow_id, "--output", "json")
    assert shown.returncode == 0, shown.stderr
    return [str(event["eventType"]) for event in json.loads(shown.stdout)["events"]]


def wait_for_line(log: Path, start: str, process: subprocess.Popen[str]) -> None:
    """Until `log` has a line starting with `start`; fails with the log if `process` ends."""
    deadline = time.monotonic() + 60
    while not any(line.startswith(start) for line in log.read_text().splitlines()):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


def start_worker(tmp: Path, name: str, queue: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`python -m tenant_stack worker` with a PULUMI_HOME of its own, as on another machine (with
    the plugins `make setup` installed), once it serves `queue`."""
    home = tmp / name
    home.mkdir()
    (home / "plugins").symlink_to(Path(os.environ["PULUMI_HOME"]) / "plugins")
    log = tmp / f"{name}.log"
    argv = ["worker", "--task-queue", queue, "--concurrency", "1"]
    with log.open("w") as output:
        worker = subprocess.Popen(
            [sys.executable, "-m", "tenant_stack", *argv],
            cwd=ROOT,
            env={**os.environ, **env, "PULUMI_HOME": str(home)},
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    wait_for_line(log, f"worker on {queue}", worker)
    return worker


def stop_workers(workers: list[subprocess.Popen[str]]) -> None:
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        worker.wait(timeout=60)


def s3_project(directory: Path, name: str, program: str) -> dict[str, str]:
    """A project of `program` in `directory` (with a tenants/ for the run pin to digest); the
    environment that keeps its stacks in the sandbox's S3 state backend."""
    (directory / "tenants").mkdir(parents=True)
    (directory / "tenants" / "specs.yaml").write_text("# what the run pins, with the commit\n")
    (directory / "Pulumi.yaml").write_text(
        f"name: {name}\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / 'venv'}\n"
    )
    (directory / "__main__.py").write_text(program)
    return {
        "PULUMI_BACKEND_URL": os.environ["GPU_TENANTS_S3_STATE_URL"],
        "PULUMI_CONFIG_PASSPHRASE": "test-only-passphrase",
    }


def remove_stacks(env: dict[str, str], project: Path, stacks: list[str]) -> None:
    for stack in stacks:
        run_pulumi(env, project, "destroy", "--stack", stack, "--yes", "--skip-preview")
        run_pulumi(env, project, "stack", "rm", stack, "--yes")


def pending_activities(workflow_id: str) -> list[dict[str, Any]]:
    """The workflow's activities that are scheduled or running now, as Temporal describes them
    (each with its state, lastWorkerIdentity `pid@host` and heartbeat details)."""
    described = temporal("workflow", "describe", "--workflow-id", workflow_id, "--output", "json")
    if described.returncode != 0:
        return []
    return list(json.loads(described.stdout).get("pendingActivities") or [])


def started_on(stack: str, worker: subprocess.Popen[str]) -> bool:
    """Whether the stack's operation has an activity running on `worker` now."""
    return any(
        str(activity.get("lastWorkerIdentity", "")).startswith(f"{worker.pid}@")
        and activity.get("state") == "PENDING_ACTIVITY_STATE_STARTED"
        for activity in pending_activities(stack)
    )


@dataclass(frozen=True)
class Fleet:
    project: Path
    stacks: list[str]
    env: dict[str, str]  # the stacks' backend (S3), for the commands and the engine
    queue: str
    workers: list[subprocess.Popen[str]]


@contextmanager
def fleet_of(tmp: Path, tag: str, program: str, workers: int) -> Iterator[Fleet]:
    """Three stacks of `program` (`<tag>-a`, `-b`, `-c`) brought up in the S3 state backend,
    and `workers` worker processes on a queue of their own; all gone afterwards."""
    project = tmp / "project"
    env = s3_project(project, tag, program)
    stacks = [f"{tag}-{name}" for name in ("a", "b", "c")]
    queue = f"{tag}-queue"
    serving: list[subprocess.Popen[str]] = []
    made: list[str] = []
    try:
        for stack in stacks:
            run_pulumi(env, project, "stack", "init", stack)
            made.append(stack)
            run_pulumi(env, project, "up", "--stack", stack, "--yes", "--skip-preview")
        for index in range(1, workers + 1):
            serving.append(start_worker(tmp, f"worker-{index}", queue, env))
        yield Fleet(project, stacks, env, queue, serving)
    finally:
        stop_workers(serving)
        remove_stacks(env, project, made)
