"""The Pulumi program: stack `prod` is the shared platform; any other stack is the tenant whose
spec is tenants/<stack>.yaml (or <stack>.yaml in the directory $GPU_TENANTS_SPECS names)."""

import gc
import os
from pathlib import Path

import pulumi

from providers.errors import BackendError
from tenant_stack.errors import TenantError
from tenant_stack.live import LiveReads
from tenant_stack.platform import load_platform
from tenant_stack.stacks import PLATFORM_STACK, SPECS_VARIABLE

# This process declares one stack and exits. What it has loaded so far (the SDK) lives until then:
# frozen, the collector stops scanning it on every collection (about 0.05 s of a no-op preview).
gc.freeze()


def _unsent(*_args: object, **_kwargs: object) -> None:
    """The SDK sends the engine a debug message at each step of every registration, each a
    blocking call on the program's one thread, which the CLI shows only under --debug: about 0.1 s
    of a no-op preview. The program's own messages are warnings; `-v=5 --logtostderr` still logs
    every registration the engine receives."""


pulumi.log.debug = _unsent

# absolute(), not resolve(): a copy of the project made of symlinks reads its own tenants/.
ROOT = Path(__file__).absolute().parent
SPECS = Path(os.environ.get(SPECS_VARIABLE) or ROOT / "tenants")

try:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    stack = pulumi.get_stack()
    if stack == PLATFORM_STACK:
        from tenant_stack.program import build_platform

        build_platform(platform)
    else:
        names = platform.kubernetes
        # The cluster reads start first and the program's modules load while kubectl answers:
        # every preview waits for both, one after the other they cost it about 0.15 s.
        with LiveReads(stack, names.auth_namespace, names.ldap_bind_secret) as reads:
            from tenant_stack.program import build_tenant
            from tenant_stack.spec import load_spec

            spec = load_spec(SPECS, stack, platform)
            build_tenant(spec, platform, SPECS / f"{stack}.yaml", reads)
except (TenantError, BackendError) as err:
    # A RunError is shown as its message alone: the problems, without a Python traceback.
    raise pulumi.RunError(str(err)) from None
