"""A stage that fails halfway can be rolled back: what it kept stays declared from the moment it
exists, though the namespace, which records what offboarding keeps, was not updated.

One tenant of this run's own (the retention store keeps what it archives), running a workload
of every kind, walked to stage drained (every workload stopped, and its admins held from
starting more); stage archived then fails on the logs archive (the engine runs without
SLURM_LOG_FILES) after the other archives were made; the rollback to active goes through with
them kept, and every workload is as it was. The tests share the tenant, in the file's order."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.kubernetes.workloads import PARKED_LABEL
from providers.retention.client import RetentionStore
from providers.retention.objects import tenant_prefix
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import file_backend, pulumi, run_pulumi, wait_for

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


# Pod Security's restricted profile, which the namespace enforces.
POD = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "work",
            "image": "trainer:1",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            },
        }
    ],
}


def template(name: str, **pod: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": name}}, "spec": {**POD, **pod}}


def apps(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": name}}, "template": template(name), **spec}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


JOB = {"template": template("batch", restartPolicy="Never"), "backoffLimit": 0}
# One object of each kind a tenant runs pods by, and a bare pod.
WORKLOADS = [
    apps("Deployment", "web", replicas=2),
    apps("StatefulSet", "db", replicas=1, serviceName="db"),
    apps("ReplicaSet", "rs", replicas=3),
    apps("DaemonSet", "agent"),
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch"}, "spec": JOB},
    {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": JOB}},
    },
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "scratchpad"}, "spec": POD},
]
RUNNING = {
    # The stack's own login release (spec login.replicas), which the drain leaves running.
    f"StatefulSet/login-{SLUG}": 1,
    "Deployment/web": 2,
    "StatefulSet/db": 1,
    "ReplicaSet/rs": 3,
    "DaemonSet/agent": "running",
    "Job/batch": "running",
    "CronJob/nightly": "running",
    "Pod/scratchpad": "there",
}


def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--namespace", SLUG, *args],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def as_run() -> dict[str, object]:
    """What stopping changes of each workload, as the API server holds it now."""
    found = json.loads(kubectl("get", "deploy,sts,rs,ds,job,cronjob,pod", "-o", "json").stdout)
    state: dict[str, object] = {}
    for item in found["items"]:
        kind, name, spec = item["kind"], item["metadata"]["name"], item["spec"]
        owned = item["metadata"].get("ownerReferences")
        if kind in ("Deployment", "StatefulSet") or (kind == "ReplicaSet" and not owned):
            state[f"{kind}/{name}"] = spec["replicas"]
        elif kind in ("Job", "CronJob"):
            state[f"{kind}/{name}"] = "suspended" if spec.get("suspend") else "running"
        elif kind == "DaemonSet":
            selector = spec["template"]["spec"].get("nodeSelector") or {}
            state[f"{kind}/{name}"] = "parked" if PARKED_LABEL in selector else "running"
        elif kind == "Pod" and not owned:
            state[f"{kind}/{name}"] = "there"
    return state


def test_drained_stops_every_workload_and_frozen_holds_the_admins_from_starting_more(
    tenant: Tenant,
) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": WORKLOADS}
    made = kubectl("create", "-f", "-", stdin=json.dumps(listed))
    assert made.returncode == 0, made.stderr
    assert as_run() == RUNNING
    tenant.at_stage("frozen")
    tenant.pulumi("up", "--yes", "--skip-preview")
    admin = ("--as", "d" + SUFFIX, "--as-group", f"{SLUG}-admins")
    for attempt in (
        ("scale", "deployment", "web", "--replicas=5"),
        ("create", "deployment", "more", "--image=trainer:1", "--dry-run=server"),
    ):
        refused = kubectl(*attempt, *admin)
        assert refused.returncode != 0, attempt
        assert f"tenant {SLUG} is being offboarded (from stage frozen on)" in refused.stderr
    tenant.at_stage("drained")
    tenant.pulumi("up", "--yes", "--skip-preview")
    # The drain deletes a bare pod without waiting: it goes once the node's kubelet says its
    # containers ended (seconds on a loaded machine, for a pod whose image never came).
    wait_for("the bare pod to be gone", lambda: "Pod/scratchpad" not in as_run(), 60)
    assert as_run() == {
        f"StatefulSet/login-{SLUG}": 1,
        "Deployment/web": 0,
        "StatefulSet/db": 0,
        "ReplicaSet/rs": 0,
        "DaemonSet/agent": "parked",
        "Job/batch": "suspended",
        "CronJob/nightly": "suspended",
    }


def test_a_stage_that_failed_after_keeping_some_archives_rolls_back(
    tenant: Tenant,
) -> None:
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
    # Every workload as it was; the bare pod, deleted at drained, is not remade.
    assert as_run() == {k: v for k, v in RUNNING.items() if not k.startswith("Pod/")}
