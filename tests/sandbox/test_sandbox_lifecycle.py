"""make sandbox-up / sandbox-down as an operator uses them: idempotent up, a clean down, and any
one killed process restored by the next up with its state intact."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from providers.processes import start_time
from sandbox.__main__ import down, up
from sandbox.layout import SandboxLayout
from sandbox.supervisor import Supervisor, port_in_use
from tests.backends import wait_for

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
    # Settled first: a test before may have restarted slurmctld, whose nodes then read not
    # responding until their slurmd registers again (a few seconds), and an up meanwhile
    # rightly replaces a slurmd that is not ready (ci40).
    services = sandbox.services()
    wait_for("every service ready", lambda: all(supervisor.status(s).ready for s in services), 60)
    pids = {s.name: supervisor.pid(s.name) for s in services}
    up(sandbox)
    assert "already up; nothing to do" in capsys.readouterr().out
    assert {s.name: supervisor.pid(s.name) for s in sandbox.services()} == pids


def test_up_restarts_a_process_made_from_an_older_definition(
    sandbox: SandboxLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    """After an upgrade (new code, a new rendering of its configuration), the next up replaces
    the process that runs the old one, and only that one, keeping its state."""
    supervisor = Supervisor(sandbox.root)
    pids = {s.name: supervisor.pid(s.name) for s in sandbox.services()}
    before = state_marks()
    (sandbox.root / "run" / "slurmctld.fingerprint").write_text("made from older code\n")
    up(sandbox)
    assert "started slurmctld" in capsys.readouterr().out
    after = {s.name: supervisor.pid(s.name) for s in sandbox.services()}
    assert after["slurmctld"] not in (None, pids["slurmctld"])
    assert {n: p for n, p in after.items() if n != "slurmctld"} == {
        n: p for n, p in pids.items() if n != "slurmctld"
    }
    slurmctld = next(s for s in sandbox.services() if s.name == "slurmctld")
    assert supervisor.is_current(slurmctld)
    assert state_marks() == before


def test_a_cluster_seeded_by_an_older_sandbox_is_seeded_again(
    sandbox: SandboxLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    """An upgrade that changes what the sandbox seeds (a new controller's RBAC, the LDAP bind
    password's new home) reaches a running cluster without a restart of its control plane."""
    record = sandbox.root / "kubernetes" / "seeded"
    record.write_text("seeded by an older sandbox\n")
    up(sandbox)
    assert "seeded nodes, namespaces, CRDs and the LDAP bind Secret" in capsys.readouterr().out
    assert record.read_text() != "seeded by an older sandbox\n"
    up(sandbox)
    assert "already up; nothing to do" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name",
    [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "reservation-operator",
        "load-balancer",
        "containerd",
        "kubelet",
        "kube-proxy",
        "kube-router",
        "munged",
        "mariadb",
        "slurmdbd",
        "slurmctld",
        "partitions-configmap-volume",
        "retention-store",
        "weka-emulator",
        "slurmd-gpu-14",
        "slurmd-gpu-15",
        "ldap-outpost",
        "authentik-emulator",
    ],
)
def test_a_killed_process_is_restored_with_its_state(sandbox: SandboxLayout, name: str) -> None:
    supervisor = Supervisor(sandbox.root)
    before = state_marks()
    pid = supervisor.pid(name)
    assert pid is not None, f"{name} is not running"
    # A pid alone does not name a process: the kernel may give the new one the killed one's pid
    # (it did in a CI run), so the process is told apart by its start time too.
    killed = (pid, start_time(pid))
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while supervisor.pid(name) == pid and time.monotonic() < deadline:
        time.sleep(0.1)
    assert supervisor.pid(name) is None
    up(sandbox)
    service = next(s for s in sandbox.services() if s.name == name)
    status = supervisor.status(service)
    assert status.ready
    assert status.pid is not None
    assert (status.pid, start_time(status.pid)) != killed
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
