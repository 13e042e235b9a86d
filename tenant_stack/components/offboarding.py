"""The offboarding runbook's own resources. Today: the gate that `pulumi destroy` must pass before
it deletes anything of the tenant (providers/offboarding/gate_provider.py), declared after every
other component so that it is the first thing destroy deletes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from providers.offboarding.resources import OffboardingGate

TYPE = "gpu-tenants:offboarding:Offboarding"


@dataclass(frozen=True)
class OffboardingArgs:
    tenant: str
    accounts: list[str]  # the Slurm accounts whose queue must be empty before destroy (step 4d)
    lifecycle: Mapping[str, object]
    # Every other component of the tenant: the gate depends on all of them.
    after: list[pulumi.Resource]


class Offboarding(pulumi.ComponentResource):
    stage: pulumi.Output[str]

    def __init__(
        self, name: str, args: OffboardingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        gate = OffboardingGate(
            f"{name}-gate",
            tenant=args.tenant,
            accounts=args.accounts,
            lifecycle=args.lifecycle,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        self.stage = gate.lifecycle.apply(lambda record: str(record["stage"]))
        self.register_outputs({"stage": self.stage})
