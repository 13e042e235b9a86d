"""The operator's sandbox and the tests' (one per pytest worker) never share a directory or a
port, so that `make demo` and both workers of `make test` run side by side."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.kubernetes import in_cluster
from sandbox.layout import SandboxLayout, name_of_tests_sandbox
from sandbox.ports import TEST_SANDBOXES
from sandbox.supervisor import SandboxError
from tests.conftest import ROOT

# Linux hands out outgoing connections' local ports from here up.
EPHEMERAL_START = 32768


def layouts(monkeypatch: pytest.MonkeyPatch, state: Path) -> dict[str, SandboxLayout]:
    monkeypatch.setenv("GPU_TENANTS_STATE", str(state))
    names = ["", *(name_of_tests_sandbox(slot) for slot in range(1, TEST_SANDBOXES + 1))]
    found = {}
    for name in names:
        monkeypatch.setenv("GPU_TENANTS_SANDBOX", name)
        found[name] = SandboxLayout.from_environment()
    return found


def test_every_sandbox_has_its_own_directory_and_ports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = layouts(monkeypatch, tmp_path)
    assert [layout.root.name for layout in found.values()] == [
        "sandbox",
        "test-sandbox",
        "test-sandbox-2",
        "test-sandbox-3",
    ]
    ports = {
        name: [port for service in layout.services() for port in service.ports]
        for name, layout in found.items()
    }
    every = [port for listed in ports.values() for port in listed]
    assert len(every) == len(set(every)), ports
    assert max(every) < EPHEMERAL_START
    # A pytest worker's own sandbox is the one a lone pytest process uses, for the first worker.
    assert found["test"] == SandboxLayout.for_tests(1)


def test_a_name_that_is_no_sandbox_is_refused_not_taken_for_the_operators(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GPU_TENANTS_STATE", str(tmp_path))
    monkeypatch.setenv("GPU_TENANTS_SANDBOX", "tset")
    with pytest.raises(SandboxError, match=r"GPU_TENANTS_SANDBOX='tset' names no sandbox.*test-2"):
        SandboxLayout.from_environment()


def test_reset_with_test_resets_every_tests_sandbox_there_is(tmp_path: Path) -> None:
    """`GPU_TENANTS_SANDBOX=test make sandbox-reset` (as .ci/run does) leaves no worker's
    sandbox behind, and makes none that was not there."""
    for root in ("test-sandbox", "test-sandbox-3"):
        (tmp_path / root / "logs").mkdir(parents=True)
    result = subprocess.run(
        [sys.executable, "-m", "sandbox", "reset"],
        cwd=ROOT,
        env={**os.environ, "GPU_TENANTS_STATE": str(tmp_path), "GPU_TENANTS_SANDBOX": "test"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    said = result.stdout
    assert f"GPU_TENANTS_SANDBOX=test: {tmp_path / 'test-sandbox'}" in said
    assert f"GPU_TENANTS_SANDBOX=test-3: {tmp_path / 'test-sandbox-3'}" in said
    # Not a bare "test-2": pytest's own temporary directories (pytest-20 to -29) hold it.
    assert "GPU_TENANTS_SANDBOX=test-2" not in said
    assert "test-sandbox-2" not in said


def test_every_sandbox_node_has_its_own_pod_network_inside_the_platforms(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each node's pods are in the platform's cluster CIDR (which the login pods' SSH policy
    excepts), on a /24 of their own; pods reach the platform's processes on the ports the
    platform's settings name (which the tenants' egress policies allow), whatever port the
    sandbox's process has."""
    nodes = [layout.node for layout in layouts(monkeypatch, tmp_path).values()]
    subnets = [ipaddress.IPv4Network(node.pod_subnet) for node in nodes]
    assert len(set(subnets)) == 4
    assert all(s.subnet_of(ipaddress.IPv4Network("10.42.0.0/16")) for s in subnets)
    assert all(s.prefixlen == 24 for s in subnets)
    for node, layout in zip(nodes, layouts(monkeypatch, tmp_path).values(), strict=True):
        assert dict(node.forwarded_ports) == {
            6817: layout.slurm.slurmctld_port,
            636: layout.ports.ldap_outpost,
        }
        for service in layout.host_services:
            _, slice_ = service.manifests(node.host_address)
            assert slice_["ports"][0]["port"] == service.port
            assert slice_["endpoints"][0]["addresses"] == [node.host_address]
            pod = service.stand_in_pod()
            assert (pod["metadata"]["namespace"], pod["metadata"]["name"]) == (
                service.namespace,
                service.name,
            )
            # No scheduler places it, so no kubelet runs it: it stands for the process.
            assert pod["spec"]["schedulerName"] == in_cluster.HOST_PROCESS_SCHEDULER
        assert ipaddress.IPv4Address(node.users_address) not in ipaddress.IPv4Network(
            "10.42.0.0/16"
        )
