"""What pods on the real node reach by name, as on RKE2: the API server behind the `kubernetes`
Service, the cluster's DNS (CoreDNS in kube-system behind `kube-dns`), and the platform's
services that the sandbox runs as processes of this machine (slurmctld), each behind a Service of
the name the platform's settings give it.

Those processes, and the API server (one server, on loopback, with no endpoint reconciler), are
reached at the node's gateway on this machine, where a DNAT rule takes each port to loopback
(`RealNode.ensure_network`): the sandbox writes each Service's EndpointSlice itself, on the port
the platform's settings name (the one a NetworkPolicy allows), not the process's own.

On RKE2 those services are pods of their namespaces, which is what a tenant's NetworkPolicies
name (egress to `slurm-control` and `auth`, ingress from `slurm-control`). So each process also
has a Pod of its namespace that stands for it, as the stand-in nodes stand for servers: never
scheduled (no scheduler has its scheduler name), its status written by the sandbox with the
gateway's address, so the network-policy agent counts that address as the namespace's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from sandbox.kubernetes.addresses import DNS_SERVICE_IP
from sandbox.kubernetes.client import JSON, KubeClient, resource_path
from sandbox.kubernetes.images import coredns_image
from sandbox.kubernetes.seed import MANIFESTS

MANAGED_BY = "sandbox.gpu-tenants.io"
STANDS_FOR = "sandbox.gpu-tenants.io/stands-for"
# No scheduler answers to this name, and no registry serves the image: the pod never runs.
HOST_PROCESS_SCHEDULER = "sandbox-host-process"
HOST_PROCESS_IMAGE = "sandbox.local/host-process:none"


@dataclass(frozen=True)
class HostService:
    """A process of this machine that pods reach as the Service `name` in `namespace`."""

    namespace: str
    name: str
    # The Service's port, the one the platform's settings name.
    port: int
    # Where the sandbox's process listens, on 127.0.0.1.
    host_port: int

    def manifests(self, gateway: str) -> list[JSON]:
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"ports": [{"name": self.name, "port": self.port, "protocol": "TCP"}]},
        }
        return [service, _endpoints(self.namespace, self.name, self.name, gateway, self.port)]

    def stand_in_pod(self) -> JSON:
        restricted = {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/managed-by": MANAGED_BY},
                "annotations": {STANDS_FOR: f"the sandbox's process on 127.0.0.1:{self.host_port}"},
            },
            "spec": {
                "schedulerName": HOST_PROCESS_SCHEDULER,
                "containers": [
                    {"name": self.name, "image": HOST_PROCESS_IMAGE, "securityContext": restricted}
                ],
            },
        }


def stand_in_status(name: str, gateway: str) -> JSON:
    """What the sandbox writes as a stand-in pod's status: running, at the node's gateway."""
    container = {"name": name, "image": HOST_PROCESS_IMAGE, "imageID": "", "restartCount": 0}
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{**container, "ready": True, "state": {"running": {}}}],
        "hostIP": gateway,
        "hostIPs": [{"ip": gateway}],
        "podIP": gateway,
        "podIPs": [{"ip": gateway}],
    }


def _endpoints(namespace: str, service: str, port_name: str, address: str, port: int) -> JSON:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-sandbox",
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
    }


def cluster_dns() -> list[JSON]:
    text = (MANIFESTS / "cluster-dns.yaml").read_text()
    text = text.replace("COREDNS_IMAGE", coredns_image()).replace("DNS_SERVICE_IP", DNS_SERVICE_IP)
    documents: list[Any] = list(yaml.safe_load_all(text))
    return [document for document in documents if document]


def seed(
    client: KubeClient, gateway: str, api_server_port: int, services: list[HostService]
) -> None:
    """Applies it all; `gateway` is the node's gateway on this machine."""
    api_server = _endpoints("default", "kubernetes", "https", gateway, api_server_port)
    for manifest in (
        api_server,
        *cluster_dns(),
        *(manifest for service in services for manifest in service.manifests(gateway)),
    ):
        client.apply(resource_path(manifest), manifest)
    for service in services:
        pod = service.stand_in_pod()
        path = resource_path(pod)
        client.apply(path, pod)
        client.apply(f"{path}/status", {**pod, "status": stand_in_status(service.name, gateway)})
