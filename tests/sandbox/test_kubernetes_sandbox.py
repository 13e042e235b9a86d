"""The sandbox's Kubernetes: the real apiserver and controller-manager, the seeded cluster, and the
stand-in reservation operator, checked with kubectl as an operator would."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sandbox.kubernetes.images import TOOLS_IMAGE
from sandbox.kubernetes.node import NODE_NAME
from sandbox.layout import SandboxLayout

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def kubectl(
    *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


def kubectl_json(*args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json").stdout)


def wait_for(what: str, probe: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_nodes_are_seeded_as_the_runbooks_assume() -> None:
    nodes = {n["metadata"]["name"]: n for n in kubectl_json("get", "nodes")["items"]}
    assert sorted(nodes) == [NODE_NAME, *(f"gpu-{i:02d}" for i in range(1, 19))]
    del nodes[NODE_NAME]
    for node in nodes.values():
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "h100-8x"
        assert labels["hardware-pool"] == "gpu-h100-rack-a"
        assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"

    def ready(name: str) -> str:
        conditions = nodes[name]["status"]["conditions"]
        status: str = next(c["status"] for c in conditions if c["type"] == "Ready")
        return status

    assert ready("gpu-01") == "True"
    assert ready("gpu-17") == "False"
    assert nodes["gpu-18"]["spec"].get("unschedulable") is True
    table = kubectl("get", "nodes").stdout
    assert "gpu-17   NotReady" in table
    assert "Ready,SchedulingDisabled" in table


WORKING_POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: default}
spec:
  nodeName: NODE
  terminationGracePeriodSeconds: 1
  containers:
    - name: shell
      image: IMAGE
      imagePullPolicy: Never
      command: [/bin/sh, -c, "echo started as $(id -u); exec sleep 600"]
"""


def test_the_real_node_runs_a_pod_that_logs_execs_and_goes(sandbox: SandboxLayout) -> None:
    """cpu-01 is a kubelet with containerd: a pod bound to it runs, with an address of the node's
    pod network; its log and exec go through the API server to the kubelet, as on RKE2; and a
    delete ends its processes."""
    node = kubectl_json("get", "node", NODE_NAME)
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.30.14"
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    name = f"works-{uuid.uuid4().hex[:6]}"
    manifest = WORKING_POD.replace("NAME", name).replace("NODE", NODE_NAME)
    kubectl("apply", "-f", "-", stdin=manifest.replace("IMAGE", TOOLS_IMAGE))
    try:
        kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=60s")
        pod = kubectl_json("get", "pod", name)
        subnet = ipaddress.IPv4Network(sandbox.node.pod_subnet)
        assert ipaddress.IPv4Address(pod["status"]["podIP"]) in subnet
        assert kubectl("logs", name).stdout == "started as 0\n"
        assert kubectl("exec", name, "--", "cat", "/proc/1/cmdline").stdout == "sleep\x00600\x00"
    finally:
        kubectl("delete", "pod", name, "--wait=true", "--timeout=60s")
    assert kubectl("get", "pod", name, check=False).returncode != 0


SERVICES = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: NAMESPACE, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: web
      image: IMAGE
      imagePullPolicy: Never
      command:
        - /bin/sh
        - -c
        - mkdir /www && echo hello > /www/index.html && exec httpd -f -p 8080 -h /www
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: NAMESPACE}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: NAMESPACE}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: client
      image: IMAGE
      imagePullPolicy: Never
      command: [sleep, "600"]
---
apiVersion: v1
kind: Pod
metadata: {name: wants-a-gpu, namespace: NAMESPACE}
spec:
  containers:
    - name: job
      image: IMAGE
      imagePullPolicy: Never
      resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_pods_are_scheduled_and_reach_services_by_name_as_on_rke2() -> None:
    """The scheduler places pods on the real node only; from a pod, the cluster DNS resolves
    Services, kube-proxy routes a Service's address to its pods, and the names the platform's
    settings give (slurmctld.slurm-control.svc, the API server's `kubernetes`) reach the
    sandbox's processes."""
    namespace = f"net-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", namespace)
    try:
        manifests = SERVICES.replace("NAMESPACE", namespace).replace("IMAGE", TOOLS_IMAGE)
        kubectl("apply", "-f", "-", stdin=manifests)
        kubectl("-n", namespace, "wait", "--for=condition=Ready", "pod/web", "pod/client",
                "--timeout=60s")  # fmt: skip
        placed = kubectl_json("-n", namespace, "get", "pods")["items"]
        nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in placed}
        # A stand-in node's 8 GPUs are no place for it: no kubelet there could ever run it.
        assert nodes == {"web": NODE_NAME, "client": NODE_NAME, "wants-a-gpu": None}

        def in_client(script: str) -> str:
            return kubectl("-n", namespace, "exec", "client", "--", "sh", "-c", script).stdout

        def resolved(name: str) -> str:
            """The address the cluster DNS gives `name`, asked from the pod with busybox's own
            resolver (its wget and nc, static, cannot load glibc's resolver), and checked to be
            the Service's."""
            answer = in_client(f"nslookup {name}.svc.cluster.local").split("Name:")[-1]
            address = answer.split("Address:")[1].split()[0]
            service, service_namespace = name.split(".")
            found = kubectl_json("-n", service_namespace, "get", "service", service)
            assert address == found["spec"]["clusterIP"]
            return address

        web = resolved(f"web.{namespace}")
        # kube-proxy routes a new Service's address once its next sync has run (seconds under
        # load); until then the address leads nowhere and the request hangs. (The image's tools
        # are busybox applets, `timeout` only through its shell; not wget -T, on which Debian's
        # static busybox 1.35 crashes.)
        fetch = ["exec", "client", "--", "sh", "-c", f"timeout 3 wget -q -O - http://{web}/"]
        wait_for(f"kube-proxy to route web's {web}",
                 lambda: kubectl("-n", namespace, *fetch, check=False).returncode == 0)  # fmt: skip
        assert kubectl("-n", namespace, *fetch).stdout == "hello\n"
        # slurmctld answers on the port the platform's settings name (its own is the sandbox's).
        slurmctld = resolved("slurmctld.slurm-control")
        assert in_client(f"echo | nc -w 5 {slurmctld} 6817 >/dev/null; echo $?") == "0\n"
        api_server = resolved("kubernetes.default")
        assert in_client(f"echo | nc -w 5 {api_server} 443 >/dev/null; echo $?") == "0\n"
    finally:
        kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=60s")


def test_shared_namespaces_and_ldap_bind_secret_exist() -> None:
    for namespace in ("auth", "slurm-control", "reservation-operator"):
        kubectl("get", "namespace", namespace)
    secret = kubectl_json("-n", "auth", "get", "secret", "ldap-bind-creds")
    assert set(secret["data"]) == {"password"}


PRIVILEGED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: escape, namespace: NAMESPACE}
spec:
  containers:
    - name: shell
      image: busybox
      securityContext: {privileged: true}
"""


def test_restricted_namespace_refuses_a_privileged_pod_and_deletes_cleanly() -> None:
    namespace = f"psa-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", namespace)
    kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    try:
        refused = kubectl(
            "apply", "-f", "-", stdin=PRIVILEGED_POD.replace("NAMESPACE", namespace), check=False
        )
        assert refused.returncode != 0
        assert 'violates PodSecurity "restricted:latest"' in refused.stderr
        assert "privileged" in refused.stderr
    finally:
        kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=60s")
    gone = kubectl("get", "namespace", namespace, check=False)
    assert "NotFound" in gone.stderr


def reservation(name: str, tenant: str, nodes: list[str]) -> str:
    return json.dumps(
        {
            "apiVersion": "scheduling.example.io/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": name},
            "spec": {
                "tenant": tenant,
                "nodeSelector": {"matchLabels": {"hardware-pool": "gpu-h100-rack-a"}},
                "reservedNodes": nodes,
                "applyTaint": True,
                "taintEffect": "NoSchedule",
                "evictOnRelease": False,
            },
        }
    )


def ready_condition(name: str) -> dict[str, Any] | None:
    status = kubectl_json("get", "reservation", name).get("status") or {}
    return next((c for c in status.get("conditions", []) if c["type"] == "Ready"), None)


@pytest.fixture
def reservations() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        kubectl("delete", "reservation", name, "--ignore-not-found", "--wait=true", "--timeout=60s")


def test_reservation_labels_taints_refuses_conflicts_and_releases(reservations: list[str]) -> None:
    first, second = "sbx-a-reservation", "sbx-b-reservation"
    reservations.extend([second, first])
    kubectl("apply", "-f", "-", stdin=reservation(first, "sbx-a", ["gpu-15", "gpu-16"]))
    wait_for(f"{first} Ready", lambda: (ready_condition(first) or {}).get("status") == "True")
    for name in ("gpu-15", "gpu-16"):
        node = kubectl_json("get", "node", name)
        assert node["metadata"]["labels"]["reserved.tenant"] == "sbx-a"
        assert {"key": "reserved.tenant", "value": "sbx-a", "effect": "NoSchedule"} in node["spec"][
            "taints"
        ]
    labelled = kubectl("get", "nodes", "-l", "reserved.tenant=sbx-a", "-o", "name").stdout.split()
    assert labelled == ["node/gpu-15", "node/gpu-16"]

    kubectl("apply", "-f", "-", stdin=reservation(second, "sbx-b", ["gpu-16"]))
    wait_for(f"{second} to report its conflict", lambda: ready_condition(second) is not None)
    condition = ready_condition(second)
    assert condition is not None
    assert condition["status"] == "False"
    assert condition["reason"] == "HeldByOtherReservation"
    assert "gpu-16 is already reserved by tenant sbx-a" in condition["message"]
    assert kubectl_json("get", "node", "gpu-16")["metadata"]["labels"]["reserved.tenant"] == "sbx-a"

    kubectl("delete", "reservation", second, first, "--wait=true", "--timeout=60s")
    for name in ("gpu-15", "gpu-16"):
        node = kubectl_json("get", "node", name)
        assert "reserved.tenant" not in node["metadata"]["labels"]
        assert not [t for t in node["spec"].get("taints") or [] if t["key"] == "reserved.tenant"]


def test_reservation_schema_refuses_an_unknown_taint_effect() -> None:
    bad = json.loads(reservation("sbx-bad-reservation", "sbx-bad", ["gpu-01"]))
    bad["spec"]["taintEffect"] = "Sometimes"
    refused = kubectl("apply", "-f", "-", stdin=json.dumps(bad), check=False)
    assert refused.returncode != 0
    assert "spec.taintEffect" in refused.stderr
    assert "Unsupported value" in refused.stderr


def test_only_not_ready_and_cordoned_nodes_carry_condition_taints() -> None:
    nodes = {n["metadata"]["name"]: n for n in kubectl_json("get", "nodes")["items"]}
    condition_taints = {
        name: sorted(
            t["key"]
            for t in node["spec"].get("taints") or []
            if t["key"].startswith("node.kubernetes.io/")
        )
        for name, node in nodes.items()
    }
    assert condition_taints["gpu-17"] == ["node.kubernetes.io/not-ready"]
    assert condition_taints["gpu-18"] == ["node.kubernetes.io/unschedulable"]
    assert all(not taints for name, taints in condition_taints.items() if name < "gpu-17")
