"""The Pulumi program: stack `prod` is the shared platform; any other stack is the tenant whose
spec is tenants/<stack>.yaml."""

from pathlib import Path

import pulumi

from providers.errors import BackendError
from tenant_stack.errors import TenantError
from tenant_stack.platform import load_platform
from tenant_stack.program import build_platform, build_tenant
from tenant_stack.spec import load_spec
from tenant_stack.stacks import PLATFORM_STACK

# absolute(), not resolve(): a copy of the project made of symlinks reads its own tenants/.
ROOT = Path(__file__).absolute().parent

try:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    stack = pulumi.get_stack()
    if stack == PLATFORM_STACK:
        build_platform(platform)
    else:
        spec = load_spec(ROOT / "tenants", stack, platform)
        build_tenant(spec, platform, ROOT / "tenants" / f"{stack}.yaml")
except (TenantError, BackendError) as err:
    # A RunError is shown as its message alone: the problems, without a Python traceback.
    raise pulumi.RunError(str(err)) from None
