"""Offboarding step 3: one archive of a tenant's Slurm records (`jobs`, `steps`, `associations`
or `logs`, see `providers.slurm.accounting_export`) in the retention store, at the fixed key
`<tenant>/slurm/<kind>.<ext>` with the metadata `tenant`, `retention-until`, `kind` and `rows`.

The key is fixed, so an `up` killed after the upload and run again writes the same object, not a
second one. An archive is made only from a drained tenant (no job queued or running), so that
the records are final. Reading it back heads the object: an archive deleted or changed behind
the stack's back is drift. Delete refuses until `retention-until` has passed; the program
declares archives protected, so no `destroy` reaches it before the retention purge.
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
from providers.slurm.accounting_export import KINDS, export
from providers.slurm.queue import SlurmQueue
from providers.slurm.settings import Settings as SlurmSettings

__all__ = ["SlurmArchiveProvider"]


def _kind(value: Any) -> str:
    return values.choice(value, KINDS)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


ARCHIVE = Schema(
    kind="Slurm archive",
    fields=(
        Field("tenant", values.name, replaces=True),
        Field("kind", _kind, replaces=True),
        Field("accounts", values.names),
        Field("retention_days", values.count),
        Field("allow_empty", _flag, default=False),
    ),
)


class SlurmArchiveProvider(SchemaProvider):
    schema = ARCHIVE
    error = RetentionStoreError

    def create(self, props: dict[str, Any]) -> CreateResult:
        doing = f"archiving the Slurm {props.get('kind')} of tenant {props.get('tenant')!r}"
        p = self.load(props, doing)
        slurm = SlurmSettings.from_environment()
        transport = slurm.make_transport()
        left = SlurmQueue(transport).jobs(p["accounts"])
        if left:
            raise OffboardingError(
                doing,
                f"{len(left)} jobs of the tenant are still queued or running "
                f"({', '.join(str(job) for job in left[:10])}): the records are not final",
                "complete stage drained first (`pulumi up` at lifecycle.stage drained), then "
                "move to archived; nothing was archived",
            )
        records = export(transport, p["kind"], p["accounts"], slurm.log_files, p["allow_empty"])
        key = tenant_key(p["tenant"], "slurm", f"{p['kind']}.{records.extension}")
        until = retained_until(p["retention_days"])
        metadata = {
            **retention_metadata(p["tenant"], until),
            "kind": p["kind"],
            "rows": str(records.rows),
        }
        with RetentionStore.from_environment() as store:
            store.put(key, records.data, metadata)
            outputs = self._outputs(store, key, p, doing)
        return CreateResult(key, {**outputs, "rows": records.rows})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with RetentionStore.from_environment() as store:
            if store.head(id_) is None:
                return gone()
            return ReadResult(id_, {**props, **self._outputs(store, id_, props, "reading")})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """A new retention period: the same records, stored again with the new date."""
        doing = f"changing the retention of archive {id_!r}"
        p = self.load(news, doing)
        until = retained_until(p["retention_days"])
        with RetentionStore.from_environment() as store:
            found = store.head(id_)
            if found is None or found.metadata is None:
                raise OffboardingError(doing, "the archive is gone from the retention store")
            metadata = {**found.metadata, **retention_metadata(p["tenant"], until)}
            store.put(id_, store.get(id_), metadata)
            outputs = self._outputs(store, id_, p, doing)
        return UpdateResult({**outputs, "rows": olds.get("rows")})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        refuse_while_retained(OffboardingError, f"archive {id_!r}", props.get("retention_until"))
        with RetentionStore.from_environment() as store:
            store.delete(id_)

    @staticmethod
    def _outputs(store: RetentionStore, key: str, p: dict[str, Any], doing: str) -> dict[str, Any]:
        found = store.head(key)
        if found is None:
            raise OffboardingError(doing, f"{store.url(key)} is not in the store after the upload")
        return {
            **{field.key: p.get(field.key) for field in ARCHIVE.fields},
            "key": key,
            "url": store.url(key),
            "etag": found.etag,
            "size": found.size,
            "retention_until": (found.metadata or {}).get(RETENTION_UNTIL),
        }
