"""Runbook step 1's capacity check: the nodes a tenant names must exist, be Ready, be schedulable,
be of the contracted SKU and pool, and be in no other tenant's Reservation.

It runs in the program, before any resource is declared, so `pulumi preview` in a pull request
refuses a bad reservation and changes nothing. The nodes are read with `kubectl` (the operator's
own tool, and whatever credentials their kubeconfig uses), through the same KUBECONFIG the
Kubernetes provider uses.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tenant_stack.errors import ClusterError, Problem

TENANT_LABEL = "reserved.tenant"
RESERVATION_ANNOTATION = "scheduling.example.io/reservation"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
POOL_LABEL = "hardware-pool"


@dataclass(frozen=True)
class NodeState:
    """What the check needs of one live Node."""

    name: str
    ready: bool
    cordoned: bool
    instance_type: str | None
    pool: str | None
    reserved_by: str | None  # the tenant label the reservation operator sets
    reservation: str | None

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
        )


@dataclass(frozen=True)
class Findings:
    refusals: list[Problem]
    # Nodes this tenant already holds that have since turned NotReady or been cordoned: worth a
    # warning, but refusing them would block every later change to the tenant (an RMA, say).
    warnings: list[str]


def check_nodes(
    tenant: str, sku: str, pool: str, wanted: Sequence[str], live: Sequence[NodeState]
) -> Findings:
    by_name = {node.name: node for node in live}
    refusals: list[Problem] = []
    warnings: list[str] = []
    for index, name in enumerate(wanted):
        where = f"reservation.nodes.{index}"
        node = by_name.get(name)
        if node is None:
            refusals.append(Problem(where, f"node {name} does not exist in the cluster"))
            continue
        ours = node.reserved_by == tenant
        for reason in _unfit(node, tenant, sku, pool):
            if ours and reason.startswith(("is NotReady", "is cordoned")):
                warnings.append(f"node {name} of {tenant}'s reservation {reason}")
            else:
                refusals.append(Problem(where, f"node {name} {reason}"))
    return Findings(refusals, warnings)


def _unfit(node: NodeState, tenant: str, sku: str, pool: str) -> Iterator[str]:
    if node.reserved_by not in (None, tenant):
        held = f" (Reservation {node.reservation})" if node.reservation else ""
        yield f"is already reserved by tenant {node.reserved_by}{held}"
    if node.instance_type != sku:
        yield f"is of instance type {node.instance_type!r}, the contract's SKU is {sku!r}"
    if node.pool != pool:
        yield f"is in hardware pool {node.pool!r}, the reservation's pool is {pool!r}"
    if not node.ready:
        yield "is NotReady: fix or replace it before reserving it"
    if node.cordoned:
        yield "is cordoned (SchedulingDisabled): uncordon it or pick another node"


def read_nodes(kubectl: str = "kubectl") -> list[NodeState]:
    """Every Node of the cluster the current kubeconfig points at."""
    argv = [kubectl, "get", "nodes", "--output=json", "--request-timeout=30s"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError as err:
        raise ClusterError(f"{kubectl} is not on PATH; the node preflight needs it") from err
    except subprocess.TimeoutExpired as err:
        raise ClusterError(f"`{' '.join(argv)}` did not answer within 60s") from err
    except OSError as err:
        raise ClusterError(f"`{' '.join(argv)}` could not run: {err}") from err
    if result.returncode != 0:
        message = result.stderr.strip() or f"exit code {result.returncode}"
        raise ClusterError(f"`{' '.join(argv)}` failed: {message}")
    return [NodeState.from_api(item) for item in json.loads(result.stdout)["items"]]
