"""Contract tests of the Weka directory provider: directories made, read, changed and removed
through the mount host (the local transport on the sandbox's emulated wekafs mounts), then found
by the Weka REST API and given a quota there, as the onboarding runbook's step 4e does.

Calls go as the engine makes them (through `check`, numbers as floats); every test makes its own
filesystem in Root and removes it again.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic import CreateResult, ReadResult

from providers.errors import WekaError
from providers.retention.client import RetentionStore, holds
from providers.retention.directory_copy_provider import DirectoryCopyProvider
from providers.weka.client import WekaClient
from providers.weka.directory_provider import DirectoryProvider
from providers.weka.quota_provider import DirectoryQuotaProvider
from providers.weka.settings import Settings
from tests.backends import owner_and_mode, wait_for
from tests.provider_calls import GB, checked, no_changes, wire
from tests.trees import manifest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

DIRS = DirectoryProvider()
TENANT_GID = 4099
ALICE = 2147


@pytest.fixture
def filesystem() -> Iterator[tuple[str, str, Path]]:
    """A fresh filesystem in Root: its name, its uid and where the mount host sees it."""
    name = f"dirtest-{uuid.uuid4().hex[:8]}"
    with WekaClient.from_settings(Settings.from_environment()) as admin:
        fs = admin.create_filesystem(name, "default", 10 * GB, 10 * GB)
        try:
            yield name, fs.uid, Path(os.environ["WEKA_MOUNT_ROOT"]) / "Root" / name
        finally:
            admin.delete_filesystem(fs.uid, name)


def directory(
    fs_name: str, path: str, uid: int = 0, mode: str = "750", **more: Any
) -> dict[str, Any]:
    return checked(
        DIRS,
        {"filesystem": fs_name, "path": path, "uid": uid, "gid": TENANT_GID, "mode": mode, **more},
    )


def outs(result: CreateResult | ReadResult) -> dict[str, Any]:
    assert result.outs is not None
    return result.outs


def test_directories_are_made_with_owner_and_mode_and_found_by_the_rest_api(
    filesystem: tuple[str, str, Path],
) -> None:
    name, fs_uid, mount = filesystem
    tenant = directory(name, "/tenant-x", mode="2770")
    assert tenant["mode"] == "2770"
    made = DIRS.create(tenant)
    assert made.id == f"Root/{name}/tenant-x"
    assert owner_and_mode(mount / "tenant-x") == (0, TENANT_GID, "2770")
    home = directory(name, "/tenant-x/alice", uid=ALICE, mode="0700")
    DIRS.create(home)
    assert owner_and_mode(mount / "tenant-x" / "alice") == (ALICE, TENANT_GID, "0700")

    # Runbook 4e: the REST API finds the directory the mount made, and takes a quota on it.
    quotas = DirectoryQuotaProvider()
    quota_inputs = checked(
        quotas,
        {
            "filesystem_uid": fs_uid,
            "path": "/tenant-x/alice",
            "hard_limit_bytes": 100 * GB,
            "soft_limit_bytes": 90 * GB,
            "owner": "tenant-x",
        },
    )
    quota = quotas.create(quota_inputs)
    with WekaClient.from_settings(Settings.from_environment()) as admin:
        live = admin.get_quota(fs_uid, outs(quota)["inode_id"], outs(quota)["path"])
    assert live is not None
    assert (live.path, live.hard_limit_bytes, live.soft_limit_bytes, live.owner) == (
        "/tenant-x/alice",
        100 * GB,
        90 * GB,
        "tenant-x",
    )
    quotas.delete(quota.id, wire(outs(quota)))

    # Read gives back what create recorded; no diff right after.
    read = DIRS.read(made.id, wire(outs(made)))
    assert read.id == made.id
    no_changes(DIRS, made.id, outs(read), tenant)


def test_a_change_behind_pulumis_back_is_read_and_put_back(
    filesystem: tuple[str, str, Path],
) -> None:
    name, _, mount = filesystem
    inputs = directory(name, "/tenant-x", mode="2770")
    made = DIRS.create(inputs)
    os.chown(mount / "tenant-x", 0, 5555)
    os.chmod(mount / "tenant-x", 0o777)
    read = DIRS.read(made.id, wire(outs(made)))
    assert (outs(read)["gid"], outs(read)["mode"]) == (5555, "0777")
    diff = DIRS.diff(made.id, wire(outs(read)), inputs)
    assert diff.changes is True
    assert not diff.replaces
    DIRS.update(made.id, wire(outs(read)), inputs)
    assert owner_and_mode(mount / "tenant-x") == (0, TENANT_GID, "2770")
    # A path change is a new directory, not a rename of the tenant's data.
    moved = DIRS.diff(made.id, wire(outs(made)), directory(name, "/tenant-y", mode="2770"))
    assert moved.replaces == ["path"]


def test_an_interrupted_create_is_adopted_and_a_foreign_directory_refused(
    filesystem: tuple[str, str, Path],
) -> None:
    name, _, mount = filesystem
    (mount / "ours").mkdir()
    os.chown(mount / "ours", ALICE, TENANT_GID)
    adopted = DIRS.create(directory(name, "/ours", uid=ALICE, mode="0700"))
    assert owner_and_mode(mount / "ours") == (ALICE, TENANT_GID, "0700")
    assert outs(adopted)["uid"] == ALICE

    (mount / "theirs").mkdir()
    os.chown(mount / "theirs", 3000, 5000)
    with pytest.raises(WekaError) as refused:
        DIRS.create(directory(name, "/theirs", uid=ALICE))
    message = str(refused.value)
    assert "owned by 3000:5000, not by this tenant's 2147:4099" in message
    assert f"chown 2147:4099 {mount / 'theirs'}" in message
    assert owner_and_mode(mount / "theirs")[:2] == (3000, 5000)


def test_delete_removes_an_empty_directory_and_refuses_one_with_data(
    filesystem: tuple[str, str, Path],
) -> None:
    name, _, mount = filesystem
    empty = DIRS.create(directory(name, "/empty"))
    DIRS.delete(empty.id, wire(outs(empty)))
    assert not (mount / "empty").exists()
    DIRS.delete(empty.id, wire(outs(empty)))  # already gone: nothing to do

    full = DIRS.create(directory(name, "/full"))
    (mount / "full" / "checkpoint.pt").write_text("weights")
    with pytest.raises(WekaError, match="refused: it holds the tenant's data") as refused:
        DIRS.delete(full.id, wire(outs(full)))
    assert "offboarding keeps a copy first" in str(refused.value)
    assert (mount / "full" / "checkpoint.pt").read_text() == "weights"

    # A copy recorded but not in the retention store opens nothing.
    missing = {**outs(full), "retained_copy": f"test-{name}/storage/never-made.tar.gz"}
    with pytest.raises(WekaError, match="is not in the retention store"):
        DIRS.delete(full.id, wire(missing))

    # An object at the key that an upload left unmarked (no digest) is not a whole copy.
    unmarked = f"test-{name}/storage/unmarked.tar.gz"
    with RetentionStore.from_environment() as store:
        store.put(unmarked, b"half an archive", {})
    with pytest.raises(WekaError, match="has no digest: its upload never completed"):
        DIRS.delete(full.id, wire({**outs(full), "retained_copy": unmarked}))

    # With offboarding's copy in the store, marked and reading back as marked, the data may go.
    copy = DirectoryCopyProvider().create(
        {"tenant": f"test-{name}", "filesystem": name, "path": "/full", "retention_days": 1.0}
    )
    with RetentionStore.from_environment() as store:
        head = store.head(copy.id)
        assert head is not None
        assert head.metadata is not None
        digest = store.sha256(copy.id)
        assert (head.metadata["sha256"], head.metadata["files"]) == (digest, "2")
        assert (outs(copy)["sha256"], outs(copy)["files"]) == (digest, 2)
        # A copy changed behind the mark is refused too.
        store.mark(copy.id, {"sha256": "0" * 64})
        with pytest.raises(WekaError, match=f"reads back with sha256 {digest}, not its recorded"):
            DIRS.delete(full.id, wire({**outs(full), "retained_copy": copy.id}))
        store.mark(copy.id, {"sha256": digest})
        store.delete(unmarked)
    DIRS.delete(full.id, wire({**outs(full), "retained_copy": copy.id}))
    assert not (mount / "full").exists()
    with RetentionStore.from_environment() as store:
        data = store.get(copy.id)
        store.delete(copy.id)
    with tarfile.open(fileobj=io.BytesIO(data)) as kept:
        assert kept.extractfile("./checkpoint.pt").read() == b"weights"  # type: ignore[union-attr]

    again = DIRS.create(directory(name, "/again"))
    (mount / "again" / "x").write_text("x")
    rehearsal = directory(name, "/again", allow_delete_with_data=True)
    DIRS.delete(again.id, wire({**outs(again), **rehearsal}))
    assert not (mount / "again").exists()


def test_missing_parent_unmounted_filesystem_and_bad_inputs_are_named(
    filesystem: tuple[str, str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, _ = filesystem
    with pytest.raises(WekaError, match="its parent directory must exist"):
        DIRS.create(directory(name, "/no-such-parent/alice"))
    with pytest.raises(WekaError, match="'no-such-fs' of organization 'Root' is not mounted"):
        DIRS.create(directory("no-such-fs", "/x"))
    failures = DIRS.check(
        {},
        {"filesystem": name, "path": "/a/../etc", "uid": -1.0, "gid": 4099.0, "mode": "rwx"},
    ).failures
    assert sorted(f.property for f in failures) == ["mode", "path", "uid"]
    root = DIRS.check({}, {"filesystem": name, "path": "/", "uid": 0.0, "gid": 1.0}).failures
    assert [f.reason for f in root] == [
        "the root of a shared filesystem is the platform's, not a tenant's"
    ]
    monkeypatch.setenv("WEKA_MOUNT_TRANSPORT", "ssh")
    with pytest.raises(WekaError, match="WEKA_MOUNT_TRANSPORT='ssh'"):
        DIRS.create(directory(name, "/x"))


def test_a_mount_host_that_does_not_answer_is_an_error_not_a_hang(
    filesystem: tuple[str, str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    name, _, _ = filesystem
    # kubectl exec against an API server that is not there: the transport's own failure.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
        "'https://127.0.0.1:9'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\nusers: [{name: u, user: {token: x}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("WEKA_MOUNT_TRANSPORT", "kubectl")
    with pytest.raises(WekaError) as failed:
        DIRS.create(directory(name, "/x"))
    message = str(failed.value)
    assert "`stat --format=%F " in message
    assert "connection refused" in message
    assert "check that the mount host answers" in message


def test_a_copy_killed_while_it_uploads_leaves_no_object_and_the_next_one_completes(
    filesystem: tuple[str, str, Path],
) -> None:
    name, _, mount = filesystem
    (mount / "big").mkdir()
    for n in range(3):
        (mount / "big" / f"weights-{n}.pt").write_bytes(os.urandom(100 << 20))
    props = {"tenant": f"test-{name}", "filesystem": name, "path": "/big", "retention_days": 1.0}
    key = f"test-{name}/storage/{name}.tar.gz"
    copying = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from providers.retention.directory_copy_provider import "
            f"DirectoryCopyProvider as P; P().create({props!r})",
        ],
        cwd=ROOT,
        start_new_session=True,
    )
    with RetentionStore.from_environment() as store:

        def uploads() -> list[str]:
            listed = store._s3.list_multipart_uploads(Bucket=store.bucket, Prefix=key)
            return [u["UploadId"] for u in listed.get("Uploads") or []]

        try:
            wait_for("the copy's multipart upload to begin", lambda: bool(uploads()), 60)
        finally:
            # The engine killed, and with it the provider and the archive on the mount host.
            os.killpg(copying.pid, signal.SIGKILL)
            copying.wait()
        assert store.head(key) is None, "a killed copy must leave no object at its key"
        assert uploads(), "the killed upload is there, unfinished: nothing a gate could take"

        made = DirectoryCopyProvider().create(props)
        assert made.id == key
        assert uploads() == [], "the next copy aborts what the killed one left"
        assert holds(key) is None
        assert outs(made)["files"] == 4
        store.delete(key)


def test_a_directory_made_while_its_copy_is_recorded_comes_back_from_the_copy(
    filesystem: tuple[str, str, Path],
) -> None:
    name, _, mount = filesystem
    top = DIRS.create(directory(name, "/tenant-r", mode="2770"))
    home = DIRS.create(directory(name, "/tenant-r/alice", uid=ALICE, mode="0700"))
    for n in range(3):
        (mount / "tenant-r" / "alice" / f"step-{n}.log").write_bytes(os.urandom(1000 + n))
    os.link(mount / "tenant-r" / "alice" / "step-0.log", mount / "tenant-r" / "alice" / "best")
    for path in (mount / "tenant-r" / "alice").iterdir():
        os.chown(path, ALICE, TENANT_GID)
    before = manifest(mount / "tenant-r")
    copy = DirectoryCopyProvider().create(
        {"tenant": f"test-{name}", "filesystem": name, "path": "/tenant-r", "retention_days": 1.0}
    )
    # Destroy, as offboarding's gate lets it go once the copy is whole.
    for made in (home, top):
        DIRS.delete(made.id, wire({**outs(made), "retained_copy": copy.id}))
    assert not (mount / "tenant-r").exists()

    with RetentionStore.from_environment() as store:
        digest = outs(copy)["sha256"]
        # A copy changed behind its mark is never unpacked into place.
        store.mark(copy.id, {"sha256": "0" * 64})
        with pytest.raises(WekaError, match=f"reads back with sha256 {digest}, not its recorded"):
            DIRS.create(directory(name, "/tenant-r", mode="2770", retained_copy=copy.id))
        assert sorted(p.name for p in mount.iterdir()) == []
        store.mark(copy.id, {"sha256": digest})

        restored = DIRS.create(directory(name, "/tenant-r", mode="2770", retained_copy=copy.id))
        assert manifest(mount / "tenant-r") == before
        assert owner_and_mode(mount / "tenant-r") == (0, TENANT_GID, "2770")
        # The home inside it is found there, its owner the mark; a user the copy does not hold
        # gets an empty home.
        DIRS.create(
            directory(name, "/tenant-r/alice", uid=ALICE, mode="0700", retained_copy=copy.id)
        )
        bob = directory(name, "/tenant-r/bob", uid=ALICE + 1, mode="0700", retained_copy=copy.id)
        DIRS.create(bob)
        assert list((mount / "tenant-r" / "bob").iterdir()) == []
        assert manifest(mount / "tenant-r") == {
            **before,
            "bob": ("dir", ALICE + 1, TENANT_GID, 0o700),
        }
        no_changes(
            DIRS,
            restored.id,
            outs(DIRS.read(restored.id, wire(outs(restored)))),
            directory(name, "/tenant-r", mode="2770", retained_copy=copy.id),
        )

        # A copy that is gone from the store is named, and nothing is made.
        store.delete(copy.id)
    with pytest.raises(WekaError, match=r"its retained copy cannot be restored: .* is not in the"):
        DIRS.create(directory(name, "/tenant-s", retained_copy=copy.id))
    assert not (mount / "tenant-s").exists()
