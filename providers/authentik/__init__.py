"""Authentik: the tenant's groups and users (onboarding step 2, offboarding step 5).

`client` talks to the REST API (no Pulumi in it), `settings` reads the endpoint and token from the
environment at call time, `props` validates the inputs, `provider` implements the dynamic
providers and `resources` the resources a component declares.
"""

from providers.authentik.client import AuthentikClient
from providers.authentik.props import MARK_ATTRIBUTE
from providers.authentik.provider import TenantGroupProvider, TenantUserProvider
from providers.authentik.resources import TenantGroup, TenantUser
from providers.authentik.settings import Settings, load_settings

__all__ = [
    "MARK_ATTRIBUTE",
    "AuthentikClient",
    "Settings",
    "TenantGroup",
    "TenantGroupProvider",
    "TenantUser",
    "TenantUserProvider",
    "load_settings",
]
