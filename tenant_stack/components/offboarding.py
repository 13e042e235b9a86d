"""The offboarding runbook's own resources: the tenant's workloads stopped from stage drained on
(step 2's Kubernetes half), and the gate that `pulumi destroy` must pass before it deletes
anything of the tenant (providers/offboarding/gate_provider.py), declared after every other
component so that it is the first thing destroy deletes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from providers.kubernetes.resources import WorkloadsStopped
from providers.notices.delivery import Notice
from providers.notices.resources import TenantNotice
from providers.offboarding.resources import OffboardingGate

TYPE = "gpu-tenants:offboarding:Offboarding"


@dataclass(frozen=True)
class OffboardingArgs:
    tenant: str
    accounts: list[str]  # the Slurm accounts whose queue must be empty before destroy (step 4d)
    namespace: pulumi.Input[str]  # where no tenant pod may run at destroy (step 4d)
    login_release: str  # the stack's own release, which stage drained leaves running
    stop_workloads: bool  # stage drained reached: the tenant's workloads are at zero
    lifecycle: Mapping[str, object]
    sign_off: Mapping[str, str] | None  # stage destroy's: the gate records it in the ledger
    start_notice: Notice | None  # from stage frozen on: sent to the tenant's contact, once
    # An abandoned onboarding: what its gate checks live before it opens (mapping).
    abandoned: Mapping[str, object] | None
    # Every other component of the tenant: the gate depends on all of them.
    after: list[pulumi.Resource]


class Offboarding(pulumi.ComponentResource):
    stage: pulumi.Output[str]

    def __init__(
        self, name: str, args: OffboardingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        stopped = []
        if args.stop_workloads:
            stopped.append(
                WorkloadsStopped(
                    f"{name}-workloads-stopped",
                    namespace=args.namespace,
                    keep_instance=args.login_release,
                    lifecycle=args.lifecycle,
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        gate = OffboardingGate(
            f"{name}-gate",
            tenant=args.tenant,
            accounts=args.accounts,
            namespace=args.namespace,
            lifecycle=args.lifecycle,
            sign_off=args.sign_off,
            abandoned=args.abandoned,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.after, *stopped]),
        )
        if args.start_notice is not None:
            notice = args.start_notice
            TenantNotice(
                f"{name}-start-notice",
                tenant=notice.tenant,
                kind=notice.kind,
                sender=notice.sender,
                to=notice.to,
                subject=notice.subject,
                text=notice.text,
                # What was sent stays what was sent: a later edit of the spec (the drain's
                # mode at stage drained) sends no second notice. A new contact gets one.
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=["subject", "text"]),
            )
        self.stage = gate.lifecycle.apply(lambda record: str(record["stage"]))
        self.register_outputs({"stage": self.stage})
