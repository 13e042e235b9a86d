"""Contract tests of the retention ledger (providers.retention.ledger) against a versitygw of
their own: entries read back in order, never replaced, and in a bucket made with S3 Object Lock
not deletable either."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from botocore.exceptions import ClientError

from providers.errors import RetentionStoreError
from providers.retention.client import RetentionStore
from providers.retention.ledger import LEDGER_PREFIX, LOCK_DAYS, Ledger
from sandbox.retention_store.service import LEDGER_BUCKET, seed_bucket
from tests.isolated import Gateway, start_gateway, stop_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = start_gateway(tmp_path_factory.mktemp("ledger-sandbox"))
    assert seed_bucket(running.state_dir, running.port, LEDGER_BUCKET, object_lock=True)
    try:
        yield running
    finally:
        stop_gateway(running)


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
