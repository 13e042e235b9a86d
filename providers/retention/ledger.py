"""The retention ledger: what was done to a tenant's retained data, and by whom, kept in the
retention store, one JSON object per entry at `_ledger/<tenant>/<recorded>-<nonce>.json`.

An entry is created with a conditional PUT (`RetentionStore.create`), so no entry is ever
replaced, and nothing here deletes one: a rerun after a crash appends, it never rewrites. In a
bucket made with S3 Object Lock (RETENTION_S3_LEDGER_BUCKET) each entry is also locked in
COMPLIANCE mode for LOCK_DAYS: not even the store's administrator can delete it before then. The
key begins with the time it was written, so a listing reads the ledger in order, and that order
is the one that counts: a hold is in force from when it is written, whatever day it says. Each
entry also says when its action took effect (`at`): the retention job may be told what day it is
(`--now`), and the days a hold lasted are measured in that time.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from providers.errors import BackendError, RetentionStoreError
from providers.retention.client import RetentionStore
from providers.retention.objects import (
    LEDGER_PREFIX,
    TENANT,
    TODAY_VARIABLE,
    refuse_while_retained,
    tenant_prefix,
    today,
)
from providers.retention.settings import Settings

__all__ = [
    "CLOCK_AHEAD",
    "HOLD",
    "LEDGER_PREFIX",
    "LOCK_DAYS",
    "RELEASE",
    "SIGN_OFF",
    "Entry",
    "Ledger",
    "open_hold_sources",
    "record_sign_off",
    "refuse_deletion",
    "refuse_unsigned",
    "refuse_while_held",
]

# How long Object Lock keeps an entry from deletion: longer than anything the ledger speaks of
# is kept (accounting, 7 years), so the record of a purge outlives what was purged.
LOCK_DAYS = 10 * 365
_ACTION = "ledger-action"
# A legal hold and its release, each with its `source` (the spec, or the `retention hold` command).
HOLD, RELEASE = "hold", "release"
# A retention run told a day after today (`--now`, a rehearsal of the purge): the delete gates
# believe RETENTION_TODAY past today only for a tenant whose ledger records that day and who ran it.
CLOCK_AHEAD = "clock-ahead"
# Stage destroy's sign-off, naming who confirmed for the customer or who gave the internal
# escalation sign-off instead (offboarding step 0's paper trail): written by the `up` that applies
# the stage, and read by the delete gate, so that no destroy goes without it on record.
SIGN_OFF = "sign-off"


@dataclass(frozen=True)
class Entry:
    tenant: str
    action: str  # such as hold, release, purging, purged
    at: datetime  # when the action took effect (UTC)
    details: Mapping[str, str] = field(default_factory=dict)
    recorded: datetime | None = None  # when it was written, by the writer's clock
    key: str = ""

    def as_json(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "action": self.action,
            "at": self.at.isoformat(),
            "recorded": self.recorded.isoformat() if self.recorded else None,
            "details": dict(self.details),
        }


class Ledger:
    """The ledger in `store`'s bucket."""

    def __init__(self, store: RetentionStore) -> None:
        self._store = store
        self._locked: bool | None = None  # whether the bucket has Object Lock, once asked

    @classmethod
    @contextmanager
    def open(cls, env: Mapping[str, str] | None = None) -> Iterator[Ledger]:
        """The ledger the environment names: RETENTION_S3_LEDGER_BUCKET, else the retention
        store's own bucket (`settings`)."""
        with RetentionStore(Settings.from_environment(env).of_ledger()) as store:
            yield cls(store)

    def append(
        self, tenant: str, action: str, at: datetime, details: Mapping[str, str] | None = None
    ) -> Entry:
        recorded = datetime.now(UTC)
        key = (
            f"{LEDGER_PREFIX}/{tenant_prefix(tenant)}"
            f"{recorded.strftime('%Y%m%dT%H%M%S.%fZ')}-{uuid.uuid4().hex[:8]}-{action}.json"
        )
        entry = Entry(tenant, action, at.astimezone(UTC), dict(details or {}), recorded, key)
        body = json.dumps(entry.as_json(), sort_keys=True).encode()
        if self._locked is None:
            self._locked = self._store.object_lock_enabled()
        until = recorded + timedelta(days=LOCK_DAYS) if self._locked else None
        self._store.create(key, body, {TENANT: tenant, _ACTION: action}, locked_until=until)
        return entry

    def entries(self, tenant: str, actions: Collection[str] = ()) -> list[Entry]:
        """Every entry of `tenant` (or only those of `actions`, told by their keys' names,
        before any is read), in the order they were written."""
        prefix = f"{LEDGER_PREFIX}/{tenant_prefix(tenant)}"
        keys = [info.key for info in self._store.list(prefix)]
        if actions:
            keys = [k for k in keys if any(k.endswith(f"-{action}.json") for action in actions)]
        return [self._read(key) for key in keys]

    def _read(self, key: str) -> Entry:
        try:
            data = json.loads(self._store.get(key))
            return Entry(
                tenant=str(data["tenant"]),
                action=str(data["action"]),
                at=datetime.fromisoformat(data["at"]),
                details={str(k): str(v) for k, v in (data.get("details") or {}).items()},
                recorded=datetime.fromisoformat(data["recorded"]) if data.get("recorded") else None,
                key=key,
            )
        except (ValueError, KeyError, TypeError) as error:
            raise RetentionStoreError(
                f"reading the ledger entry {self._store.url(key)}",
                f"it is not a ledger entry: {error}",
                "the ledger is written by this program only; find out who wrote this object",
            ) from None


def open_hold_sources(entries: Sequence[Entry]) -> set[str]:
    """The sources whose last hold entry, in the order written, is a hold, not a release."""
    state: dict[str, str] = {}
    for entry in (e for e in entries if e.action in (HOLD, RELEASE)):
        state[entry.details.get("source", "")] = entry.action
    return {source for source, action in state.items() if action == HOLD}


def refuse_while_held(error: type[BackendError], tenant: str, what: str) -> None:
    """Raises `error` if `tenant` is under legal hold now, as its ledger says at this moment, or
    if RETENTION_TODAY names a day after today that no retention run recorded for `tenant`: the
    gate of every deletion of a tenant's data, whoever drives the engine."""
    # Read at every deletion, so only the entries it weighs: a big tenant's purge runs hundreds.
    with Ledger.open() as ledger:
        entries = ledger.entries(tenant, (HOLD, RELEASE, CLOCK_AHEAD))
    doing = f"deleting {what}"
    held = sorted(open_hold_sources(entries))
    if held:
        raise error(
            doing,
            f"refused: tenant {tenant} is under legal hold ({', '.join(held)}), and nothing of "
            "it is deleted while it is",
            "nothing was deleted; legal lifts the hold (`gpu-tenants retention "
            f"release {tenant}`, or lifecycle.legal_hold: false in its spec)",
        )
    named, real = today(), datetime.now(UTC).date()
    recorded = {e.details.get("today") for e in entries if e.action == CLOCK_AHEAD}
    if named > real and named.isoformat() not in recorded:
        raise error(
            doing,
            f"refused: {TODAY_VARIABLE} is {named}, after today ({real}), and no retention run "
            f"recorded that day in tenant {tenant}'s ledger",
            "run the purge with `gpu-tenants retention run --now DATE`, which "
            "records who moved the clock; nothing was deleted",
        )


def record_sign_off(tenant: str, sign_off: Mapping[str, str]) -> None:
    """Writes `sign_off` into `tenant`'s ledger once: an `up` run again with it adds nothing."""
    with Ledger.open() as ledger:
        if not _holds(ledger, tenant, sign_off):
            ledger.append(tenant, SIGN_OFF, datetime.now(UTC), sign_off)


def refuse_unsigned(
    error: type[BackendError], tenant: str, sign_off: Mapping[str, str] | None, what: str
) -> None:
    """Raises `error` unless `tenant`'s ledger holds `sign_off`, the one the last `up` applied."""
    if sign_off is not None:
        with Ledger.open() as ledger:
            if _holds(ledger, tenant, sign_off):
                return
    applied = (
        f"the sign-off of ticket {sign_off.get('ticket')} is not in tenant {tenant}'s ledger"
        if sign_off is not None
        else "the last `up` recorded no sign-off naming who confirmed for the customer"
    )
    raise error(
        f"deleting {what}",
        f"refused: {applied}, and nothing of a tenant is deleted without that paper trail "
        "(offboarding step 0)",
        "set lifecycle.sign_off (by, date, ticket, confirmation) at stage destroy and run "
        "`pulumi up`, which records it; nothing was deleted",
    )


def _holds(ledger: Ledger, tenant: str, sign_off: Mapping[str, str]) -> bool:
    return any(entry.details == dict(sign_off) for entry in ledger.entries(tenant, (SIGN_OFF,)))


def refuse_deletion(error: type[BackendError], tenant: str, what: str, until: str | None) -> None:
    """The retention purge's gate: `what` (kept until `until`) is deleted only once that date
    has passed and while `tenant` is not held (`refuse_while_held`)."""
    refuse_while_retained(error, what, until)
    refuse_while_held(error, tenant, what)
