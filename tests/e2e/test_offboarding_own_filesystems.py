"""Offboarding a tenant with filesystems of its own (org isolation), end to end on the tests'
sandbox: tenant-foo (live, not a rehearsal) holds files in its home and scratch filesystems and
has run a job on the slurmd node; it moves one stage per pull request, and its `up` at stage
archived is killed; the next `up` converges with nothing done twice; a rollback from
snapshotted restores it; stage destroy and `destroy --exclude-protected` take it down; a new
filesystem made from each uploaded snapshot holds the tenant's files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.retention.client import RetentionStore
from providers.weka.uploaded_snapshot_provider import SNAPSHOT_NAME, org_admin_client
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from sandbox.slurm.users import ensure_user
from tests.backends import (
    CHECKPOINTING_JOB,
    file_backend,
    mounted,
    plugins_of_killed_engine,
    pulumi,
    run,
    run_pulumi,
    sacct_job,
    sbatch_as,
    scratch_directory,
    wait_for,
    weka,
    weka_org,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG = "tenant-foo"
GROUP, GID = "tenant-foo", 4099
SIGN_OFF = {"by": "Erin Operator", "date": "2026-11-30", "ticket": "OPS-4243"}
FILES = {
    "home": ("alice/notes.txt", b"alice's notes\n"),
    "scratch": ("tenant-foo/w.bin", b"\0" * 4096),
}


@dataclass
class Foo:
    project: Path
    env: dict[str, str]

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def edit(self, **lifecycle: Any) -> None:
        spec = yaml.safe_load(self.spec_file.read_text())
        spec["lifecycle"].pop("sign_off", None)
        spec["lifecycle"].update(lifecycle)
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def pulumi(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=900)

    def state(self) -> list[dict[str, Any]]:
        exported = json.loads(self.pulumi("stack", "export"))
        resources: list[dict[str, Any]] = exported["deployment"].get("resources") or []
        return resources


@pytest.fixture(scope="module")
def foo(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Foo]:
    ensure_user("alice", 2147, GID, GROUP)
    work = tmp_path_factory.mktemp("offboarding-own")
    tenant = Foo(project_copy(work / "project"), file_backend(work / "backend"))
    spec = yaml.safe_load(tenant.spec_file.read_text())
    # One node, the sandbox's slurmd node, so that the tenant's job really runs.
    spec["contract"]["gpus"] = 8
    spec["reservation"]["nodes"] = ["gpu-14"]
    spec["slurm"]["qos"]["normal"]["gpus"] = 8
    spec["slurm"]["qos"]["interactive"]["gpus"] = 8
    spec["lifecycle"].update(drain_mode="hard", drain_timeout="1m")
    tenant.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    tenant.pulumi("stack", "init")
    tenant.pulumi("up", "--yes", "--skip-preview")
    yield tenant
    run("scancel", f"--account={SLUG},ml-team-foo")
    if tenant.state():
        # Whatever a test left is taken down as a rehearsal's would be: every gate open.
        tenant.edit(stage="active", rehearsal=True)
        for command in (("up",), ("destroy", "--exclude-protected")):
            pulumi(tenant.env, tenant.project, *command, "--yes", "--skip-preview", "--stack", SLUG)


def test_the_tenant_holds_data_and_has_run_a_job(foo: Foo) -> None:
    for kind, (path, data) in FILES.items():
        target = mounted(SLUG, f"{SLUG}-{kind}", path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    run_a_job()


def run_a_job() -> None:
    """alice's one-second job on the slurmd node, run to its end."""
    with scratch_directory(GID) as scratch:
        job = sbatch_as(
            "alice",
            GROUP,
            "--account=ml-team-foo",
            f"--partition={SLUG}",
            "--time=00:05:00",
            f"--chdir={scratch}",
            f"--output={scratch}/slurm-%j.out",
            str(CHECKPOINTING_JOB),
            str(scratch),
            "1",
        )
        wait_for(f"job {job} to end", lambda: sacct_job(job, "State") == ["COMPLETED"], timeout=60)


def test_a_killed_up_at_stage_archived_converges_with_nothing_done_twice(foo: Foo) -> None:
    for stage in ("frozen", "drained"):
        foo.edit(stage=stage)
        foo.pulumi("up", "--yes", "--skip-preview")
    foo.edit(stage="archived")
    up = subprocess.Popen(
        ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", SLUG],
        cwd=foo.project,
        env={**os.environ, **foo.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with RetentionStore.from_environment() as store:
        deadline = time.monotonic() + 300
        while not store.list(f"{SLUG}/slurm/"):
            assert up.poll() is None, "up finished before an archive was written"
            assert time.monotonic() < deadline, "no archive was written"
            time.sleep(0.2)
    os.killpg(up.pid, signal.SIGKILL)
    up.wait()
    for pid in plugins_of_killed_engine(foo.project):
        os.kill(pid, signal.SIGKILL)
    foo.pulumi("cancel", "--yes")
    foo.pulumi("refresh", "--yes", "--clear-pending-creates")
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("preview", "--expect-no-changes")

    with RetentionStore.from_environment() as store:
        keys = sorted(info.key for info in store.list(f"{SLUG}/"))
    assert keys == [
        f"{SLUG}/slurm/{k}" for k in ("associations.txt", "jobs.csv", "logs.log", "steps.csv")
    ]


def test_snapshotted_uploads_each_filesystem_once(foo: Foo) -> None:
    foo.edit(stage="snapshotted")
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("up", "--yes", "--skip-preview")  # run again: nothing taken or uploaded twice
    with org_admin_client(SLUG) as weka:
        for kind in ("home", "scratch"):
            snapshots = weka.list_snapshots(f"{SLUG}-{kind}")
            assert [s.name for s in snapshots] == [SNAPSHOT_NAME]
            assert snapshots[0].uploaded
    uploads = [r for r in foo.state() if r["type"] == "pulumi-python:dynamic/weka:UploadedSnapshot"]
    assert len(uploads) == 2
    assert all(r.get("protect") for r in uploads)


def test_rollback_from_snapshotted_restores_the_tenant(foo: Foo) -> None:
    foo.edit(stage="active")
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("preview", "--expect-no-changes", "--refresh")
    release = json.loads(
        run("kubectl", "-n", SLUG, "get", "helmreleases", f"login-{SLUG}", "-o", "json")
    )
    assert release["spec"]["values"]["replicas"] == 2
    run_a_job()


def test_destroy_keeps_the_uploads_and_each_restores_the_tenants_files(foo: Foo) -> None:
    for stage in ("frozen", "drained", "archived", "snapshotted"):
        foo.edit(stage=stage)
        foo.pulumi("up", "--yes", "--skip-preview")
    foo.edit(stage="destroy", sign_off=SIGN_OFF)
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert weka_org(SLUG) is None
    uploads = {
        r["outputs"]["filesystem"]: r["outputs"]["locator"]
        for r in foo.state()
        if r["type"] == "pulumi-python:dynamic/weka:UploadedSnapshot"
    }
    assert sorted(uploads) == [f"{SLUG}-home", f"{SLUG}-scratch"]

    # Restoring: the cluster admin makes a filesystem in Root from each locator.
    with weka() as admin:
        for kind, (path, data) in FILES.items():
            name = f"restored-{kind}-{int(time.time())}"
            body = {
                "name": name,
                "group_name": "default",
                "total_capacity": 10**12,
                "ssd_capacity": 10**12,
                "object_storage": "retention",
                "locator": uploads[f"{SLUG}-{kind}"],
            }
            restored = admin.post("/fileSystems/download", json=body)
            assert restored.status_code < 300, restored.text
            try:
                assert mounted("Root", name, path).read_bytes() == data
            finally:
                uid = restored.json()["data"]["uid"]
                admin.delete(f"/fileSystems/{uid}")
