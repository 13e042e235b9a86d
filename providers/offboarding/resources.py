"""Offboarding's records as the program declares them: the gate, after every other resource of
the tenant, and the release of each reserved node, checked for health before it goes back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
from pulumi.dynamic import Resource

from providers.offboarding.gate_provider import OffboardingGateProvider
from providers.offboarding.node_release_provider import NodeReleaseProvider

__all__ = ["NodeRelease", "OffboardingGate"]


class OffboardingGate(Resource, module="offboarding", name="Gate"):
    """Give it `depends_on` every component of the tenant: destroy then deletes it first, and
    deletes nothing while it refuses."""

    tenant: pulumi.Output[str]
    accounts: pulumi.Output[list[str]]
    lifecycle: pulumi.Output[dict[str, object]]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        accounts: Sequence[str],
        namespace: pulumi.Input[str],
        lifecycle: Mapping[str, object],
        sign_off: Mapping[str, str] | None,
        abandoned: Mapping[str, object] | None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "accounts": list(accounts),
            "namespace": namespace,
            "lifecycle": dict(lifecycle),
            "sign_off": dict(sign_off) if sign_off is not None else None,
            "abandoned": dict(abandoned) if abandoned is not None else None,
        }
        super().__init__(OffboardingGateProvider(), resource_name, inputs, opts)


class NodeRelease(Resource, module="offboarding", name="NodeRelease"):
    """Give it `depends_on` the Reservation: destroy then checks each node's health `condition`
    before the Reservation lets the nodes go, and holds back a failing one for RMA."""

    held_back: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        nodes: Sequence[str],
        condition: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {"tenant": tenant, "nodes": list(nodes), "condition": condition, "held_back": None}
        super().__init__(NodeReleaseProvider(), resource_name, inputs, opts)
