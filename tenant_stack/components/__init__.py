"""One ComponentResource per runbook layer; each takes one typed args object."""

from tenant_stack.components.capacity_reservation import (
    CapacityReservation,
    CapacityReservationArgs,
)
from tenant_stack.components.identity_group import IdentityGroup, IdentityGroupArgs
from tenant_stack.components.login_pod import LoginPod, LoginPodArgs
from tenant_stack.components.offboarding import Offboarding, OffboardingArgs
from tenant_stack.components.retention import Retention, RetentionArgs
from tenant_stack.components.slurm_accounting import SlurmAccounting, SlurmAccountingArgs
from tenant_stack.components.tenant_namespace import TenantNamespace, TenantNamespaceArgs
from tenant_stack.components.weka_storage import WekaStorage, WekaStorageArgs

__all__ = [
    "CapacityReservation",
    "CapacityReservationArgs",
    "IdentityGroup",
    "IdentityGroupArgs",
    "LoginPod",
    "LoginPodArgs",
    "Offboarding",
    "OffboardingArgs",
    "Retention",
    "RetentionArgs",
    "SlurmAccounting",
    "SlurmAccountingArgs",
    "TenantNamespace",
    "TenantNamespaceArgs",
    "WekaStorage",
    "WekaStorageArgs",
]
