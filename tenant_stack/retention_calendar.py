"""The retention calendar (offboarding runbook step 9): what each tenant stack retains, until when,
and what the retention purge may delete on a given day. Pure: it reads a stack's exported
resources and the tenant's ledger entries (`providers.retention.ledger`), and decides.

- Each retained resource carries the date it is kept until (`retention_until`, stamped when it
  was kept from the platform's horizon for its class: Pulumi.prod.yaml `retention`).
- A legal hold pauses every timer of the tenant: while one is open, nothing of it is deleted;
  once lifted, each date moves on by the time the tenant was held (whole days, rounded up).
  Holds come from the ledger (`hold`/`release` entries, by source: the spec's
  `lifecycle.legal_hold`, or the `retention hold` command for when legal calls at night).
- The users' Authentik tombstones go last: accounting names users by uid, so a user's record (and
  its uid, reserved fleet-wide) is deleted only once none of the tenant's accounting is left.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from providers.retention.ledger import HOLD, RELEASE, Entry, open_hold_sources

__all__ = [
    "ERASURE",
    "HOLD",
    "ITEMS",
    "PURGED",
    "PURGE_STOPPED",
    "PURGING",
    "RELEASE",
    "SPEC_SOURCE",
    "HoldState",
    "Record",
    "Retained",
    "due",
    "erased_users",
    "hold_state",
    "open_hold_sources",
    "purged_items",
    "retained_in",
    "spec_hold_change",
]

PURGING, PURGED = "purging", "purged"
# What a purge begun did not delete (a hold stopped it): declared again until a purge deletes it.
PURGE_STOPPED = "purge-stopped"
# The items of a purge's entries, comma-separated (an earlier release wrote one `item` each).
ITEMS = "items"
# The source of the hold a spec's `lifecycle.legal_hold` sets, as the ledger records it.
SPEC_SOURCE = "spec"
ERASURE = "erasure-requested"
_DYNAMIC = "pulumi-python:dynamic/"


def _classify(type_: str, outputs: Mapping[str, Any]) -> tuple[str, str] | None:
    """A retained resource's class (the horizon it is kept for) and its name in the calendar (the
    words of `RetentionArgs.kept`, `user:<name>` for a tombstone), by its Pulumi type."""
    if type_ == f"{_DYNAMIC}retention:SlurmArchive":
        return ("logs" if outputs["kind"] == "logs" else "accounting"), str(outputs["kind"])
    if type_ == f"{_DYNAMIC}retention:DirectoryCopy":
        return "copies", f"copy:{outputs['filesystem']}"
    if type_ == f"{_DYNAMIC}weka:UploadedSnapshot":
        return "copies", f"snapshot:{outputs['filesystem']}"
    if type_ == f"{_DYNAMIC}authentik:TenantUser":
        return "identity", f"user:{outputs['username']}"
    return None


@dataclass(frozen=True)
class Retained:
    tenant: str
    item: str  # jobs | steps | associations | logs | copy:<fs> | snapshot:<fs> | user:<name>
    kind: str  # accounting | logs | copies | identity: the horizon it was kept for
    urn: str
    until: date  # the last day it must exist, as kept (before any legal hold)


@dataclass(frozen=True)
class HoldState:
    held_since: datetime | None  # an open hold's start, None when the tenant is not held
    held_by: str
    held_days: int  # the closed holds' time, which every date moves on by

    @property
    def held(self) -> bool:
        return self.held_since is not None

    def until(self, retained: Retained) -> date:
        """The day `retained` is kept until, holds included."""
        return retained.until + timedelta(days=self.held_days)


def retained_in(tenant: str, resources: Iterable[Mapping[str, Any]]) -> list[Retained]:
    """The retained resources of a stack's state (`pulumi stack export`'s resources): protected,
    with a `retention_until`."""
    found = []
    for resource in resources:
        outputs = resource.get("outputs") or {}
        if not resource.get("protect") or not outputs.get("retention_until"):
            continue
        classified = _classify(str(resource.get("type")), outputs)
        if classified is None:
            continue
        kind, item = classified
        until = date.fromisoformat(str(outputs["retention_until"]))
        found.append(Retained(tenant, item, kind, str(resource["urn"]), until))
    return sorted(found, key=lambda r: (r.until, r.item))


def hold_state(entries: Sequence[Entry]) -> HoldState:
    """The tenant's legal hold now, from its ledger's hold and release entries in the order they
    were written: a hold is in force from when it was written, whatever day it says it took
    effect. The days held are measured between the days the entries say, each taken as no
    earlier than the one written before it, so a back-dated entry shortens no hold."""
    open_since: dict[str, Entry] = {}  # by source
    held_from: datetime | None = None  # when the current run of holds (any source) began
    held = timedelta()
    last: datetime | None = None
    for entry in (e for e in entries if e.action in (HOLD, RELEASE)):
        at = entry.at if last is None else max(entry.at, last)
        last = at
        source = entry.details.get("source", "")
        if entry.action == HOLD and source not in open_since:
            if not open_since:
                held_from = at
            open_since[source] = entry
        elif entry.action == RELEASE and source in open_since:
            del open_since[source]
            if not open_since and held_from is not None:
                held += at - held_from
                held_from = None
    days = math.ceil(held / timedelta(days=1))
    if not open_since:
        return HoldState(None, "", days)
    first = next(iter(open_since.values()))
    return HoldState(held_from, first.details.get("by", ""), days)


def spec_hold_change(
    tenant: str, spec_hold: bool, entries: Sequence[Entry], now: datetime
) -> Entry | None:
    """The ledger entry that records a change of the spec's legal_hold, if it changed."""
    held = SPEC_SOURCE in open_hold_sources(entries)
    if spec_hold == held:
        return None
    details = {"source": SPEC_SOURCE, "by": f"tenants/{tenant}.yaml lifecycle.legal_hold"}
    return Entry(tenant, HOLD if spec_hold else RELEASE, now, details)


def purged_items(entries: Iterable[Entry]) -> set[str]:
    """What the purge has deleted (or begun to: a purge cut short is finished by the next run, and
    the program must not declare the item again meanwhile), less what a hold stopped."""
    purged: set[str] = set()
    for entry in entries:
        if entry.action not in (PURGING, PURGED, PURGE_STOPPED):
            continue
        named = entry.details.get(ITEMS, "").split(",") if ITEMS in entry.details else []
        items = {*named, *([entry.details["item"]] if "item" in entry.details else [])}
        if entry.action == PURGE_STOPPED:
            purged -= items
        else:
            purged |= items
    return purged


def erased_users(entries: Iterable[Entry]) -> dict[str, int]:
    """The users whose erasure was requested (and approved): username -> uid. Their files are
    removed from every retained copy, and their Authentik record redacted."""
    requested = (e for e in entries if e.action == ERASURE)
    return {e.details["user"]: int(e.details["uid"]) for e in requested}


@dataclass(frozen=True)
class Record:
    """What the program must know of a tenant's ledger: what the purge deleted (or began to),
    and whose files the erasures took out."""

    purged: frozenset[str] = frozenset()
    erased: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, entries: Sequence[Entry]) -> Record:
        return cls(frozenset(purged_items(entries)), erased_users(entries))


def due(retained: Sequence[Retained], hold: HoldState, today: date) -> list[Retained]:
    """What the purge deletes on `today`, in order: nothing while the tenant is held; else every
    resource kept until before today, the tombstones last and only once no accounting is left."""
    if hold.held:
        return []
    expired = [r for r in retained if hold.until(r) < today and r.kind != "identity"]
    accounting_left = any(r.kind == "accounting" and r not in expired for r in retained)
    tombstones = [
        r
        for r in retained
        if r.kind == "identity" and hold.until(r) < today and not accounting_left
    ]
    return [*sorted(expired, key=lambda r: (hold.until(r), r.item)), *tombstones]
