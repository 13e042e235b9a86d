"""make sandbox-up / sandbox-down as an operator uses them: idempotent up, a clean down, and any
one killed process restored by the next up with its state intact."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from sandbox.__main__ import down, up
from sandbox.layout import SandboxLayout
from sandbox.supervisor import Supervisor, port_in_use

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def run(*argv: str) -> str:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"{argv}: {result.stderr}"
    return result.stdout


def state_marks() -> tuple[str, str]:
    """Things each backend must still know after a restart."""
    nodes = run("kubectl", "--request-timeout=20s", "get", "nodes", "-o", "name")
    clusters = run("sacctmgr", "-P", "-n", "show", "cluster", "format=Cluster")
    return nodes, clusters


def test_second_up_does_nothing(sandbox: SandboxLayout, capsys: pytest.CaptureFixture[str]) -> None:
    supervisor = Supervisor(sandbox.root)
    pids = {s.name: supervisor.pid(s.name) for s in sandbox.services()}
    up(sandbox)
    assert "already up; nothing to do" in capsys.readouterr().out
    assert {s.name: supervisor.pid(s.name) for s in sandbox.services()} == pids


@pytest.mark.parametrize(
    "name",
    [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "reservation-operator",
        "munged",
        "mariadb",
        "slurmdbd",
        "slurmctld",
        "weka-emulator",
        "authentik-emulator",
    ],
)
def test_a_killed_process_is_restored_with_its_state(sandbox: SandboxLayout, name: str) -> None:
    supervisor = Supervisor(sandbox.root)
    before = state_marks()
    pid = supervisor.pid(name)
    assert pid is not None, f"{name} is not running"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while supervisor.pid(name) == pid and time.monotonic() < deadline:
        time.sleep(0.1)
    assert supervisor.pid(name) is None
    up(sandbox)
    service = next(s for s in sandbox.services() if s.name == name)
    status = supervisor.status(service)
    assert status.ready
    assert status.pid not in (None, pid)
    assert state_marks() == before


def test_down_leaves_no_listener_and_up_brings_it_all_back(sandbox: SandboxLayout) -> None:
    before = state_marks()
    services = sandbox.services()
    ports = [p for s in services for p in s.ports]
    down(sandbox)
    supervisor = Supervisor(sandbox.root)
    assert [s.name for s in services if supervisor.pid(s.name) is not None] == []
    assert [p for p in ports if port_in_use(p)] == []
    up(sandbox)
    assert all(supervisor.status(s).ready for s in services)
    assert state_marks() == before
