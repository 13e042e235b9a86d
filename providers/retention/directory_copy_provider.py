"""Offboarding step 4 for a tenant on the platform's shared filesystems (directory isolation):
the shared filesystems' snapshots hold every tenant, so the tenant's retained copy is its own
directory only, archived on the mount host (a gzipped tar, numeric owners kept) and put in the
retention store at `<tenant>/storage/<filesystem>.tar.gz` with `tenant`, `retention-until`,
`filesystem` and `path` metadata.

The key is fixed: an `up` killed after the upload writes the same object again, never a second.
Verified by reading the stored object's size back. The directory's delete gate trusts the key
only while the object is still in the store (`providers.retention.client.holds`). Delete
refuses until `retention-until` has passed; the program declares the copy protected.
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Schema, SchemaProvider, gone
from providers.errors import OffboardingError, RetentionStoreError
from providers.retention.client import RetentionStore
from providers.retention.objects import (
    RETENTION_UNTIL,
    refuse_while_retained,
    retained_until,
    retention_metadata,
    tenant_key,
)
from providers.slurm import values
from providers.weka.client import ROOT_ORG
from providers.weka.mount import mount_client
from providers.weka.props import NAME, matching

__all__ = ["DirectoryCopyProvider"]


def _path(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/") or ".." in value.split("/"):
        raise ValueError(f"{value!r} is not an absolute path inside the filesystem")
    return value


COPY = Schema(
    kind="retained directory copy",
    fields=(
        Field("tenant", values.name, replaces=True),
        Field("filesystem", matching(NAME, "a Weka filesystem name"), replaces=True),
        Field("path", _path, replaces=True),
        Field("org", matching(NAME, "a Weka organization name"), ROOT_ORG, replaces=True),
        Field("retention_days", values.count),
    ),
)


class DirectoryCopyProvider(SchemaProvider):
    schema = COPY
    error = RetentionStoreError

    def create(self, props: dict[str, Any]) -> CreateResult:
        doing = f"keeping a copy of {props.get('filesystem')}{props.get('path')}"
        p = self.load(props, doing)
        data = mount_client().archive(p["org"], p["filesystem"], p["path"], doing)
        key = tenant_key(p["tenant"], "storage", f"{p['filesystem']}.tar.gz")
        until = retained_until(p["retention_days"])
        metadata = {
            **retention_metadata(p["tenant"], until),
            "filesystem": p["filesystem"],
            "path": p["path"],
        }
        with RetentionStore.from_environment() as store:
            store.put(key, data, metadata)
            found = store.head(key)
            if found is None or found.size != len(data):
                raise OffboardingError(doing, f"{store.url(key)} does not hold what was uploaded")
            url = store.url(key)
        outputs = {**p, "key": key, "url": url, "size": len(data), "retention_until": str(until)}
        return CreateResult(key, outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with RetentionStore.from_environment() as store:
            found = store.head(id_)
        if found is None:
            return gone()
        until = (found.metadata or {}).get(RETENTION_UNTIL, props.get("retention_until"))
        return ReadResult(id_, {**props, "size": found.size, "retention_until": until})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """A new retention period: the same copy, stored again with the new date."""
        doing = f"changing the retention of {id_!r}"
        p = self.load(news, doing)
        until = retained_until(p["retention_days"])
        with RetentionStore.from_environment() as store:
            found = store.head(id_)
            if found is None or found.metadata is None:
                raise OffboardingError(doing, "the copy is gone from the retention store")
            store.put(id_, store.get(id_), {**found.metadata, RETENTION_UNTIL: str(until)})
        return UpdateResult({**olds, **p, "retention_until": str(until)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        refuse_while_retained(
            OffboardingError, f"the retained copy {id_!r}", props.get("retention_until")
        )
        with RetentionStore.from_environment() as store:
            store.delete(id_)
