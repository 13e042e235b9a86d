"""Puts on the sandbox cluster what the runbooks assume exists: GPU nodes, shared namespaces,
the LDAP bind Secret and the custom resource definitions. Every write is a server-side apply, so
seeding again changes nothing that is already right and keeps what others (the reservation
operator, a tenant stack) added."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sandbox.kubernetes.client import JSON, KubeClient, resource_path

MANIFESTS = Path(__file__).resolve().parent / "manifests"
INSTANCE_TYPE = "h100-8x"
HARDWARE_POOL = "gpu-h100-rack-a"
GPUS_PER_NODE = 8
LDAP_BIND_SECRET = "ldap-bind-creds"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class NodeSeed:
    name: str
    ready: bool = True
    cordoned: bool = False


# gpu-01..16 are the schedulable pool Slurm also knows; gpu-17 and gpu-18 exist so that the
# preflight checks have a NotReady and a cordoned node to refuse.
NODES = (
    *(NodeSeed(f"gpu-{i:02d}") for i in range(1, 17)),
    NodeSeed("gpu-17", ready=False),
    NodeSeed("gpu-18", cordoned=True),
)


def manifests(name: str) -> Iterator[JSON]:
    for document in yaml.safe_load_all((MANIFESTS / name).read_text()):
        if document:
            yield document


def node_manifest(node: NodeSeed) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {
                "kubernetes.io/hostname": node.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": INSTANCE_TYPE,
                "hardware-pool": HARDWARE_POOL,
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            },
        },
        "spec": {"unschedulable": node.cordoned},
    }


def node_status(node: NodeSeed, kubernetes_version: str) -> JSON:
    resources = {
        "cpu": "224",
        "memory": "2113638Mi",
        "nvidia.com/gpu": str(GPUS_PER_NODE),
        "pods": "110",
        "ephemeral-storage": "3500Gi",
    }
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready: dict[str, Any] = {
        "type": "Ready",
        "status": "True" if node.ready else "False",
        "reason": "KubeletReady" if node.ready else "KubeletNotReady",
        "message": "kubelet is posting ready status"
        if node.ready
        else "container runtime is down (sandbox: seeded NotReady)",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [ready],
            "nodeInfo": {
                "kubeletVersion": f"v{kubernetes_version}+rke2r1",
                "kubeProxyVersion": f"v{kubernetes_version}+rke2r1",
                "osImage": "Ubuntu 22.04.4 LTS",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.17-k3s1",
                "kernelVersion": "5.15.0-105-generic",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


def _wait_established(client: KubeClient, crd: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
        conditions = status.get("status", {}).get("conditions", [])
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        time.sleep(0.2)
    raise TimeoutError(f"CustomResourceDefinition {crd} was not Established within {timeout}s")


def runtime_class(name: str) -> JSON:
    """The login release's RuntimeClass: containerd's runc as any pod's, exempt from Pod
    Security by the API server's admission configuration."""
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": "runc",
    }


def seed_digest(ldap_bind_password: str, kubernetes_version: str, login_runtime_class: str) -> str:
    """What `seed` would write, as a digest: a sandbox whose cluster holds an older seed (made
    by an earlier version of the sandbox) is seeded again."""
    made_of = [
        (MANIFESTS / "platform.yaml").read_text(),
        (MANIFESTS / "crds.yaml").read_text(),
        ldap_bind_password,
        kubernetes_version,
        login_runtime_class,
        repr(NODES),
    ]
    return hashlib.sha256(json.dumps(made_of).encode()).hexdigest()


def seed(
    client: KubeClient, ldap_bind_password: str, kubernetes_version: str, login_runtime_class: str
) -> None:
    """The platform's objects, its LDAP bind Secret (the outpost's bind account's password) and
    the stand-in nodes."""
    for manifest in (
        *manifests("platform.yaml"),
        *manifests("crds.yaml"),
        runtime_class(login_runtime_class),
    ):
        client.apply(resource_path(manifest), manifest)
    for crd in manifests("crds.yaml"):
        _wait_established(client, crd["metadata"]["name"])
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": LDAP_BIND_SECRET, "namespace": "auth"},
        "type": "Opaque",
        "stringData": {"password": ldap_bind_password},
    }
    client.apply(resource_path(secret), secret)
    for node in NODES:
        path = resource_path(node_manifest(node))
        client.apply(path, node_manifest(node))
        status = node_status(node, kubernetes_version)
        client.apply(path + "/status", status)
        condition_taints(client, path, node)


def condition_taints(client: KubeClient, path: str, seed: NodeSeed) -> None:
    """Sets the taints that node lifecycle keeps in step with a node's state (not-ready,
    unschedulable). That controller is off here, since the stand-in nodes post no heartbeats;
    the real node's kubelet registers with not-ready, which only it would take off."""
    node = client.get(path)
    taints = node["spec"].get("taints") or []
    wanted = {NOT_READY_TAINT: not seed.ready, UNSCHEDULABLE_TAINT: seed.cordoned}
    kept = [t for t in taints if t["key"] not in wanted]
    kept += [{"key": key, "effect": "NoSchedule"} for key, on in wanted.items() if on]
    if sorted(kept, key=str) != sorted(taints, key=str):
        client.merge_patch(
            path,
            {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": kept or None},
            },
        )
