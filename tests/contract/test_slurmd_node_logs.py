"""Offboarding step 3c reads each node's slurmd log in the node's slurmd pod, found as the runbook
finds it (`kubectl -n slurm-control get pods -l app=slurmd`, by spec.nodeName): a pod like it on
the sandbox's real node, read through the kubectl transport (providers/slurm/node_logs.py)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import pytest

from providers.slurm.node_logs import read_node_logs
from providers.slurm.settings import Settings
from sandbox.kubernetes.images import TOOLS_IMAGE
from sandbox.kubernetes.node import NODE_NAME

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

LINE = "[2026-12-07T18:11:22.221] [77.batch] done with job"
SLURMD_POD = f"""
apiVersion: v1
kind: Pod
metadata: {{name: slurmd-0, labels: {{app: slurmd}}}}
spec:
  nodeName: {NODE_NAME}
  terminationGracePeriodSeconds: 1
  containers:
    - name: slurmd
      image: {TOOLS_IMAGE}
      imagePullPolicy: Never
      command: [/bin/sh, -c, "mkdir -p /var/log/slurm && echo '{LINE}' >/var/log/slurm/slurmd.log && exec sleep 600"]
"""  # noqa: E501


def kubectl(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"slurmd-logs-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        kubectl("delete", "namespace", name, "--wait=false")


def test_each_nodes_log_is_read_in_its_slurmd_pod_and_a_node_without_one_is_named(
    namespace: str,
) -> None:
    kubectl("-n", namespace, "apply", "-f", "-", stdin=SLURMD_POD)
    kubectl("-n", namespace, "wait", "--for=condition=Ready", "pod/slurmd-0", "--timeout=60s")
    settings = Settings.from_environment(
        {"SLURM_TRANSPORT": "kubectl", "SLURM_KUBECTL_NAMESPACE": namespace}
    )
    logs = read_node_logs(settings, [NODE_NAME, "gpu-03"])
    assert logs.read == {NODE_NAME: f"{LINE}\n"}
    assert logs.unread == {
        "gpu-03": f"no slurmd pod (app=slurmd) in namespace {namespace} runs on it"
    }
    elsewhere = Settings.from_environment(
        {
            "SLURM_TRANSPORT": "kubectl",
            "SLURM_KUBECTL_NAMESPACE": namespace,
            "SLURMD_LOG_FILE": "/var/log/slurmd.log",
        }
    )
    [why] = read_node_logs(elsewhere, [NODE_NAME]).unread.values()
    assert why.startswith("/var/log/slurmd.log: ")
    assert "No such file" in why
