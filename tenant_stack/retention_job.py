"""The retention job (offboarding runbook step 9), meant for a scheduler: for every tenant stack,
what it retains and until when (`calendar`), and the deletion of what has expired (`run`),
through the engine: the expired resources of a stack are deleted by one `pulumi destroy` that
targets each (and a second for the users' tombstones, once the accounting is gone), their
providers deleting them from the backends and the engine from the state. Legal holds are
set and lifted here too (`hold`, `release`), for when legal calls at night; a tenant's spec may
also hold it (`lifecycle.legal_hold`), and the job records that in the ledger when it sees it.

Every action is written to the tenant's ledger in the retention store before and after it is
done (`purging`, then `purged`, or `purge-stopped` for what a hold kept): a run killed midway
is finished by the next, and the program reads the ledger so that an `up` never declares a
purged resource again.

A hold stops every deletion from the moment it is written: the job reads the ledger again
before each engine run, and the providers' own delete gates read it before each deletion
(`refuse_while_held`), so a hold written while the engine runs stops what it has not begun,
and a `pulumi destroy` run by hand is held as well. A run told a day after today (`--now`, a
rehearsal of the purge) records that day and who ran it in the tenant's ledger before it
deletes anything, since the gates believe a clock moved ahead only when the ledger says who
moved it; a held tenant is skipped whatever the day.
"""

from __future__ import annotations

import getpass
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from providers.errors import BackendError
from providers.retention.client import RetentionStore
from providers.retention.erasure import users_files
from providers.retention.ledger import CLOCK_AHEAD, Entry, Ledger
from providers.retention.objects import TODAY_VARIABLE, tenant_prefix, uploaded_snapshot_prefix
from providers.retention.objects import now as clock
from tenant_stack.errors import StackError, TenantError
from tenant_stack.mapping import ERASED_NAME
from tenant_stack.platform import Platform
from tenant_stack.retention_calendar import (
    ERASURE,
    HOLD,
    ITEMS,
    PURGE_STOPPED,
    PURGED,
    PURGING,
    RELEASE,
    HoldState,
    Retained,
    due,
    erased_users,
    hold_state,
    open_hold_sources,
    retained_in,
    spec_hold_change,
)
from tenant_stack.spec import load_spec
from tenant_stack.stacks import Stacks

__all__ = ["Erasure", "Report", "erase", "hold", "known_tenant", "refuse_ahead", "release", "run"]

COMMAND_SOURCE = "command"
ERASED, REDACTED = "erased", "gdpr-redacted"
# The mark on every object of a tenant one of whose users was erased (its value: the date).
GDPR_REDACTED = "gdpr-redacted"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
NOT_HELD = HoldState(None, "", 0)


@dataclass
class Report:
    """One tenant's part of a run (or of the calendar, with nothing deleted)."""

    tenant: str
    hold: HoldState = NOT_HELD
    retained: list[Retained] = field(default_factory=list)
    due: list[Retained] = field(default_factory=list)
    purged: list[Retained] = field(default_factory=list)
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        hold = self.hold
        return {
            "tenant": self.tenant,
            "held": hold.held,
            "held_since": hold.held_since.isoformat() if hold.held_since else None,
            "held_by": hold.held_by or None,
            "held_days": hold.held_days,
            "retained": [_item(r, hold) for r in self.retained],
            "due": [r.item for r in self.due],
            "purged": [r.item for r in self.purged],
            "error": self.error or None,
        }


def _item(retained: Retained, hold: HoldState) -> dict[str, Any]:
    return {
        "item": retained.item,
        "class": retained.kind,
        "urn": retained.urn,
        "kept_until": retained.until.isoformat(),
        "until": hold.until(retained).isoformat(),
    }


def run(
    stacks: Stacks,
    tenants: Path,
    platform: Platform,
    now: datetime,
    *,
    dry_run: bool,
    only: Sequence[str] = (),
) -> list[Report]:
    """Every tenant stack (or those in `only`): its retained resources, its hold, and unless
    `dry_run` the deletion of what is due. A tenant that fails is reported; the others go on."""
    reports = []
    with Ledger.open() as ledger:
        for tenant in only or stacks.tenants():
            report = Report(tenant)
            try:
                _tenant(report, stacks, ledger, tenants, platform, now, dry_run)
            except (TenantError, BackendError) as error:
                report.error = str(error)
            reports.append(report)
    return reports


def _tenant(
    report: Report,
    stacks: Stacks,
    ledger: Ledger,
    tenants: Path,
    platform: Platform,
    now: datetime,
    dry_run: bool,
) -> None:
    tenant = report.tenant
    # The spec's hold is read before anything is deleted: a tenant whose spec does not load is
    # not purged, since whether legal holds it cannot be told.
    spec_hold = load_spec(tenants, tenant, platform).lifecycle.legal_hold
    entries = ledger.entries(tenant)
    # A hold the spec sets is written here too (a hold is never wrong to record); a release
    # only by the `up` of the spec that lifts it, never by a job run from a stale checkout.
    seen = spec_hold_change(tenant, spec_hold, entries, now)
    if seen is not None and seen.action == HOLD:
        if not dry_run:
            seen = ledger.append(tenant, seen.action, now, seen.details)
        entries = [*entries, seen]
    report.hold = hold_state(entries)
    report.retained = retained_in(tenant, stacks.resources(tenant))
    report.due = due(report.retained, report.hold, now.date())
    if dry_run or not report.due:
        return
    real_today = datetime.now(UTC).date()
    if now.date() > real_today:
        details = {"today": now.date().isoformat(), "real_today": real_today.isoformat()}
        ledger.append(tenant, CLOCK_AHEAD, now, {**details, "by": getpass.getuser()})
    for batch in purge_batches(report.due):
        if not _purge(report, stacks, ledger, batch, now):
            return


def purge_batches(due: Sequence[Retained]) -> list[list[Retained]]:
    """The engine runs of a purge: everything due but the tombstones in one, the tombstones in
    a second, once the accounting that names their uids is gone."""
    kept = [r for r in due if r.kind != "identity"]
    tombstones = [r for r in due if r.kind == "identity"]
    return [batch for batch in (kept, tombstones) if batch]


def _purge(
    report: Report, stacks: Stacks, ledger: Ledger, batch: list[Retained], now: datetime
) -> bool:
    """Deletes `batch` in one `pulumi destroy` with a target each; False when a legal hold
    stopped it. A hold written since the run began stops it here, and one written while the
    engine runs stops every deletion not yet begun (each provider's gate reads the ledger)."""
    tenant = report.tenant
    held = hold_state(ledger.entries(tenant))
    if held.held:
        report.hold = held
        return False
    ledger.append(tenant, PURGING, now, _items(batch))
    failed: StackError | None = None
    try:
        stacks.destroy(tenant, [r.urn for r in batch], {TODAY_VARIABLE: now.date().isoformat()})
    except StackError as error:
        failed = error
    left = {str(r["urn"]) for r in stacks.resources(tenant)}
    gone = [r for r in batch if r.urn not in left]
    stayed = [r for r in batch if r.urn in left]
    if gone:
        ledger.append(tenant, PURGED, now, _items(gone))
        report.purged += gone
    if not stayed:
        return True
    # What is still there was not purged: the program declares it again.
    ledger.append(tenant, PURGE_STOPPED, now, _items(stayed))
    held = hold_state(ledger.entries(tenant))
    if held.held:
        report.hold = held
        return False
    why = f": {failed}" if failed else ""
    raise TenantError(
        f"{', '.join(r.item for r in stayed)} still in the state of stack {tenant} after its "
        f"destroy{why}; run the job again"
    )


def _items(batch: Sequence[Retained]) -> dict[str, str]:
    return {ITEMS: ",".join(r.item for r in batch)}


def known_tenant(tenant: str, tenants: Path, stacks: Stacks) -> None:
    """Raises unless `tenant` has a spec in `tenants` or a stack: a hold or release written for
    a typo would hold nothing, and a ledger entry cannot be taken back."""
    if (tenants / f"{tenant}.yaml").is_file() or tenant in stacks.tenants():
        return
    known = ", ".join(sorted(path.stem for path in tenants.glob("*.yaml"))) or "none"
    raise TenantError(
        f"{tenant!r} is no tenant: it has no spec in {tenants} and no stack (tenants: {known}); "
        "nothing was written"
    )


def hold(tenant: str, by: str, reason: str) -> Entry:
    """Puts `tenant` under legal hold from now (the moment it is written), until `release`."""
    with Ledger.open() as ledger:
        if COMMAND_SOURCE in open_hold_sources(ledger.entries(tenant)):
            raise TenantError(f"{tenant} is already under a legal hold set by this command")
        details = {"source": COMMAND_SOURCE, "by": by, "reason": reason}
        return ledger.append(tenant, HOLD, clock(), details)


def release(tenant: str, by: str) -> Entry:
    """Lifts the hold `hold` set on `tenant`; its timers resume, moved on by the time held."""
    with Ledger.open() as ledger:
        if COMMAND_SOURCE not in open_hold_sources(ledger.entries(tenant)):
            raise TenantError(
                f"{tenant} has no legal hold set by this command to release (a hold in its spec "
                "is lifted by the `up` of a spec setting lifecycle.legal_hold: false)"
            )
        return ledger.append(tenant, RELEASE, clock(), {"source": COMMAND_SOURCE, "by": by})


def refuse_ahead(now: datetime, confirmed: bool) -> None:
    """Raises unless a purge as of `now` is one of today, or `confirmed`: a run told a later day
    deletes for real what is not due yet (a rehearsal of the purge, on a test cluster)."""
    real = datetime.now(UTC).date()
    if now.date() > real and not confirmed:
        raise TenantError(
            f"--now {now.date()} is after today ({real}): a run as of a later day deletes for "
            "real what is not due yet; add --dry-run to see what it would purge, or "
            "--confirm-ahead to delete (a rehearsal of the purge on a test cluster); nothing "
            "was deleted"
        )


def parse_now(value: str | None) -> datetime:
    """`--now`: an ISO date (midnight UTC) or date and time; default: this moment."""
    if not value:
        return datetime.now(UTC)
    try:
        if len(value) == 10:
            return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise TenantError(f"--now {value!r}: give a date (2027-01-31) or a date and time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class Erasure:
    """What `erase` did for one user: the retained copies now without their files."""

    tenant: str
    user: str
    uid: int
    copies: list[str] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "user": self.user,
            "uid": self.uid,
            "copies": self.copies,
            "marked": self.marked,
        }


def erase(
    stacks: Stacks,
    tenants: Path,
    platform: Platform,
    tenant: str,
    user: str,
    *,
    approved_by: str,
    request: str,
    now: datetime,
) -> Erasure:
    """A user's right to erasure, for an offboarded tenant: the request recorded in the ledger,
    then an `up` of the tenant's stack, in which every retained copy is redone without the
    user's files and their Authentik record redacted (the program reads the request from the
    ledger), checked; then every object of the tenant in the retention store marked."""
    spec = load_spec(tenants, tenant, platform)
    found = next((u for u in spec.users if u.username == user), None)
    if found is None:
        known = ", ".join(u.username for u in spec.users)
        raise TenantError(f"{user!r} is not a user of {tenant} (tenants/{tenant}.yaml: {known})")
    if any(r["type"] == NAMESPACE_TYPE for r in stacks.resources(tenant)):
        raise TenantError(
            f"{tenant} is not offboarded (its stack still holds its namespace): this command "
            "erases a user from what offboarding kept; a live tenant's filesystems hold the "
            "user's files too, and erasing them there is not built yet (remove the files by "
            "hand, then run this once the tenant is offboarded)"
        )
    done = Erasure(tenant, user, found.uid)
    with RetentionStore.from_environment() as store, Ledger.open() as ledger:
        if user not in erased_users(ledger.entries(tenant)):
            details = {"user": user, "uid": str(found.uid), "request": request, "by": approved_by}
            ledger.append(tenant, ERASURE, now, details)
        stacks.up(tenant)
        resources = stacks.resources(tenant)
        copies = _check_erased(store, tenant, resources, user, found.uid)
        done.copies = sorted(copies)
        done.marked = _mark_redacted(store, tenant, resources, now)
        for item in done.copies:
            ledger.append(tenant, ERASED, now, {"user": user, "item": item, **copies[item]})
        ledger.append(tenant, REDACTED, now, {"user": user, "objects": str(len(done.marked))})
    return done


def _check_erased(
    store: RetentionStore, tenant: str, resources: list[dict[str, Any]], user: str, uid: int
) -> dict[str, dict[str, str]]:
    """The retained copies the `up` redid without `user`, each with what the ledger records of
    it (a directory copy's digests before and after); an error for one it did not redo."""
    copies: dict[str, dict[str, str]] = {}
    for resource in resources:
        outputs = resource.get("outputs") or {}
        kind = str(resource.get("type")).rsplit(":", 1)[-1]
        redacted = outputs.get("name") == ERASED_NAME and not outputs.get("email")
        if kind == "TenantUser" and outputs.get("username") == user and not redacted:
            raise TenantError(f"the Authentik record of {user} is not redacted after the up")
        if kind not in ("DirectoryCopy", "UploadedSnapshot"):
            continue
        item = str(outputs.get("key") or outputs.get("locator"))
        if user not in (outputs.get("erased") or {}):
            raise TenantError(f"{item} still keeps {user}'s files after the up")
        if kind == "DirectoryCopy":
            left = users_files(store.chunks(item), {user: uid})
            if left:
                raise TenantError(f"{item} still holds {user}'s files: {', '.join(left[:5])}")
            before, after = outputs.get("sha256_before_erasure"), outputs.get("sha256")
            copies[item] = {"sha256-before": str(before), "sha256-after": str(after)}
        else:
            copies[item] = {}
    return copies


def _mark_redacted(
    store: RetentionStore, tenant: str, resources: list[dict[str, Any]], now: datetime
) -> list[str]:
    """Every object of the tenant in the store (its prefix, and its uploaded snapshots) marked
    `gdpr-redacted` with the date."""
    keys = [info.key for info in store.list(tenant_prefix(tenant))]
    for resource in resources:
        locator = (resource.get("outputs") or {}).get("locator")
        if str(resource.get("type")).endswith(":UploadedSnapshot") and locator:
            keys += [info.key for info in store.list(uploaded_snapshot_prefix(str(locator)))]
    for key in keys:
        store.mark(key, {GDPR_REDACTED: now.date().isoformat()})
    return keys
