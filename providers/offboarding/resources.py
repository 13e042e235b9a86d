"""The offboarding gate as the program declares it: after every other resource of the tenant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
from pulumi.dynamic import Resource

from providers.offboarding.gate_provider import OffboardingGateProvider

__all__ = ["OffboardingGate"]


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
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "accounts": list(accounts),
            "namespace": namespace,
            "lifecycle": dict(lifecycle),
        }
        super().__init__(OffboardingGateProvider(), resource_name, inputs, opts)
