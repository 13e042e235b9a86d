"""GPU-cluster tenants as Pulumi stacks: the tenant spec, the platform it is checked against, and
(to come) the components that build a tenant from it."""

from tenant_stack.errors import PlatformError, Problem, SpecError, TenantError
from tenant_stack.platform import Platform, load_platform
from tenant_stack.spec import TenantSpec, check_spec, hostlist, load_spec

__all__ = [
    "Platform",
    "PlatformError",
    "Problem",
    "SpecError",
    "TenantError",
    "TenantSpec",
    "check_spec",
    "hostlist",
    "load_platform",
    "load_spec",
]
