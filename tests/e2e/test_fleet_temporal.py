"""The fleet's drift check on Temporal, end to end: the sandbox's dev server, two worker processes
with PULUMI_HOMEs of their own, stacks in the shared S3 state backend, the real engine. The
report is the `drift` command's; each stack is checked once, by one of the workers; a stack
another operation holds is refused with that workflow's id; a worker on other code refuses."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.layout import SandboxLayout
from tests.backends import operator_command
from tests.fleet_workers import Fleet, events, fleet_of, started_on, temporal

pytestmark = [pytest.mark.sandbox]

PROGRAM = '''"""One ConfigMap per stack: something for the drift check to read live."""

import pulumi
import pulumi_kubernetes as k8s

k8s.core.v1.ConfigMap(
    "settings",
    metadata={"name": f"fleet-{pulumi.get_stack()}", "namespace": "default"},
    data={"owner": pulumi.get_stack()},
)
'''


def set_owner(stack: str, owner: str) -> None:
    """The stack's ConfigMap changed behind Pulumi's back (or put back)."""
    patch = json.dumps({"data": {"owner": owner}})
    subprocess.run(
        ["kubectl", "patch", "configmap", f"fleet-{stack}", "-n", "default", "-p", patch],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def fleet(sandbox: SandboxLayout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with fleet_of(
        tmp_path_factory.mktemp("fleet-temporal"), f"ft{os.getpid()}", PROGRAM, 2
    ) as made:
        yield made


def fleet_command(fleet: Fleet, *args: str) -> subprocess.CompletedProcess[str]:
    options = ("--project", str(fleet.project), "--task-queue", fleet.queue)
    return operator_command("fleet", "drift", *args, *options, env=fleet.env)


def comparable(stacks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A report without what differs between two checks of the same stacks: times, workers."""
    return [{k: v for k, v in s.items() if k not in ("seconds", "worker")} for s in stacks]


def test_two_workers_share_the_drift_of_the_fleet_and_report_as_the_drift_command(
    fleet: Fleet,
) -> None:
    drifted = fleet.stacks[1]
    set_owner(drifted, "someone else")
    through_temporal = fleet_command(fleet, "--workers", "3", "--json")
    direct = operator_command("drift", "--project", fleet.project, "--json", env=fleet.env)
    assert (through_temporal.returncode, direct.returncode) == (1, 1), through_temporal.stderr
    report = json.loads(through_temporal.stdout)
    assert comparable(report["stacks"]) == comparable(json.loads(direct.stdout)["stacks"])
    assert [s["status"] for s in report["stacks"]] == ["clean", "drift", "clean"]
    changed = report["stacks"][1]["resources"][0]
    assert (changed["resource"], changed["properties"][0]["path"]) == ("settings", "data.owner")
    # Each stack once, by one worker or the other, and both workers took part.
    pids = {str(worker.pid) for worker in fleet.workers}
    assert {s["worker"].rsplit(":", 1)[1] for s in report["stacks"]} == pids
    for stack in fleet.stacks:
        history = events(stack)
        assert history.count("EVENT_TYPE_ACTIVITY_TASK_COMPLETED") == 1, history
        assert history.count("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") == 1, history
    assert report["pin"]["commit"]
    assert len(report["pin"]["tenants"]) == 64
    text = fleet_command(fleet, drifted)
    assert text.returncode == 1
    assert "data.owner" in text.stdout
    assert "someone else" in text.stdout
    set_owner(drifted, drifted)


def test_a_stack_busy_with_another_operation_is_refused_with_its_workflow_id(
    fleet: Fleet,
) -> None:
    busy, free = fleet.stacks[0], fleet.stacks[2]
    # An operation nobody serves stays running: the stack's workflow id is taken.
    idle = ("--type", "StackOperation", "--task-queue", f"{fleet.queue}-idle")
    started = temporal("workflow", "start", *idle, "--workflow-id", busy)
    assert started.returncode == 0, started.stderr
    try:
        result = fleet_command(fleet, busy, free, "--json")
    finally:
        temporal("workflow", "terminate", "--workflow-id", busy, "--reason", "test over")
    assert result.returncode == 2, result.stderr
    by_stack = {s["stack"]: s for s in json.loads(result.stdout)["stacks"]}
    assert by_stack[free]["status"] == "clean"
    assert by_stack[busy]["status"] == "error"
    assert f"workflow id {busy}" in by_stack[busy]["error"]


def test_a_run_pinned_to_other_code_is_refused_by_the_worker(fleet: Fleet) -> None:
    stack = fleet.stacks[2]
    run = {
        "stacks": [stack],
        "project": str(fleet.project),
        "pin": {"commit": "0" * 40, "tenants": "0" * 64},
        "workers": 1,
    }
    workflow_id = f"{fleet.queue}-pinned"
    start = ("--type", "FleetDrift", "--task-queue", fleet.queue, "--workflow-id", workflow_id)
    started = temporal("workflow", "execute", *start, "--input", json.dumps(run), "-o", "json")
    assert started.returncode == 0, started.stderr
    result = json.loads(started.stdout)["result"]
    (report,) = result["stacks"]
    assert report["status"] == "error"
    assert f"pinned to commit {'0' * 40}" in report["error"]
    # Refused at once, never retried: a worker on other code must not touch the stack.
    assert events(stack).count("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") == 1


def test_the_drift_schedule_fires_and_its_report_is_read_with_temporals_cli(
    fleet: Fleet,
) -> None:
    options = ("--project", str(fleet.project), "--task-queue", fleet.queue)
    # Its first run is due at the next whole interval: within a second.
    made = operator_command("fleet", "schedule", "--every-seconds", "1", *options, env=fleet.env)
    assert made.returncode == 0, made.stderr
    schedule = made.stdout.strip()
    try:
        deadline = time.monotonic() + 120
        while True:
            described = temporal("schedule", "describe", "--schedule-id", schedule, "-o", "json")
            assert described.returncode == 0, described.stderr
            actions = json.loads(described.stdout).get("info", {}).get("recentActions") or []
            if actions:
                break
            assert time.monotonic() < deadline, "the Schedule never fired"
            time.sleep(0.2)
    finally:
        temporal("schedule", "delete", "--schedule-id", schedule)
    run = actions[0]["startWorkflowResult"]["workflowId"]
    finished = temporal("workflow", "result", "--workflow-id", run, "--output", "json")
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)["result"]
    # A scheduled run checks every stack of the project as it is when the run starts.
    assert sorted(s["stack"] for s in report["stacks"]) == sorted(fleet.stacks)
    assert {s["status"] for s in report["stacks"]} == {"clean"}


def test_a_worker_killed_mid_drift_leaves_the_run_to_the_other(fleet: Fleet) -> None:
    # Last in this module: it leaves one worker dead.
    victim = fleet.workers[0]
    started = fleet_command(fleet, "--workers", "3", "--no-wait")
    assert started.returncode == 0, started.stderr
    workflow_id = started.stdout.strip()
    deadline = time.monotonic() + 120
    while not (taken := [stack for stack in fleet.stacks if started_on(stack, victim)]):
        assert time.monotonic() < deadline, "the victim never took a stack"
        time.sleep(0.2)
    victim.kill()
    victim.wait()
    finished = temporal("workflow", "result", "--workflow-id", workflow_id, "--output", "json")
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)["result"]
    assert [s["status"] for s in report["stacks"]] == ["clean"] * 3
    # The stack the victim died on was checked again, by the other worker.
    (lost,) = taken
    by_stack = {s["stack"]: s for s in report["stacks"]}
    assert by_stack[lost]["worker"].endswith(f":{fleet.workers[1].pid}")
