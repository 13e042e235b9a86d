"""Contract tests of the retention store client (providers.retention) against the sandbox's real
S3 gateway, versitygw, run alone: the module starts only the `retention-store` service, with its
state in a pytest tmp dir and on a free loopback port, so it neither needs nor touches a running
sandbox. Every test writes under a tenant slug of its own."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from providers.call_log import VARIABLE as CALL_LOG
from providers.call_log import read_log
from providers.errors import RetentionStoreError
from providers.retention import client as client_module
from providers.retention.client import RetentionStore
from providers.retention.objects import (
    RETENTION_UNTIL,
    TENANT,
    retention_metadata,
    tenant_key,
    tenant_prefix,
)
from sandbox.retention_store.service import (
    BUCKET,
    access_key_file,
    data_dir,
    secret_key_file,
    seed_bucket,
)
from tests.isolated import Gateway, start_gateway, stop_gateway

KEEP_UNTIL = date(2033, 6, 30)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = start_gateway(tmp_path_factory.mktemp("retention-sandbox"))
    try:
        yield running
    finally:
        stop_gateway(running)


@pytest.fixture
def store(gateway: Gateway) -> Iterator[RetentionStore]:
    with RetentionStore.from_environment(gateway.env()) as retention:
        yield retention


@pytest.fixture
def tenant() -> str:
    return f"tenant-{uuid.uuid4().hex[:8]}"


def test_an_archive_round_trips_with_its_metadata(store: RetentionStore, tenant: str) -> None:
    key = tenant_key(tenant, "slurm", "accounting.tar.gz")
    data = b"cluster|account|user\n" * 100
    before = datetime.now(UTC) - timedelta(seconds=2)
    etag = store.put(key, data, retention_metadata(tenant, KEEP_UNTIL))
    assert etag == hashlib.md5(data).hexdigest()
    found = store.head(key)
    assert found is not None
    assert (found.key, found.size, found.etag) == (key, len(data), etag)
    assert found.metadata == {TENANT: tenant, RETENTION_UNTIL: "2033-06-30"}
    assert found.last_modified.tzinfo is UTC
    assert before <= found.last_modified <= datetime.now(UTC) + timedelta(seconds=2)
    assert store.get(key) == data


def test_a_file_goes_up_in_parts_and_comes_back_whole(
    store: RetentionStore, tenant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Above the threshold a file is sent as a multipart upload; 5 MiB is S3's smallest part.
    monkeypatch.setattr(client_module, "MULTIPART_THRESHOLD", 5 * 2**20)
    snapshot = tmp_path / "snapshot.tar"
    snapshot.write_bytes(uuid.uuid4().bytes * (11 * 2**20 // 16))
    key = tenant_key(tenant, "snapshots", "home.tar")
    etag = store.put(key, snapshot, retention_metadata(tenant, KEEP_UNTIL))
    assert "-" in etag, f"{etag} is not a multipart upload's ETag"
    found = store.head(key)
    assert found is not None
    assert (found.size, found.etag) == (snapshot.stat().st_size, etag)
    assert found.metadata == {TENANT: tenant, RETENTION_UNTIL: "2033-06-30"}
    copy = tmp_path / "copy.tar"
    store.download(key, copy)
    assert copy.read_bytes() == snapshot.read_bytes()


def test_a_listing_keeps_to_the_tenants_prefix(store: RetentionStore, tenant: str) -> None:
    # tenant-x and tenant-xy: the prefix's trailing slash keeps one from listing the other.
    neighbour = f"{tenant}y"
    keys = [tenant_key(tenant, "snapshots", name) for name in ("b", "a")] + [
        tenant_key(tenant, "slurm", "accounting.tar.gz")
    ]
    for key in [*keys, tenant_key(neighbour, "slurm", "accounting.tar.gz")]:
        store.put(key, key.encode(), retention_metadata(key.split("/")[0], KEEP_UNTIL))
    listed = store.list(tenant_prefix(tenant))
    assert [found.key for found in listed] == sorted(keys)
    assert [found.size for found in listed] == [len(key) for key in sorted(keys)]
    assert all(found.metadata is None for found in listed)
    assert [found.key for found in store.list(f"{tenant}/snapshots/")] == sorted(keys[:2])
    assert store.list(tenant_prefix(f"{tenant}-none")) == []


def test_a_missing_key_heads_as_none_and_fails_a_read_naming_it(
    store: RetentionStore, tenant: str, tmp_path: Path
) -> None:
    key = tenant_key(tenant, "never-stored")
    assert store.head(key) is None
    with pytest.raises(RetentionStoreError) as caught:
        store.get(key)
    assert f"s3://{BUCKET}/{key}" in str(caught.value)
    assert "NoSuchKey" in caught.value.backend_says
    with pytest.raises(RetentionStoreError, match=f"s3://{BUCKET}/{key}"):
        store.download(key, tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_a_missing_bucket_is_named_not_taken_for_a_missing_key(
    gateway: Gateway, tenant: str
) -> None:
    env = gateway.env(RETENTION_S3_BUCKET="no-such-bucket")
    with RetentionStore.from_environment(env) as s:
        reads = (lambda: s.head(tenant_key(tenant, "a")), lambda: s.list(tenant_prefix(tenant)))
        for call in reads:
            with pytest.raises(RetentionStoreError, match="NoSuchBucket") as caught:
                call()
            assert "s3://no-such-bucket/" in str(caught.value)
            assert "RETENTION_S3_BUCKET" in caught.value.next_step
        with pytest.raises(RetentionStoreError, match=r"storing s3://no-such-bucket/tenant-"):
            s.put(tenant_key(tenant, "a"), b"", retention_metadata(tenant, KEEP_UNTIL))


def test_a_wrong_secret_is_refused_and_never_quoted(gateway: Gateway, tenant: str) -> None:
    wrong = "Wr0ng-secret-for-this-test"
    env = gateway.env(RETENTION_S3_SECRET_KEY=wrong)
    with RetentionStore.from_environment(env) as s, pytest.raises(RetentionStoreError) as caught:
        s.put(tenant_key(tenant, "a"), b"x", retention_metadata(tenant, KEEP_UNTIL))
    assert "SignatureDoesNotMatch" in caught.value.backend_says
    assert "RETENTION_S3_SECRET_KEY" in caught.value.next_step
    real = secret_key_file(gateway.state_dir).read_text().strip()
    assert wrong not in str(caught.value)
    assert real not in str(caught.value)


def test_delete_removes_and_is_safe_to_repeat(store: RetentionStore, tenant: str) -> None:
    key = tenant_key(tenant, "slurm", "accounting.tar.gz")
    store.put(key, b"x", retention_metadata(tenant, KEEP_UNTIL))
    store.delete(key)
    assert store.head(key) is None
    store.delete(key)


def test_every_request_is_in_the_call_log(
    gateway: Gateway, tenant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG, str(log))
    key = tenant_key(tenant, "a")
    with RetentionStore.from_environment(gateway.env()) as s:
        s.put(key, b"x", retention_metadata(tenant, KEEP_UNTIL))
        assert s.head(tenant_key(tenant, "missing")) is None
    calls = [(c.backend, c.call) for c in read_log(log)]
    assert calls == [
        ("retention", f"PUT /{BUCKET}/{key}"),
        ("retention", f"HEAD /{BUCKET}/{tenant}/missing"),
        ("retention", f"HEAD /{BUCKET}"),
    ]


def test_a_restart_keeps_the_credentials_and_the_archives(
    gateway: Gateway, store: RetentionStore, tenant: str
) -> None:
    key = tenant_key(tenant, "slurm", "accounting.tar.gz")
    store.put(key, b"kept", retention_metadata(tenant, KEEP_UNTIL))
    files = (access_key_file(gateway.state_dir), secret_key_file(gateway.state_dir))
    credentials = [path.read_text() for path in files]
    pid = gateway.supervisor.pid(gateway.service.name)
    gateway.supervisor.stop(gateway.service)
    assert gateway.supervisor.start(gateway.service)
    assert gateway.supervisor.pid(gateway.service.name) not in (None, pid)
    assert not seed_bucket(gateway.state_dir, gateway.port)
    assert [path.read_text() for path in files] == credentials
    assert store.get(key) == b"kept"
    # versitygw's posix backend keeps an object as a plain file under its bucket's directory.
    assert (data_dir(gateway.state_dir) / BUCKET / key).read_bytes() == b"kept"


def test_the_secret_is_on_no_command_line_and_the_files_are_private(gateway: Gateway) -> None:
    pid = gateway.supervisor.pid(gateway.service.name)
    assert pid is not None
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert Path(argv[0].decode()).name == "versitygw"
    secret = secret_key_file(gateway.state_dir).read_text().strip().encode()
    assert all(secret not in arg for arg in argv)
    for path in (access_key_file(gateway.state_dir), secret_key_file(gateway.state_dir)):
        assert path.stat().st_mode & 0o777 == 0o600
