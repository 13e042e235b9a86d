"""Runbook step 1: the Reservation of named GPU nodes, and waiting until the operator holds them;
and offboarding step 7's health check of each node before the Reservation lets it go."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from providers.offboarding.resources import NodeRelease
from tenant_stack.components.kubernetes_objects import KubernetesObject, object_metadata

TYPE = "gpu-tenants:reservation:CapacityReservation"


@dataclass(frozen=True)
class CapacityReservationArgs:
    tenant: str
    name: str
    hardware_pool: str
    nodes: list[str]
    # The node condition the platform's health checker sets (True: healthy), read before the
    # nodes go back to the pool (offboarding step 7); None: no checker, nothing read.
    health_condition: str | None
    # How long `pulumi up` waits for the operator to label every node before it fails.
    ready_timeout_seconds: int = 300


class CapacityReservation(pulumi.ComponentResource):
    name: pulumi.Output[str]
    nodes: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: CapacityReservationArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        reservation = KubernetesObject(
            f"{name}-reservation",
            api_version="scheduling.example.io/v1alpha1",
            kind="Reservation",
            metadata=object_metadata(
                args.name,
                labels={"tenant": args.tenant},
                annotations={
                    # up returns once the operator reports every node labelled and tainted.
                    "pulumi.com/waitFor": "condition=Ready",
                    "pulumi.com/timeoutSeconds": str(args.ready_timeout_seconds),
                },
            ),
            manifest={
                "spec": {
                    "tenant": args.tenant,
                    "nodeSelector": {"matchLabels": {"hardware-pool": args.hardware_pool}},
                    "reservedNodes": list(args.nodes),
                    "applyTaint": True,
                    "taintEffect": "NoSchedule",
                    # true would make the operator evict running jobs on release (runbook sidebar).
                    "evictOnRelease": False,
                }
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        if args.health_condition is not None:
            NodeRelease(
                f"{name}-node-release",
                tenant=args.tenant,
                nodes=args.nodes,
                condition=args.health_condition,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[reservation]),
            )
        # Through the urn (known at preview) so that users of the name depend on the Reservation.
        self.name = reservation.urn.apply(lambda _: args.name)
        self.nodes = pulumi.Output.from_input(list(args.nodes))
        self.register_outputs({"name": self.name, "nodes": self.nodes})
