"""Contract tests of the Weka client's snapshot and Snap-To-Object calls (providers.weka.client)
against the Weka emulator, with its object store bucket in a retention store (versitygw), both
started alone for this module in tmp dirs on free ports: they neither need nor touch a running
sandbox. What offboarding and a restore do, through the client: snapshot, attach, upload, read
the upload back from the store, delete the filesystem, make a new one from the locator."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from providers.errors import WekaError
from providers.retention.client import RetentionStore
from providers.retention.objects import uploaded_snapshot_prefix
from providers.retention.settings import Settings as StoreSettings
from providers.weka.client import WekaClient
from providers.weka.settings import Credentials
from sandbox.weka.object_store import DEFAULT_NAME as OBS_BUCKET
from sandbox.weka.object_store import ObjectStore
from tests.isolated import (
    Emulator,
    Gateway,
    self_signed_certificate,
    start_emulator,
    start_gateway,
    stop_emulator,
    stop_gateway,
)

ADMIN_PASSWORD = "Emulat0r-Admin"
ORG_PASSWORD = "Tenant-Passw0rd"
GB = 10**9


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = start_gateway(tmp_path_factory.mktemp("retention"))
    try:
        yield running
    finally:
        stop_gateway(running)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory, gateway: Gateway) -> Iterator[Emulator]:
    workdir = tmp_path_factory.mktemp("weka")
    (workdir / "admin-password").write_text(ADMIN_PASSWORD + "\n")
    tls = self_signed_certificate(workdir)
    # Long enough that the few requests a test makes between an upload and its wait all see
    # the upload unfinished, on a loaded machine too.
    running = start_emulator(workdir, tls=tls, object_store=gateway.env(), settle_seconds=0.5)
    yield running
    stop_emulator(running)


@pytest.fixture
def store(gateway: Gateway) -> Iterator[RetentionStore]:
    with RetentionStore.from_environment(gateway.env()) as retention:
        yield retention


@dataclass(frozen=True)
class Org:
    name: str
    client: WekaClient
    mount: Path

    def fs_mount(self, fs: str) -> Path:
        return self.mount / fs


@pytest.fixture
def org(emulator: Emulator) -> Iterator[Org]:
    """A tenant's organization and a client logged in as its admin."""
    name = f"tenant-{uuid.uuid4().hex[:8]}"
    admin = WekaClient(
        emulator.base_url, Credentials("admin", ADMIN_PASSWORD), verify=emulator.verify
    )
    with admin:
        admin.create_organization(name, "orgadmin", ORG_PASSWORD, 0, 0)
    client = WekaClient(
        emulator.base_url, Credentials("orgadmin", ORG_PASSWORD, name), verify=emulator.verify
    )
    with client:
        yield Org(name, client, emulator.mount_root / name)


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


def write_home(mount: Path) -> None:
    """What a tenant leaves in a strictly isolated home filesystem: root:G 0750 at the top,
    alice's directory hers and setgid, her files."""
    os.chown(mount, 0, 4001)
    os.chmod(mount, 0o750)
    alice = mount / "alice"
    (alice / "results").mkdir(parents=True)
    (alice / "results" / "run-1.csv").write_text("epoch,loss\n1,0.5\n")
    (alice / "latest").symlink_to("results/run-1.csv")
    for path in (alice, alice / "results", alice / "results" / "run-1.csv"):
        os.chown(path, 2001, 4001)
    os.chmod(alice, 0o2700)


def test_an_uploaded_snapshot_outlives_its_filesystem_and_restores_it(
    org: Org, store: RetentionStore, gateway: Gateway
) -> None:
    weka = org.client
    fs = weka.create_filesystem("home", "default", 100 * GB, 100 * GB)
    write_home(org.fs_mount("home"))
    snap = weka.create_snapshot(fs.uid, "offboard", access_point="offboard")
    assert (snap.filesystem, snap.filesystem_uid, snap.access_point) == ("home", fs.uid, "offboard")
    assert (snap.locator, snap.uploaded) == ("", False)
    # Written after the snapshot: neither in its copy nor in the upload.
    (org.fs_mount("home") / "alice" / "late").write_text("after the snapshot")

    attached = weka.attach_object_store(fs.uid, OBS_BUCKET)
    assert [(b.name, b.mode) for b in attached.object_stores] == [(OBS_BUCKET, "WRITABLE")]
    assert weka.attach_object_store(fs.uid, OBS_BUCKET) == attached  # once only

    upload = weka.upload_snapshot(snap.uid)
    assert upload.snapshot_uid == snap.uid
    assert upload.locator.startswith(upload.locator.split("/")[0] + "/d/s/")
    assert weka.upload_snapshot(snap.uid) == upload  # a rerun uploads nothing
    # The cluster answers at once and uploads in the background, as the real one does: the
    # bucket does not answer for the locator until the upload is SYNCHRONIZED.
    uploading = weka.get_snapshot(snap.uid)
    assert uploading is not None
    assert (uploading.stow_status, uploading.uploaded) == ("UPLOADING", False)
    with pytest.raises(WekaError, match="is not synchronized yet"):
        weka.locator_info(OBS_BUCKET, upload.locator)
    now = weka.wait_uploaded(snap.uid)
    assert (now.locator, now.stow_status, now.uploaded) == (upload.locator, "SYNCHRONIZED", True)
    assert [s.uid for s in weka.list_snapshots("home")] == [snap.uid]
    assert weka.find_snapshot("home", "offboard") == now

    # The bucket holds the snapshot's files as they were, with their owners (read back as the
    # emulated cluster reads its own objects), under the prefix the product derives from the
    # locator.
    assert store.list(uploaded_snapshot_prefix(upload.locator))
    bucket = ObjectStore(OBS_BUCKET, StoreSettings.from_environment(gateway.env()))
    data = b"".join(bucket.data(upload.locator))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = set(tar.getnames())
        run = tar.getmember("./alice/results/run-1.csv")
        assert (run.uid, run.gid) == (2001, 4001)
    assert {"./alice", "./alice/latest", "./alice/results/run-1.csv"} <= names
    assert "./alice/late" not in names

    weka.delete_filesystem(fs.uid, "home")
    assert weka.get_filesystem(fs.uid) is None
    assert weka.get_snapshot(snap.uid) is None  # it lived in the filesystem
    assert weka.list_snapshots("home") == []
    assert store.list(uploaded_snapshot_prefix(upload.locator))

    info = weka.locator_info(OBS_BUCKET, upload.locator)
    assert (info.fs_name, info.snapshot_name, info.access_point) == ("home", "offboard", "offboard")
    restored = weka.create_filesystem_from_locator(
        "home", "default", 100 * GB, 100 * GB, obs_name=OBS_BUCKET, locator=upload.locator
    )
    assert restored.uid != fs.uid
    assert [b.name for b in restored.object_stores] == [OBS_BUCKET]
    home = org.fs_mount("home")
    assert owner_and_mode(home) == (0, 4001, 0o750)
    assert owner_and_mode(home / "alice") == (2001, 4001, 0o2700)
    assert (home / "alice" / "results" / "run-1.csv").read_text() == "epoch,loss\n1,0.5\n"
    assert owner_and_mode(home / "alice" / "results" / "run-1.csv")[:2] == (2001, 4001)
    assert os.readlink(home / "alice" / "latest") == "results/run-1.csv"
    assert not (home / "alice" / "late").exists()
    kept = weka.find_snapshot("home", "offboard")
    assert kept is not None
    assert (kept.filesystem_uid, kept.locator) == (restored.uid, upload.locator)
    weka.delete_filesystem(restored.uid, "home")


def test_what_the_cluster_refuses_reads_as_the_next_step(org: Org) -> None:
    weka = org.client
    fs = weka.create_filesystem("scratch", "default", 10 * GB, 10 * GB)
    snap = weka.create_snapshot(fs.uid, "s1")
    assert snap.access_point.startswith("@GMT-")
    with pytest.raises(WekaError, match="already exists") as duplicate:
        weka.create_snapshot(fs.uid, "s1")
    assert "find_snapshot" in str(duplicate.value)

    with pytest.raises(WekaError) as untiered:
        weka.upload_snapshot(snap.uid)
    message = str(untiered.value)
    assert "answered 400: Filesystem scratch is not tiered: cannot upload from it" in message
    assert "attach_object_store" in message

    with pytest.raises(WekaError, match="Object store bucket elsewhere not found") as unknown:
        weka.attach_object_store(fs.uid, "elsewhere")
    assert "weka fs tier s3" in str(unknown.value)

    weka.attach_object_store(fs.uid, OBS_BUCKET)
    writable = weka.create_snapshot(fs.uid, "w", access_point="w", writable=True)
    assert writable.is_writable
    with pytest.raises(WekaError, match="Only read-only snapshots can be uploaded"):
        weka.upload_snapshot(writable.uid)

    with pytest.raises(WekaError, match="not found in object store bucket") as missing:
        weka.create_filesystem_from_locator(
            "restored",
            "default",
            10 * GB,
            10 * GB,
            obs_name=OBS_BUCKET,
            locator="00000000/d/s/1/spec/0000-0000",
        )
    assert "locator_info" in str(missing.value)
    assert weka.find_filesystem("restored") is None

    weka.delete_snapshot(writable.uid, "w")
    weka.delete_snapshot(writable.uid, "w")  # deleting what is gone is fine
    assert [s.name for s in weka.list_snapshots("scratch")] == ["s1"]
    weka.delete_filesystem(fs.uid, "scratch")


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM) so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def test_a_snapshot_far_larger_than_the_emulators_memory_streams_up_and_back(
    org: Org, emulator: Emulator, store: RetentionStore
) -> None:
    """The snapshot's copy, its upload and the download each pass the tree through the emulator
    as a stream: its peak memory grows by much less than the data it moves."""
    weka = org.client
    size = 256 * 2**20
    fs = weka.create_filesystem("big", "default", 100 * GB, 100 * GB)
    weka.attach_object_store(fs.uid, OBS_BUCKET)
    # A first, small upload loads what every upload needs (the S3 client).
    (org.fs_mount("big") / "notes").write_text("small")
    weka.upload_snapshot(weka.create_snapshot(fs.uid, "small", access_point="small").uid)
    written = hashlib.sha256()
    with (org.fs_mount("big") / "weights.bin").open("wb") as out:
        for number in range(size // 2**20):
            block = hashlib.sha256(number.to_bytes(4, "big")).digest() * (2**20 // 32)
            written.update(block)
            out.write(block)
    before = peak_rss_kib(emulator.process.pid)

    snap = weka.create_snapshot(fs.uid, "offboard", access_point="offboard")
    upload = weka.upload_snapshot(snap.uid)
    weka.wait_uploaded(snap.uid)
    stored = store.list(uploaded_snapshot_prefix(upload.locator))
    assert sum(info.size for info in stored) > size
    weka.delete_filesystem(fs.uid, "big")
    weka.create_filesystem_from_locator(
        "big", "default", 100 * GB, 100 * GB, obs_name=OBS_BUCKET, locator=upload.locator
    )

    read_back = hashlib.sha256((org.fs_mount("big") / "weights.bin").read_bytes())
    assert read_back.hexdigest() == written.hexdigest()
    grown_mib = (peak_rss_kib(emulator.process.pid) - before) / 1024
    # One blob of the upload (16 MiB) is held while it is sent; the tree never is.
    assert grown_mib < 48, f"the emulator's peak memory grew {grown_mib:.0f} MiB"
