"""Stacks made before the Weka providers were split into one module per kind hold each provider
pickled by reference to `providers.weka.provider`; `refresh` and `destroy` unpickle it with this
code. These are those pickles, as `serialize_provider` wrote them before the split."""

from __future__ import annotations

import base64

import dill  # type: ignore[import-untyped]  # what the engine unpickles with
import pytest
from pulumi.dynamic import ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider

from providers.weka.directory_provider import DirectoryProvider
from providers.weka.filesystem_provider import FilesystemProvider
from providers.weka.org_user_provider import OrgUserProvider
from providers.weka.organization_provider import OrganizationProvider
from providers.weka.quota_provider import DirectoryQuotaProvider

BEFORE_THE_SPLIT = {
    DirectoryProvider: (
        "gASVNAAAAAAAAACMF3Byb3ZpZGVycy53ZWthLnByb3ZpZGVylIwRRGlyZWN0b3J5UHJvdmlkZXKUk5QpgZQu"
    ),
    DirectoryQuotaProvider: (
        "gASVOQAAAAAAAACMF3Byb3ZpZGVycy53ZWthLnByb3ZpZGVylIwWRGlyZWN0b3J5UXVvdGFQcm92aWRlcpSTlCmBlC4="
    ),
    FilesystemProvider: (
        "gASVNQAAAAAAAACMF3Byb3ZpZGVycy53ZWthLnByb3ZpZGVylIwSRmlsZXN5c3RlbVByb3ZpZGVylJOUKYGULg=="
    ),
    OrgUserProvider: (
        "gASVMgAAAAAAAACMF3Byb3ZpZGVycy53ZWthLnByb3ZpZGVylIwPT3JnVXNlclByb3ZpZGVylJOUKYGULg=="
    ),
    OrganizationProvider: (
        "gASVNwAAAAAAAACMF3Byb3ZpZGVycy53ZWthLnByb3ZpZGVylIwUT3JnYW5pemF0aW9uUHJvdmlkZXKUk5QpgZQu"
    ),
}


@pytest.mark.parametrize(("kind", "pickled"), BEFORE_THE_SPLIT.items(), ids=lambda v: str(v)[-30:])
def test_a_provider_pickled_before_the_split_unpickles_to_its_class(
    kind: type[ResourceProvider], pickled: str
) -> None:
    assert b"providers.weka.provider" in base64.b64decode(pickled)
    assert type(dill.loads(base64.b64decode(pickled))) is kind


@pytest.mark.parametrize("kind", BEFORE_THE_SPLIT, ids=lambda kind: kind.__name__)
def test_a_provider_is_pickled_by_reference_to_its_own_module(
    kind: type[ResourceProvider],
) -> None:
    pickled = base64.b64decode(serialize_provider(kind()))
    assert kind.__module__.encode() in pickled
    assert kind.__name__.encode() in pickled
    assert type(dill.loads(pickled)) is kind
