"""Rollouts on Temporal, end to end: the sandbox's dev server, two worker processes with
PULUMI_HOMEs of their own, stacks in the shared S3 state backend, the real engine. Waves run in
order and the report says what changed; the first wave with a failed stack is the last; a stack
another operation holds fails its wave; a worker killed during an `up` that writes leaves the
rollout to the other, which kills the dead worker's engine before it clears the stack."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.processes import session_members
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import (
    authentik,
    kubectl_json,
    labelled,
    mounted,
    one_node_tenant,
    operator_command,
    run_pulumi,
    sacctmgr,
    weka,
)
from tests.fleet_workers import (
    Fleet,
    fleet_of,
    pending_activities,
    start_worker,
    stop_workers,
    temporal,
)

pytestmark = [pytest.mark.sandbox]

# Two ConfigMaps with a slow step between them, so that an `up` can be killed while it writes:
# `first` is written, `pause` is being made, `second` is still to come. `pause` logs the start
# and end of each create with the pid of the process that runs it (the engine's provider host),
# and is held until the test opens its gate (a file beside the log, one per stack and release)
# or for config `pause` seconds at most: so it is surely still being made when its engine is
# killed, however long the dead worker takes to be noticed, and the retry's ends at once.
PROGRAM = '''"""A stack whose `up` writes, waits, and writes again."""

import os
import time

import pulumi
import pulumi_kubernetes as k8s
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider

stack = pulumi.get_stack()
config = pulumi.Config()
if config.get_bool("broken"):
    raise RuntimeError(f"the program of {stack} is broken on purpose (config broken: true)")
release = config.get("release") or "1"


class Pause(ResourceProvider):
    def create(self, props):
        with open(props["log"], "a") as log:
            log.write(f"start {os.getpid()} {props['release']}\\n")
        deadline = time.monotonic() + float(props["seconds"])
        while not os.path.exists(props["gate"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(props["log"], "a") as log:
            log.write(f"end {os.getpid()} {props['release']}\\n")
        return CreateResult(f"pause-{props['release']}", props)

    def diff(self, id, olds, news):
        changed = olds.get("release") != news["release"]
        return DiffResult(changes=changed, replaces=["release"] if changed else [])


def settings(name, after=None):
    return k8s.core.v1.ConfigMap(
        name,
        metadata={"name": f"rollout-{stack}-{name}", "namespace": "default"},
        data={"release": release},
        opts=pulumi.ResourceOptions(depends_on=after or []),
    )


class Paused(Resource):
    def __init__(self, name, props, opts):
        super().__init__(Pause(), name, props, opts)


here = os.path.dirname(os.path.abspath(__file__))
first = settings("first")
pause = Paused(
    "pause",
    {
        "release": release,
        "seconds": config.get("pause") or "0",
        "log": os.path.join(here, f"pause-{stack}.log"),
        "gate": os.path.join(here, f"pause-{stack}-{release}.open"),
    },
    pulumi.ResourceOptions(depends_on=[first]),
)
settings("second", [pause])
'''


@pytest.fixture(scope="module")
def fleet(sandbox: SandboxLayout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    # Three workers: each test that kills one leaves the others to finish its rollout.
    tmp = tmp_path_factory.mktemp("fleet-rollout")
    with fleet_of(tmp, f"fr{os.getpid()}", PROGRAM, 3) as made:
        yield made


def set_config(fleet: Fleet, stack: str, key: str, value: str | None) -> None:
    if value is None:
        run_pulumi(fleet.env, fleet.project, "config", "rm", key, "--stack", stack)
    else:
        run_pulumi(fleet.env, fleet.project, "config", "set", key, value, "--stack", stack)


def rollout(fleet: Fleet, *waves: list[str]) -> subprocess.CompletedProcess[str]:
    options = ["--project", str(fleet.project), "--task-queue", fleet.queue, "--workers", "2"]
    for wave in waves:
        options += ["--wave", ",".join(wave)]
    return operator_command("fleet", "rollout", "--json", *options, env=fleet.env)


# How long `pause` is held at most, as a bound: the tests that set it open the gate first.
HELD = "300"


def pause_log(fleet: Fleet, stack: str) -> list[list[str]]:
    log = fleet.project / f"pause-{stack}.log"
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def pause_starts(fleet: Fleet, stack: str, release: str) -> list[str]:
    """The pids that started making the stack's `pause` at `release`, in order."""
    return [pid for event, pid, at in pause_log(fleet, stack) if event == "start" and at == release]


def open_gate(fleet: Fleet, stack: str, release: str) -> None:
    """Lets every `pause` of the stack at `release` end: the one being made, any later one."""
    (fleet.project / f"pause-{stack}-{release}.open").touch()


def wait_for_retry(fleet: Fleet, stack: str, release: str) -> None:
    """Until a second engine started making `pause`: the retry, which runs its `up` only once
    the dead worker's engine is gone and the stack cleared."""
    deadline = time.monotonic() + 120
    while len(pause_starts(fleet, stack, release)) < 2:
        assert time.monotonic() < deadline, f"the retry's update of {stack} never reached `pause`"
        time.sleep(0.2)


def release_of(stack: str, name: str) -> str:
    configmap = kubectl_json("-n", "default", "get", "configmap", f"rollout-{stack}-{name}")
    return str(configmap["data"]["release"])


def statuses(report: dict[str, Any]) -> list[list[tuple[str, str]]]:
    return [[(s["stack"], s["status"]) for s in wave] for wave in report["waves"]]


def times(stack: str) -> tuple[str, str]:
    """When the stack's latest operation started and closed (RFC 3339, same clock)."""
    described = temporal("workflow", "describe", "--workflow-id", stack, "--output", "json")
    assert described.returncode == 0, described.stderr
    info = json.loads(described.stdout)["workflowExecutionInfo"]
    return str(info["startTime"]), str(info["closeTime"])


def test_waves_run_one_after_another_and_the_report_says_what_changed(fleet: Fleet) -> None:
    a, b, c = fleet.stacks
    for stack in fleet.stacks:
        set_config(fleet, stack, "release", "2")
    result = rollout(fleet, [a], [b, c])
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert statuses(report) == [[(a, "changed")], [(b, "changed"), (c, "changed")]]
    # All three replaced: `pause` by its own diff, and the Kubernetes provider replaces a
    # ConfigMap whose data changes (so that what mounts it sees a new object).
    assert report["waves"][0][0]["changes"] == {"replace": 3}
    for stack in fleet.stacks:
        assert (release_of(stack, "first"), release_of(stack, "second")) == ("2", "2")
    # The second wave started only once the first had ended.
    assert min(times(b)[0], times(c)[0]) > times(a)[1]
    assert report["pin"]["commit"]
    assert {s["worker"] for wave in report["waves"] for s in wave} <= {
        f"{os.uname().nodename}:{worker.pid}" for worker in fleet.workers
    }
    # Run again, nothing is left to change.
    again = rollout(fleet, [a], [b, c])
    assert again.returncode == 0, again.stderr
    assert statuses(json.loads(again.stdout)) == [
        [(a, "unchanged")],
        [(b, "unchanged"), (c, "unchanged")],
    ]


def test_the_first_wave_with_a_failed_stack_is_the_last(fleet: Fleet) -> None:
    a, b, c = fleet.stacks
    for stack in fleet.stacks:
        set_config(fleet, stack, "release", "3")
    set_config(fleet, b, "broken", "true")
    try:
        result = rollout(fleet, [a], [b], [c])
    finally:
        set_config(fleet, b, "broken", None)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert statuses(report) == [[(a, "changed")], [(b, "failed")], [(c, "not run")]]
    assert f"the program of {b} is broken on purpose" in report["waves"][1][0]["error"]
    assert release_of(a, "first") == "3"
    assert release_of(c, "first") == "2"  # never updated
    text = operator_command(
        "fleet", "rollout", "--wave", c, "--project", str(fleet.project),
        "--task-queue", fleet.queue, env=fleet.env,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "wave 1:",
        *[line for line in text.stdout.splitlines()[1:2] if line.startswith(f"  {c}: changed")],
        f"changed: {c}",
    ]


def test_a_stack_another_operation_holds_fails_its_wave(fleet: Fleet) -> None:
    busy, free = fleet.stacks[0], fleet.stacks[2]
    # An operation nobody serves stays running: the stack's workflow id is taken.
    idle = ("--type", "StackOperation", "--task-queue", f"{fleet.queue}-idle")
    started = temporal("workflow", "start", *idle, "--workflow-id", busy)
    assert started.returncode == 0, started.stderr
    try:
        result = rollout(fleet, [busy, free], [fleet.stacks[1]])
    finally:
        temporal("workflow", "terminate", "--workflow-id", busy, "--reason", "test over")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert statuses(report) == [
        [(busy, "failed"), (free, "unchanged")],
        [(fleet.stacks[1], "not run")],
    ]
    assert f"workflow id {busy}" in report["waves"][0][0]["error"]


def test_waves_naming_an_unknown_stack_or_one_twice_are_refused_before_anything_runs(
    fleet: Fleet,
) -> None:
    a = fleet.stacks[0]
    unknown = rollout(fleet, [a], ["tenant-nobody"])
    assert unknown.returncode == 2
    assert "--wave 2: tenant-nobody is not a tenant stack" in unknown.stderr
    twice = rollout(fleet, [a], [a])
    assert twice.returncode == 2
    assert f"--wave 2: {a} is in an earlier wave already" in twice.stderr


def running_on(stack: str, workers: list[subprocess.Popen[str]]) -> subprocess.Popen[str] | None:
    """The worker whose `up` of the stack is running now, if any (Temporal names it pid@host)."""
    for activity in pending_activities(stack):
        if activity.get("state") == "PENDING_ACTIVITY_STATE_STARTED":
            identity = str(activity.get("lastWorkerIdentity", ""))
            return next((w for w in workers if identity.startswith(f"{w.pid}@")), None)
    return None


def test_a_tenant_whose_worker_dies_mid_up_is_onboarded_once_in_every_backend(
    fleet: Fleet, tmp_path: Path
) -> None:
    project = project_copy(tmp_path / "project")
    slug = one_node_tenant(project, 5, "gpu-16")  # a node no spec of the project names
    run_pulumi(fleet.env, project, "stack", "init", slug)
    options = ("--project", str(project), "--task-queue", fleet.queue)
    try:
        started = operator_command(
            "fleet", "rollout", "--wave", slug, "--no-wait", *options, env=fleet.env
        )
        assert started.returncode == 0, started.stderr
        workflow_id = started.stdout.strip()
        # Kill the worker mid-way through the layers: once Slurm has the tenant's account.
        deadline = time.monotonic() + 180
        while not (sacctmgr("show", "account", slug, "format=Account") and
                   (victim := running_on(slug, fleet.workers))):  # fmt: skip
            assert time.monotonic() < deadline, "the up never reached Slurm"
            time.sleep(0.1)
        victim.kill()
        victim.wait()
        fleet.workers.remove(victim)
        finished = temporal("workflow", "result", "--workflow-id", workflow_id, "--output", "json")
        assert finished.returncode == 0, finished.stderr
        (wave,) = json.loads(finished.stdout)["result"]["waves"]
        assert [(s["stack"], s["status"]) for s in wave] == [(slug, "changed")], wave
        assert "its engine was killed" in wave[0]["recovered"]
        # Exactly one of everything, in every backend, and nothing left to change.
        run_pulumi(fleet.env, project, "preview", "--stack", slug, "--expect-no-changes")
        assert sacctmgr("show", "account", slug, "format=Account") == [slug]
        users = sacctmgr("show", "assoc", f"account={slug}", "format=User")
        assert sorted(u for u in users if u) == ["p5ann", "p5ben"]
        with authentik() as api:
            groups = api.get("/core/groups/", params={"name": slug}).json()["results"]
        assert len(groups) == 1
        assert sorted(u["username"] for u in groups[0]["users_obj"]) == ["p5ann", "p5ben"]
        assert labelled(slug) == ["gpu-16"]
        reservations = kubectl_json("get", "reservations")["items"]
        assert [r["metadata"]["name"] for r in reservations if slug in r["metadata"]["name"]] == [
            f"{slug}-reservation"
        ]
        with weka() as api:
            orgs = [o["name"] for o in api.get("/organizations").json()["data"]]
        assert orgs.count(slug) == 1
        homes = sorted(p.name for p in mounted(slug, f"{slug}-home").iterdir())
        assert homes == ["p5ann", "p5ben"]
    finally:
        run_pulumi(fleet.env, project, "destroy", "--stack", slug, "--yes", "--skip-preview")
        run_pulumi(fleet.env, project, "stack", "rm", slug, "--yes")


def engine_of(stack: str, worker: subprocess.Popen[str]) -> dict[str, Any] | None:
    """The engine the stack's update runs on `worker`, as its heartbeats name it (the Temporal
    CLI shows JSON payloads as their values)."""
    for activity in pending_activities(stack):
        if str(activity.get("lastWorkerIdentity", "")).startswith(f"{worker.pid}@"):
            details = activity.get("heartbeatDetails") or []
            if isinstance(details, list) and details:
                return dict(details[0])
    return None


def test_a_worker_killed_during_an_up_leaves_the_rollout_to_the_other(fleet: Fleet) -> None:
    a, b, c = fleet.stacks
    for stack in fleet.stacks:
        set_config(fleet, stack, "release", "4")
    set_config(fleet, a, "pause", HELD)
    started = operator_command(
        "fleet", "rollout", "--wave", a, "--wave", f"{b},{c}", "--no-wait",
        "--project", str(fleet.project), "--task-queue", fleet.queue, env=fleet.env,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    workflow_id = started.stdout.strip()
    try:
        deadline = time.monotonic() + 120
        while not (
            pause_starts(fleet, a, "4")
            and (victim := next((w for w in fleet.workers if engine_of(a, w)), None))
        ):
            assert time.monotonic() < deadline, "the update of a never reached `pause`"
            time.sleep(0.2)
        engine = engine_of(a, victim)
        assert engine is not None
        victim.kill()
        victim.wait()
        fleet.workers.remove(victim)
        wait_for_retry(fleet, a, "4")
        # Gone before the retry's `up` began, so before the gate opens: had it lived on, its
        # `pause` would end now, beside the retry's, and the log below would show it.
        assert session_members(int(engine["session"])) == []
    finally:
        open_gate(fleet, a, "4")
    finished = temporal("workflow", "result", "--workflow-id", workflow_id, "--output", "json")
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)["result"]
    assert statuses(report) == [[(a, "changed")], [(b, "changed"), (c, "changed")]]
    (update,) = report["waves"][0]
    assert update["worker"].rsplit(":", 1)[1] in {str(w.pid) for w in fleet.workers}
    assert f"session {engine['session']}" in update["recovered"]
    # The dead worker's engine was killed mid-create (its `pause` never ended), not left to
    # finish beside the retry; the retry made `pause` once more, to its end.
    assert session_members(int(engine["session"])) == []
    log = [line for line in pause_log(fleet, a) if line[2] == "4"]
    assert [line[0] for line in log] == ["start", "start", "end"], log
    assert log[0][1] != log[1][1] == log[2][1]
    # Exactly one of everything, all at release 4, and nothing pending in the state.
    exported = json.loads(run_pulumi(fleet.env, fleet.project, "stack", "export", "--stack", a))
    deployment = exported["deployment"]
    assert not deployment.get("pending_operations")
    names = [r["urn"].rsplit("::", 1)[-1] for r in deployment["resources"] if r.get("custom")]
    assert sorted(n for n in names if not n.startswith("default")) == ["first", "pause", "second"]
    configmaps = kubectl_json("-n", "default", "get", "configmaps")["items"]
    mine = sorted(
        m["metadata"]["name"]
        for m in configmaps
        if m["metadata"]["name"].startswith(f"rollout-{a}-")
    )
    assert mine == [f"rollout-{a}-first", f"rollout-{a}-second"]
    assert (release_of(a, "first"), release_of(a, "second")) == ("4", "4")
    run_pulumi(fleet.env, fleet.project, "preview", "--stack", a, "--expect-no-changes")


def test_an_engine_on_another_host_is_reaped_there_before_the_up_runs_again(
    fleet: Fleet, tmp_path: Path
) -> None:
    # Two workers as if on two machines (GPU_TENANTS_WORKER_HOST names each worker's host), on a
    # queue of their own. The one that takes the update dies; the other cannot make sure from
    # its host that the dead one's engine is gone, so the update waits for a worker on that
    # host (the machine back) to kill it, and only then runs again.
    b = fleet.stacks[1]
    set_config(fleet, b, "release", "5")
    set_config(fleet, b, "pause", HELD)
    queue = f"{fleet.queue}-hosts"
    hosts = {}
    for host in ("host-a", "host-b"):
        env = {**fleet.env, "GPU_TENANTS_WORKER_HOST": host}
        hosts[host] = start_worker(tmp_path, host, queue, env)
    options = ("--project", str(fleet.project), "--task-queue", queue)
    started = operator_command(
        "fleet", "rollout", "--wave", b, "--no-wait", *options, env=fleet.env
    )
    assert started.returncode == 0, started.stderr
    workflow_id = started.stdout.strip()
    back: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 120
        while not (pause_starts(fleet, b, "5") and (victim := running_on(b, list(hosts.values())))):
            assert time.monotonic() < deadline, "the update of b never reached `pause`"
            time.sleep(0.2)
        (dead_host,) = [host for host, worker in hosts.items() if worker is victim]
        victim.kill()
        victim.wait()
        # The other worker's retry asks the dead worker's host; nobody answers there yet.
        deadline = time.monotonic() + 120
        while not any(
            a.get("activityType", {}).get("name") == "reap_session" for a in pending_activities(b)
        ):
            assert time.monotonic() < deadline, "no reap was asked of the dead worker's host"
            time.sleep(0.5)
        back = start_worker(tmp_path, f"{dead_host}-back", queue,
                            {**fleet.env, "GPU_TENANTS_WORKER_HOST": dead_host})  # fmt: skip
        wait_for_retry(fleet, b, "5")
        open_gate(fleet, b, "5")
        finished = temporal("workflow", "result", "--workflow-id", workflow_id, "--output", "json")
    finally:
        open_gate(fleet, b, "5")  # before the workers stop: each finishes what it started
        stop_workers([w for w in (*hosts.values(), back) if w is not None and w.poll() is None])
    assert finished.returncode == 0, finished.stderr
    ((update,),) = json.loads(finished.stdout)["result"]["waves"]
    assert (update["stack"], update["status"]) == (b, "changed"), update
    assert f"host {dead_host}" in update["recovered"]
    # The dead worker's engine was killed on its host mid-create, not left to finish.
    log = [line for line in pause_log(fleet, b) if line[2] == "5"]
    assert [line[0] for line in log] == ["start", "start", "end"], log
    assert log[0][1] != log[1][1] == log[2][1]
    run_pulumi(fleet.env, fleet.project, "preview", "--stack", b, "--expect-no-changes")
