"""What `diagnose` and `status` say about a tenant: findings (a failure with its evidence, cause
and fix) and conditions (one per layer, True/False/Unknown with a reason and a message, the way
Kubernetes objects report theirs)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["LAYERS", "Condition", "Finding"]

# The runbook's layers, in the order onboarding builds them.
LAYERS = (
    "CapacityReservation",
    "IdentityGroup",
    "TenantNamespace",
    "SlurmAccounting",
    "WekaStorage",
    "LoginPod",
)


@dataclass(frozen=True)
class Finding:
    check: str  # a stable name, such as "reservation-evicts-on-release"
    layer: str  # one of LAYERS
    rank: int  # what to fix first: lower first (an unreadable backend hides everything else)
    evidence: str  # what was read, and where
    cause: str  # why it is wrong, in the runbook's terms
    fix: str  # the command to run or the spec change to make

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"[{self.layer}] {self.check}\n  evidence: {self.evidence}\n  cause:    {self.cause}\n"
            f"  fix:      {self.fix}"
        )


@dataclass(frozen=True)
class Condition:
    type: str  # "Ready", or a layer's: "NamespaceReady", ...
    status: Literal["True", "False", "Unknown"]
    reason: str  # CamelCase, for machines
    message: str  # for people

    def as_json(self) -> dict[str, str]:
        return asdict(self)
