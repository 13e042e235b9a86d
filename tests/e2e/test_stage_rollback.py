"""A stage that fails halfway can be rolled back: what it kept stays declared from the moment it
exists, though the namespace, which records what offboarding keeps, was not updated.

One tenant of this run's own (the retention store keeps what it archives), walked to stage
drained; stage archived then fails on the logs archive (the engine runs without SLURM_LOG_FILES)
after the other archives were made; the rollback to active goes through with them kept."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.retention.client import RetentionStore
from providers.retention.objects import tenant_prefix
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import file_backend, pulumi, run_pulumi

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SUFFIX = uuid.uuid4().hex[:6]
SLUG = f"tenant-rb{SUFFIX}"
# Numbers of this run's own: a tenant's users outlive it in Authentik.
BASE = 100_000 + int(SUFFIX, 16) % 50_000 * 4


@dataclass
class Tenant:
    project: Path
    env: dict[str, str]

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def at_stage(self, stage: str) -> None:
        spec = yaml.safe_load(self.spec_file.read_text())
        spec["lifecycle"]["stage"] = stage
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def pulumi(self, *args: str, env: dict[str, str] | None = None) -> str:
        return run_pulumi({**self.env, **(env or {})}, self.project, *args, "--stack", SLUG,
                          timeout=900)  # fmt: skip

    def resources(self) -> list[dict[str, Any]]:
        exported = json.loads(self.pulumi("stack", "export"))
        found: list[dict[str, Any]] = exported["deployment"].get("resources") or []
        return found

    def archives(self) -> list[str]:
        """The kinds of the archives in the stack's state."""
        return sorted(
            r["outputs"]["kind"]
            for r in self.resources()
            if r["type"] == "pulumi-python:dynamic/retention:SlurmArchive"
        )


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Tenant]:
    work = tmp_path_factory.mktemp("stage-rollback")
    project = project_copy(work / "project")
    tenants = project / "tenants"
    spec = yaml.safe_load((tenants / "tenant-bar.yaml").read_text())
    (tenants / "tenant-bar.yaml").unlink()
    spec["slug"] = SLUG
    spec["contract"]["partition_type"] = "on-demand"
    spec["reservation"]["nodes"] = []
    spec["identity"].update(gid=BASE + 2, admins=[f"d{SUFFIX}"], admins_gid=BASE + 3)
    for number, (user, name) in enumerate(zip(spec["users"], ("d", "e"), strict=True)):
        user.update(
            username=f"{name}{SUFFIX}", email=f"{name}{SUFFIX}@example.org", uid=BASE + number
        )
    spec["login"]["hostname"] = f"login.{SLUG}.example.internal"
    # A rehearsal, which ran no job (its empty billing export is accepted), taken down at the end.
    spec["lifecycle"].update(rehearsal=True, drain_mode="graceful", drain_timeout="1h")
    (tenants / f"{SLUG}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    made = Tenant(project, file_backend(work / "backend"))
    made.pulumi("stack", "init")
    made.pulumi("config", "set", "drain_wait_seconds", "15")
    made.pulumi("up", "--yes", "--skip-preview")
    yield made
    pulumi(made.env, project, "destroy", "--yes", "--skip-preview", "--exclude-protected",
           "--stack", SLUG, timeout=900)  # fmt: skip


def test_a_stage_that_failed_after_keeping_some_archives_rolls_back(
    tenant: Tenant,
) -> None:
    for stage in ("frozen", "drained"):
        tenant.at_stage(stage)
        tenant.pulumi("up", "--yes", "--skip-preview")
    tenant.at_stage("archived")
    failed = pulumi(
        {**tenant.env, "SLURM_LOG_FILES": ""}, tenant.project, "up", "--yes", "--skip-preview",
        "--stack", SLUG, timeout=900,
    )  # fmt: skip
    assert failed.returncode != 0
    assert "SLURM_LOG_FILES is not set" in failed.stdout + failed.stderr
    kept = tenant.archives()
    assert kept, "the failed stage made no archive before the logs' failed: nothing to roll back"
    assert "logs" not in kept
    with RetentionStore.from_environment() as store:
        stored = sorted(info.key for info in store.list(tenant_prefix(SLUG)))
    assert len(stored) == len(kept)

    # "Wait, they're staying": the rollback keeps what the failed stage archived.
    tenant.at_stage("active")
    tenant.pulumi("up", "--yes", "--skip-preview")
    assert tenant.archives() == kept
    tenant.pulumi("preview", "--expect-no-changes")
