"""What every object offboarding keeps in the retention store has in common, written once: put at
a fixed key (an `up` killed after the upload writes the same object again, never a second) with
the `tenant` and `retention-until` metadata, verified by reading its size back; read back by a
head (an object deleted or changed behind the stack's back is drift); a new retention period
stored as the same content with the new date; deleted only after `retention-until`, by the
retention purge (the program declares these resources protected).

A subclass says what to keep, as `content` held in memory (a Slurm archive), or by storing it
itself (`keep` and `keep_again`: a directory's copy, which streams).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import SchemaProvider, gone
from providers.errors import OffboardingError, RetentionStoreError
from providers.retention.client import RetentionStore
from providers.retention.ledger import refuse_deletion
from providers.retention.objects import (
    RETENTION_UNTIL,
    kept_until,
    retained_until,
    retention_metadata,
)

__all__ = ["Content", "KeptObjectProvider", "Stored"]


@dataclass(frozen=True)
class Content:
    key: str
    data: bytes
    metadata: Mapping[str, str] = field(default_factory=dict)  # beside tenant, retention-until
    outputs: Mapping[str, Any] = field(default_factory=dict)  # what else the outputs record


@dataclass(frozen=True)
class Stored:
    """What was stored, verified: its key and size, and what else the outputs record."""

    key: str
    size: int
    outputs: Mapping[str, Any] = field(default_factory=dict)


class KeptObjectProvider(SchemaProvider):
    """A subclass's schema has `tenant` and `retention_days`; it says what to keep (`content`)."""

    error = RetentionStoreError
    what = "kept object"
    # Outputs read back from the object's metadata (output -> metadata name), besides its size.
    read_back: ClassVar[Mapping[str, str]] = {}

    def content(self, p: Mapping[str, Any], doing: str) -> Content:
        raise NotImplementedError

    def doing(self, props: Mapping[str, Any]) -> str:
        return f"keeping the {self.what} of tenant {props.get('tenant')!r}"

    def keep(
        self, store: RetentionStore, p: Mapping[str, Any], metadata: Mapping[str, str], doing: str
    ) -> Stored:
        """Stores the `content` with `metadata` (tenant, retention-until) added to its own."""
        kept = self.content(p, doing)
        _put_verified(store, kept.key, kept.data, {**metadata, **kept.metadata}, doing)
        return Stored(kept.key, len(kept.data), kept.outputs)

    def keep_again(
        self,
        store: RetentionStore,
        key: str,
        olds: Mapping[str, Any],
        p: Mapping[str, Any],
        metadata: Mapping[str, str],
        doing: str,
    ) -> Stored:
        """Stores what `key` holds again with `metadata`, the whole of what it carries now."""
        data = store.get(key)
        _put_verified(store, key, data, metadata, doing)
        return Stored(key, len(data))

    def create(self, props: dict[str, Any]) -> CreateResult:
        doing = self.doing(props)
        p = self.load(props, doing)
        until = retained_until(p["retention_days"])
        with RetentionStore.from_environment() as store:
            kept = self.keep(store, p, retention_metadata(p["tenant"], until), doing)
            url = store.url(kept.key)
        outputs = {
            **p,
            **kept.outputs,
            "key": kept.key,
            "url": url,
            "size": kept.size,
            "retention_until": str(until),
        }
        return CreateResult(kept.key, outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with RetentionStore.from_environment() as store:
            found = store.head(id_)
        if found is None:
            return gone()
        metadata = found.metadata or {}
        until = metadata.get(RETENTION_UNTIL, props.get("retention_until"))
        read = {output: metadata.get(name, "") for output, name in self.read_back.items()}
        return ReadResult(id_, {**props, **read, "size": found.size, "retention_until": until})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """The content stored again (`keep_again`), with the new retention period if it
        changed; otherwise the date it was kept until stays."""
        doing = f"updating {self.what} {id_!r}"
        p = self.load(news, doing)
        until = kept_until(olds, p["retention_days"])
        with RetentionStore.from_environment() as store:
            found = store.head(id_)
            if found is None or found.metadata is None:
                raise OffboardingError(doing, f"{store.url(id_)} is gone from the retention store")
            metadata = {**found.metadata, RETENTION_UNTIL: until}
            kept = self.keep_again(store, id_, olds, p, metadata, doing)
        outputs = {**olds, **p, **kept.outputs, "retention_until": until, "size": kept.size}
        return UpdateResult(outputs)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        refuse_deletion(
            OffboardingError,
            props["tenant"],
            f"the {self.what} {id_!r}",
            props.get("retention_until"),
        )
        with RetentionStore.from_environment() as store:
            store.delete(id_)


def _put_verified(
    store: RetentionStore, key: str, data: bytes, metadata: Mapping[str, str], doing: str
) -> None:
    """Stores `data` at `key`, then reads its size back."""
    store.put(key, data, metadata)
    found = store.head(key)
    if found is None or found.size != len(data):
        raise OffboardingError(doing, f"{store.url(key)} does not hold the upload")
