"""What the program reads of the live cluster, before it declares anything: the nodes and the
tenant's claims (for the preflight) and the LDAP bind Secret it copies into the tenant's namespace.

Read with kubectl (`providers.kubectl`: the operator's own tool, and whatever credentials their
kubeconfig uses), through the same KUBECONFIG the Kubernetes provider uses. The Secret is read
here rather than with `Secret.get`: a read resource in the stack would make `pulumi refresh
--preview-only --expect-no-changes` report it on every run, so the drift check could never be
clean.

Every preview waits for these reads, so they start as soon as the stack's name and the platform
are known (`LiveReads`) and run while the program imports the rest of itself; this module
imports nothing of the spec or the components for that reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from types import TracebackType
from typing import Any

from providers.kubectl import Kubectl, kubectl_get, start_read
from tenant_stack.annotations import (
    REHEARSAL_ANNOTATION,
    RETAINED_ANNOTATION,
    STAGE_ANNOTATION,
    TENANT_NAMESPACE_LABEL,
)
from tenant_stack.errors import ClusterError
from tenant_stack.sizes import UNITS

__all__ = [
    "TENANT_LABEL",
    "ClaimState",
    "LiveCluster",
    "LiveReads",
    "NodeState",
    "namespace_managers",
    "quantity_bytes",
    "read_cluster",
]

TENANT_LABEL = "reserved.tenant"  # what the reservation operator labels and taints nodes with
RESERVATION_ANNOTATION = "scheduling.example.io/reservation"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
POOL_LABEL = "hardware-pool"


@dataclass(frozen=True)
class NodeState:
    """What the preflight needs of one live Node."""

    name: str
    ready: bool
    cordoned: bool
    instance_type: str | None
    pool: str | None
    reserved_by: str | None  # the tenant label the reservation operator sets
    reservation: str | None
    taints: tuple[str, ...] = ()  # as `key[=value]:effect`, as kubectl describe shows them

    @classmethod
    def from_api(cls, node: dict[str, Any]) -> NodeState:
        metadata = node["metadata"]
        labels: dict[str, str] = metadata.get("labels") or {}
        annotations: dict[str, str] = metadata.get("annotations") or {}
        conditions = (node.get("status") or {}).get("conditions") or []
        return cls(
            name=metadata["name"],
            ready=any(c["type"] == "Ready" and c["status"] == "True" for c in conditions),
            cordoned=bool((node.get("spec") or {}).get("unschedulable")),
            instance_type=labels.get(INSTANCE_TYPE_LABEL),
            pool=labels.get(POOL_LABEL),
            reserved_by=labels.get(TENANT_LABEL),
            reservation=annotations.get(RESERVATION_ANNOTATION),
            taints=tuple(
                f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
                for t in (node.get("spec") or {}).get("taints") or []
            ),
        )


@dataclass(frozen=True)
class ClaimState:
    """What the preflight needs of one live PersistentVolumeClaim."""

    name: str
    size: int  # bytes requested
    storage_class: str | None
    access_modes: tuple[str, ...]

    @classmethod
    def from_api(cls, claim: dict[str, Any]) -> ClaimState:
        spec = claim.get("spec") or {}
        requests = (spec.get("resources") or {}).get("requests") or {}
        return cls(
            name=claim["metadata"]["name"],
            size=quantity_bytes(str(requests.get("storage", "0"))),
            storage_class=spec.get("storageClassName"),
            access_modes=tuple(sorted(spec.get("accessModes") or [])),
        )


_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGTPE]i|[kMGTPE]|m)?")


def quantity_bytes(text: str) -> int:
    """Bytes of a Kubernetes storage quantity as the API returns it (`10Ti`, `11000G`, `512`)."""
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        raise ClusterError(f"the cluster returned {text!r} as a storage size, not a quantity")
    try:
        unit = match.group(2)
        factor = Decimal("0.001") if unit == "m" else Decimal(UNITS[unit or "B"])
        return int(Decimal(match.group(1)) * factor)
    except InvalidOperation as err:
        raise ClusterError(f"the cluster returned {text!r} as a storage size") from err


@dataclass(frozen=True)
class LiveCluster:
    nodes: list[NodeState]
    claims: list[ClaimState]  # of the tenant's namespace
    retained: list[str]  # what its namespace records offboarding has archived (RETAINED_ANNOTATION)
    stage: str | None  # the offboarding stage its namespace records (STAGE_ANNOTATION)
    namespace_exists: bool = True
    # Whose the namespace says it is (TENANT_NAMESPACE_LABEL), None when unlabelled or absent.
    namespace_tenant: str | None = None
    # Whether the last `up` was a rehearsal's (REHEARSAL_ANNOTATION), None when not recorded.
    rehearsal: bool | None = None
    # Every StorageClass's parameters, by name.
    storage_classes: dict[str, dict[str, str]] = field(default_factory=dict)


def namespace_managers(namespace: str) -> list[str]:
    """The field managers that wrote `namespace` (kubectl hides them unless asked)."""
    found = kubectl_get("namespace", namespace, "--show-managed-fields")
    fields = ((found or {}).get("metadata") or {}).get("managedFields") or []
    return sorted({str(entry.get("manager", "")) for entry in fields})


def _cluster(namespace: str, items: list[dict[str, Any]]) -> LiveCluster:
    own: dict[str, Any] = next(
        (
            item
            for item in items
            if item.get("kind") == "Namespace" and item["metadata"]["name"] == namespace
        ),
        {"metadata": {}},
    )
    annotations = own["metadata"].get("annotations") or {}
    labels = own["metadata"].get("labels") or {}
    retained = annotations.get(RETAINED_ANNOTATION, "")
    rehearsal = annotations.get(REHEARSAL_ANNOTATION)
    return LiveCluster(
        nodes=[NodeState.from_api(item) for item in items if item.get("kind") == "Node"],
        claims=[
            ClaimState.from_api(item)
            for item in items
            if item.get("kind") == "PersistentVolumeClaim"
        ],
        retained=[kind for kind in retained.split(",") if kind],
        stage=annotations.get(STAGE_ANNOTATION),
        namespace_exists=bool(own["metadata"]),
        namespace_tenant=labels.get(TENANT_NAMESPACE_LABEL),
        rehearsal=None if rehearsal is None else rehearsal == "true",
        storage_classes={
            item["metadata"]["name"]: dict(item.get("parameters") or {})
            for item in items
            if item.get("kind") == "StorageClass"
        },
    )


def _cluster_read(namespace: str) -> Kubectl:
    """Every Node of the cluster, the claims of `namespace` (none when it does not exist yet),
    the namespaces (for the tenant's own) and the StorageClasses, in one request, started."""
    kinds = "nodes,persistentvolumeclaims,namespaces,storageclasses"
    return start_read("get", kinds, namespace=namespace)


def read_cluster(namespace: str) -> LiveCluster:
    """The nodes, the claims of `namespace` and what its namespace records, as they are now."""
    return _cluster(namespace, _cluster_read(namespace).json()["items"])


class LiveReads:
    """The program's two reads, running side by side from `start` on: the cluster (for the
    tenant `namespace`) and the `data` (base64 values) of the LDAP bind Secret. Used as a
    context manager, so that a program failing before it reads them leaves no kubectl behind."""

    def __init__(self, namespace: str, secret_namespace: str, secret_name: str) -> None:
        self.namespace = namespace
        self.secret = f"{secret_namespace}/{secret_name}"
        self._cluster = _cluster_read(namespace)
        self._secret = start_read("get", "secret", secret_name, namespace=secret_namespace)

    def __enter__(self) -> LiveReads:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._cluster.stop()
        self._secret.stop()

    def cluster(self) -> LiveCluster:
        return _cluster(self.namespace, self._cluster.json()["items"])

    def secret_data(self) -> dict[str, str]:
        """The Secret's values never appear in an error: kubectl's message names it only."""
        data: dict[str, str] = self._secret.json().get("data") or {}
        if not data:
            raise ClusterError(f"Secret {self.secret} holds no data; the platform must fill it")
        return data
