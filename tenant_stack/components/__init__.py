"""One ComponentResource per runbook layer; each takes one typed args object."""

from tenant_stack.components.capacity_reservation import (
    CapacityReservation,
    CapacityReservationArgs,
)
from tenant_stack.components.identity_group import IdentityGroup, IdentityGroupArgs
from tenant_stack.components.login_pod import LoginPod, LoginPodArgs
from tenant_stack.components.tenant_namespace import TenantNamespace, TenantNamespaceArgs

__all__ = [
    "CapacityReservation",
    "CapacityReservationArgs",
    "IdentityGroup",
    "IdentityGroupArgs",
    "LoginPod",
    "LoginPodArgs",
    "TenantNamespace",
    "TenantNamespaceArgs",
]
