"""Contract tests of the retention ledger (providers.retention.ledger) against a versitygw of
their own: entries read back in order, never replaced, and in a bucket made with S3 Object Lock
not deletable either; and the delete gates that read it (holds, a clock moved ahead)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from providers.errors import OffboardingError, RetentionStoreError
from providers.retention.client import RetentionStore
from providers.retention.ledger import (
    CLOCK_AHEAD,
    HOLD,
    LEDGER_PREFIX,
    LOCK_DAYS,
    RELEASE,
    SIGN_OFF,
    Ledger,
    record_sign_off,
    refuse_deletion,
    refuse_unsigned,
    refuse_while_held,
)
from providers.retention.objects import TODAY_VARIABLE
from sandbox.retention_store.service import LEDGER_BUCKET
from tenant_stack import retention_job
from tenant_stack.errors import StackError
from tenant_stack.platform import load_platform
from tenant_stack.retention_calendar import Record
from tests.isolated import ROOT, Gateway, ledger_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with ledger_gateway(tmp_path_factory.mktemp("ledger-sandbox")) as running:
        yield running


@pytest.fixture
def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:8]}"


def test_entries_read_back_in_the_order_they_were_written(gateway: Gateway, tenant: str) -> None:
    day = datetime(2027, 3, 1, tzinfo=UTC)
    with Ledger.open(gateway.env()) as ledger:
        for n, action in enumerate(("hold", "release", "purging", "purged")):
            ledger.append(tenant, action, day + timedelta(days=n), {"by": "Lee", "n": str(n)})
        entries = ledger.entries(tenant)
    assert [(e.action, e.at, e.details["n"]) for e in entries] == [
        ("hold", day, "0"),
        ("release", day + timedelta(days=1), "1"),
        ("purging", day + timedelta(days=2), "2"),
        ("purged", day + timedelta(days=3), "3"),
    ]
    assert all(
        e.recorded is not None and e.key.startswith(f"{LEDGER_PREFIX}/{tenant}/") for e in entries
    )


def test_an_entry_in_a_locked_bucket_can_be_neither_replaced_nor_deleted(
    gateway: Gateway, tenant: str
) -> None:
    env = gateway.env(RETENTION_S3_LEDGER_BUCKET=LEDGER_BUCKET)
    with Ledger.open(env) as ledger:
        entry = ledger.append(tenant, "purged", datetime.now(UTC), {"item": "jobs"})
    with RetentionStore.from_environment(gateway.env(RETENTION_S3_BUCKET=LEDGER_BUCKET)) as store:
        assert store.object_lock_enabled()
        # S3 answers PreconditionFailed (the key is taken); versitygw, AccessDenied (it is locked).
        with pytest.raises(RetentionStoreError, match=r"PreconditionFailed|AccessDenied"):
            store.create(entry.key, b"{}", {})
        raw = store._s3  # the client's own delete hides nothing here: S3 itself must refuse
        retention = raw.get_object_retention(Bucket=LEDGER_BUCKET, Key=entry.key)["Retention"]
        assert retention["Mode"] == "COMPLIANCE"
        assert retention["RetainUntilDate"] > datetime.now(UTC) + timedelta(days=LOCK_DAYS - 1)
        with pytest.raises(ClientError, match="AccessDenied"):
            raw.delete_object(Bucket=LEDGER_BUCKET, Key=entry.key)
    with Ledger.open(env) as ledger:
        assert [e.details for e in ledger.entries(tenant)] == [{"item": "jobs"}]


def test_without_a_ledger_bucket_the_ledger_is_kept_in_the_retention_bucket(
    gateway: Gateway, tenant: str
) -> None:
    with Ledger.open(gateway.env(RETENTION_S3_LEDGER_BUCKET="")) as ledger:
        ledger.append(tenant, "hold", datetime.now(UTC), {"source": "command"})
    with RetentionStore.from_environment(gateway.env()) as store:
        assert not store.object_lock_enabled()
        assert len(store.list(f"{LEDGER_PREFIX}/{tenant}/")) == 1


# --- the delete gates read the ledger at the moment they delete ----------------------------------


@pytest.fixture
def ledger_env(gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process environment names the gateway's ledger, as the engine's does for a gate."""
    for name, value in gateway.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(TODAY_VARIABLE, raising=False)


@pytest.mark.usefixtures("ledger_env")
def test_a_hold_stops_every_deletion_from_the_moment_it_is_written(tenant: str) -> None:
    past = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    refuse_deletion(OffboardingError, tenant, "the jobs archive", past)  # expired, not held
    with Ledger.open() as ledger:
        ledger.append(tenant, HOLD, datetime.now(UTC), {"source": "command", "by": "Lee"})
    with pytest.raises(OffboardingError) as refused:
        refuse_deletion(OffboardingError, tenant, "the jobs archive", past)
    assert f"refused: tenant {tenant} is under legal hold (command)" in str(refused.value)
    assert f"retention release {tenant}" in str(refused.value)
    with pytest.raises(OffboardingError):
        refuse_while_held(OffboardingError, tenant, f"tenant {tenant!r}")  # the stage gate too
    with Ledger.open() as ledger:
        ledger.append(tenant, RELEASE, datetime.now(UTC), {"source": "command", "by": "Lee"})
    refuse_deletion(OffboardingError, tenant, "the jobs archive", past)


@pytest.mark.usefixtures("ledger_env")
def test_a_destroy_goes_only_with_the_sign_off_its_up_wrote_into_the_ledger(tenant: str) -> None:
    """Offboarding step 0's paper trail: the gate reads the sign-off from the ledger, where no
    one rewrites it, not from the stack's state; an `up` run again writes it no second time."""
    signed = {
        "by": "Dana Ops",
        "date": "2027-01-05",
        "ticket": "OPS-1234",
        "confirmation": "escalation",
        "confirmed_by": "Sam Lead",
    }
    with pytest.raises(OffboardingError) as refused:
        refuse_unsigned(OffboardingError, tenant, signed, f"tenant {tenant!r}")
    assert f"the sign-off of ticket OPS-1234 is not in tenant {tenant}'s ledger" in str(
        refused.value
    )
    record_sign_off(tenant, signed)
    record_sign_off(tenant, signed)
    refuse_unsigned(OffboardingError, tenant, signed, f"tenant {tenant!r}")
    with pytest.raises(OffboardingError):  # a state edited to another sign-off
        refuse_unsigned(OffboardingError, tenant, {**signed, "ticket": "OPS-9"}, "x")
    with Ledger.open() as ledger:
        [entry] = ledger.entries(tenant, (SIGN_OFF,))
    assert entry.details == signed


@pytest.mark.usefixtures("ledger_env")
def test_a_clock_moved_ahead_is_believed_only_where_the_ledger_says_who_moved_it(
    tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ahead = datetime.now(UTC).date() + timedelta(days=400)
    until = (ahead - timedelta(days=10)).isoformat()  # expired by that day, not by today's
    monkeypatch.setenv(TODAY_VARIABLE, ahead.isoformat())
    with pytest.raises(OffboardingError) as refused:
        refuse_deletion(OffboardingError, tenant, "the jobs archive", until)
    assert f"{TODAY_VARIABLE} is {ahead}, after today" in str(refused.value)
    with Ledger.open() as ledger:
        ledger.append(
            tenant, CLOCK_AHEAD, datetime.now(UTC), {"today": ahead.isoformat(), "by": "ops"}
        )
    refuse_deletion(OffboardingError, tenant, "the jobs archive", until)


class LegalCallsMidRun:
    """A tenant stack's state with two expired archives, purged by an engine that deletes them
    one after the other (here only from the state), each behind the providers' delete gate; a
    hold is written to the ledger after the first, as legal calling while the purge runs."""

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        expired = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
        self.left = [
            {
                "urn": f"urn:pulumi:{tenant}::gpu-tenants::archive::{kind}",
                "type": "pulumi-python:dynamic/retention:SlurmArchive",
                "protect": True,
                "outputs": {"kind": kind, "retention_until": expired},
            }
            for kind in ("logs", "jobs")
        ]
        self.destroyed: list[str] = []

    def tenants(self) -> list[str]:
        return [self.tenant]

    def resources(self, _stack: str) -> list[dict[str, Any]]:
        return list(self.left)

    def destroy(self, _stack: str, urns: Sequence[str], _env: Mapping[str, str]) -> None:
        refused = []
        for urn in urns:
            try:
                refuse_deletion(OffboardingError, self.tenant, urn, None)
            except OffboardingError as error:
                refused.append(str(error))
                continue
            self.left = [r for r in self.left if r["urn"] != urn]
            self.destroyed.append(urn)
            with Ledger.open() as ledger:
                details = {"source": "command", "by": "Lee"}
                ledger.append(self.tenant, HOLD, datetime.now(UTC), details)
        if refused:
            raise StackError("; ".join(refused))


@pytest.mark.usefixtures("ledger_env")
def test_a_hold_written_during_a_purge_stops_every_deletion_not_begun(
    tenant: str, tmp_path: Path
) -> None:
    text = (ROOT / "tenants" / "tenant-foo.yaml").read_text()
    (tmp_path / f"{tenant}.yaml").write_text(text.replace("foo", tenant.removeprefix("tenant-")))
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    stacks = LegalCallsMidRun(tenant)
    [report] = retention_job.run(
        stacks,  # type: ignore[arg-type]
        tmp_path,
        platform,
        datetime.now(UTC),
        dry_run=False,
    )
    assert report.error == ""
    assert len(stacks.destroyed) == 1  # the first archive; the hold came before the second
    assert report.hold.held
    assert report.hold.held_by == "Lee"
    with Ledger.open() as ledger:
        entries = ledger.entries(tenant)
    assert [e.action for e in entries] == ["purging", "hold", "purged", "purge-stopped"]
    assert [e.details["items"] for e in entries if e.action != "hold"] == [
        "jobs,logs",
        "jobs",
        "logs",
    ]
    # The program declares again what the hold kept, and never what the purge deleted.
    assert Record.of(entries).purged == {"jobs"}
