"""A compatibility shim: the five Weka provider classes under the module name that stacks made
before the providers were split into one module per kind (`organization_provider`,
`filesystem_provider`, `quota_provider`, `directory_provider`, `org_user_provider`) recorded.

It holds no code and must stay. Pulumi pickles each dynamic provider into the state by reference,
as its module and class name (`providers.weka.provider.OrganizationProvider`), and `refresh` and
`destroy` unpickle it with the code checked out: without this module, or without one of these
names, every existing stack's Weka resources (kept for years once offboarded) could no longer be
refreshed or destroyed. A resource's outputs, from which `refresh` and `destroy` take the
provider, name this module until an update of that very resource rewrites them: one that `up`
leaves unchanged keeps naming it. New code imports the providers from their own modules.
"""

from __future__ import annotations

from providers.weka.directory_provider import DirectoryProvider
from providers.weka.filesystem_provider import FilesystemProvider
from providers.weka.org_user_provider import OrgUserProvider
from providers.weka.organization_provider import OrganizationProvider
from providers.weka.quota_provider import DirectoryQuotaProvider

__all__ = [
    "DirectoryProvider",
    "DirectoryQuotaProvider",
    "FilesystemProvider",
    "OrgUserProvider",
    "OrganizationProvider",
]
