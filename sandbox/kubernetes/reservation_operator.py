"""A stand-in for the cluster's reservation operator, doing what the onboarding runbook says the
real one does:

- labels `reserved.tenant=<tenant>` and taints each node of a Reservation;
- refuses a node that another Reservation holds (or that is missing, or outside the Reservation's
  nodeSelector) and reports the conflict in the Reservation's status;
- sets Ready=True once every node is labelled;
- on deletion (through its finalizer) removes label and taint from the nodes it held.

As a controller's informers do, it acts as soon as a Reservation or a Node changes (a watch of
each wakes it, `client.Changes`), and looks again every second whatever happened: each pass
lists both and keeps no state of the watches to get wrong.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sandbox.kubernetes.client import (
    JSON,
    Changes,
    KubeClient,
    KubeError,
    controller_arguments,
    identity_client,
    log,
    reconcile_forever,
)

# The operator's own names, written from its side: the product reads its copies
# (`tenant_stack.live`), so that a product reading the wrong name fails against the sandbox.
TENANT_LABEL = "reserved.tenant"
RESERVATION_ANNOTATION = "scheduling.example.io/reservation"
FINALIZER = "scheduling.example.io/release-nodes"
RESERVATIONS = "/apis/scheduling.example.io/v1alpha1/reservations"


@dataclass
class Outcome:
    """What reconciling one Reservation found."""

    labelled: list[str] = field(default_factory=list)
    conflicts: list[JSON] = field(default_factory=list)


def _holder(node: JSON) -> str | None:
    annotations: dict[str, str] = node["metadata"].get("annotations") or {}
    return annotations.get(RESERVATION_ANNOTATION)


def _selector_matches(reservation: JSON, node: JSON) -> bool:
    wanted: dict[str, str] = (reservation["spec"].get("nodeSelector") or {}).get(
        "matchLabels"
    ) or {}
    labels: dict[str, str] = node["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def _without_our_taint(node: JSON) -> list[JSON]:
    return [t for t in node["spec"].get("taints") or [] if t["key"] != TENANT_LABEL]


class ReservationOperator:
    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def reconcile_all(self) -> None:
        reservations = self.client.get(RESERVATIONS)["items"]
        nodes = {n["metadata"]["name"]: n for n in self.client.get("/api/v1/nodes")["items"]}
        # Older Reservations win a contested node, as the first to be applied would.
        for reservation in sorted(reservations, key=lambda r: r["metadata"]["creationTimestamp"]):
            try:
                self.reconcile(reservation, nodes)
            except KubeError as err:
                # A conflict on write means someone else changed the object; next pass retries.
                log(f"reservation {reservation['metadata']['name']}: {err}")

    def reconcile(self, reservation: JSON, nodes: dict[str, JSON]) -> None:
        name = reservation["metadata"]["name"]
        if reservation["metadata"].get("deletionTimestamp"):
            self._release(name, [n for n in nodes.values() if _holder(n) == name])
            self._drop_finalizer(reservation)
            return
        if FINALIZER not in (reservation["metadata"].get("finalizers") or []):
            self.client.merge_patch(
                f"{RESERVATIONS}/{name}",
                {
                    "metadata": {
                        "finalizers": [
                            *(reservation["metadata"].get("finalizers") or []),
                            FINALIZER,
                        ],
                        "resourceVersion": reservation["metadata"]["resourceVersion"],
                    }
                },
            )
        spec = reservation["spec"]
        wanted = list(spec["reservedNodes"])
        outcome = Outcome()
        for node_name in wanted:
            node = nodes.get(node_name)
            if node is None:
                outcome.conflicts.append(
                    {"node": node_name, "reason": "NodeNotFound", "heldBy": ""}
                )
                continue
            holder = _holder(node)
            if holder not in (None, name):
                tenant = (node["metadata"].get("labels") or {}).get(TENANT_LABEL, "")
                outcome.conflicts.append(
                    {"node": node_name, "reason": "HeldByOtherReservation", "heldBy": holder or ""}
                    | {"tenant": tenant}
                )
                continue
            if not _selector_matches(reservation, node):
                outcome.conflicts.append(
                    {"node": node_name, "reason": "NodeSelectorMismatch", "heldBy": ""}
                )
                continue
            nodes[node_name] = self._hold(name, spec, node)
            outcome.labelled.append(node_name)
        stale = [
            n for n in nodes.values() if _holder(n) == name and n["metadata"]["name"] not in wanted
        ]
        self._release(name, stale)
        self._write_status(reservation, outcome)

    def _hold(self, reservation: str, spec: JSON, node: JSON) -> JSON:
        tenant = spec["tenant"]
        taints = _without_our_taint(node)
        if spec.get("applyTaint", True):
            taints.append(
                {
                    "key": TENANT_LABEL,
                    "value": tenant,
                    "effect": spec.get("taintEffect", "NoSchedule"),
                }
            )
        labels = node["metadata"].get("labels") or {}
        if (
            labels.get(TENANT_LABEL) == tenant
            and _holder(node) == reservation
            and (node["spec"].get("taints") or []) == taints
        ):
            return node
        log(f"reservation {reservation}: labelling and tainting {node['metadata']['name']}")
        patched: JSON = self.client.merge_patch(
            f"/api/v1/nodes/{node['metadata']['name']}",
            {
                "metadata": {
                    "labels": {TENANT_LABEL: tenant},
                    "annotations": {RESERVATION_ANNOTATION: reservation},
                    "resourceVersion": node["metadata"]["resourceVersion"],
                },
                "spec": {"taints": taints or None},
            },
        )
        return patched

    def _release(self, reservation: str, nodes: list[JSON]) -> None:
        for node in nodes:
            log(f"reservation {reservation}: releasing {node['metadata']['name']}")
            self.client.merge_patch(
                f"/api/v1/nodes/{node['metadata']['name']}",
                {
                    "metadata": {
                        "labels": {TENANT_LABEL: None},
                        "annotations": {RESERVATION_ANNOTATION: None},
                        "resourceVersion": node["metadata"]["resourceVersion"],
                    },
                    "spec": {"taints": _without_our_taint(node) or None},
                },
            )

    def _drop_finalizer(self, reservation: JSON) -> None:
        finalizers = [f for f in reservation["metadata"].get("finalizers") or [] if f != FINALIZER]
        if reservation["spec"].get("evictOnRelease"):
            # No kubelet runs here, so there are no pods to evict; say what the real one would do.
            log(
                f"reservation {reservation['metadata']['name']}: "
                "evictOnRelease=true would evict the tenant's pods now"
            )
        self.client.merge_patch(
            f"{RESERVATIONS}/{reservation['metadata']['name']}",
            {
                "metadata": {
                    "finalizers": finalizers or None,
                    "resourceVersion": reservation["metadata"]["resourceVersion"],
                }
            },
        )

    def _write_status(self, reservation: JSON, outcome: Outcome) -> None:
        total = len(reservation["spec"]["reservedNodes"])
        if outcome.conflicts:
            first = outcome.conflicts[0]
            reason = first["reason"]
            message = "; ".join(_describe(c) for c in outcome.conflicts)
        else:
            reason = "AllNodesReserved"
            message = f"{len(outcome.labelled)}/{total} nodes labelled and tainted"
        ready = "True" if not outcome.conflicts and len(outcome.labelled) == total else "False"
        old: JSON = reservation.get("status") or {}
        previous = next((c for c in old.get("conditions") or [] if c["type"] == "Ready"), None)
        generation = reservation["metadata"].get("generation", 1)
        condition: dict[str, Any] = {
            "type": "Ready",
            "status": ready,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": previous["lastTransitionTime"]
            if previous and previous["status"] == ready
            else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        status: JSON = {
            "observedGeneration": generation,
            "labelledNodes": len(outcome.labelled),
            "nodes": outcome.labelled,
            "conflicts": outcome.conflicts,
            "conditions": [condition],
        }
        if status == old:
            return
        log(f"reservation {reservation['metadata']['name']}: Ready={ready} ({message})")
        self.client.merge_patch(
            f"{RESERVATIONS}/{reservation['metadata']['name']}/status",
            {
                "status": status,
                "metadata": {"resourceVersion": reservation["metadata"]["resourceVersion"]},
            },
        )


def _describe(conflict: JSON) -> str:
    node = conflict["node"]
    if conflict["reason"] == "HeldByOtherReservation":
        return (
            f"node {node} is already reserved by tenant {conflict['tenant']} "
            f"(Reservation {conflict['heldBy']})"
        )
    if conflict["reason"] == "NodeNotFound":
        return f"node {node} does not exist"
    return f"node {node} does not match the Reservation's nodeSelector"


def main(argv: list[str]) -> int:
    parser = controller_arguments(__doc__.splitlines()[0])
    parser.add_argument("--identity", default="reservation-operator")
    args = parser.parse_args(argv)

    # A new client per watch, each on its own connection.
    client = partial(identity_client, args.server, args.pki_dir, args.identity)
    operator = ReservationOperator(client())
    log("reservation operator started")
    changes = Changes(client, [RESERVATIONS, "/api/v1/nodes"])
    reconcile_forever(operator.reconcile_all, changes, args.interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
