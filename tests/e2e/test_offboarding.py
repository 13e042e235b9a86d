"""Offboarding end to end, through the real engine on the tests' sandbox, over one live tenant (not
a rehearsal): tenant-bar on two nodes, moved through the runbook's stages by editing its spec
and running `pulumi up`, each stage read back with the backends' own tools. The tests run in the
file's order, as the operator's pull requests would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import file_backend, labelled, pulumi, run_pulumi, sacctmgr, show_partition

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG = "tenant-bar"
NODES = ["gpu-13", "gpu-14"]
GRP_JOBS = "100"  # tenant-bar's slurm.grp_jobs


@dataclass
class Tenant:
    project: Path
    env: dict[str, str]

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def spec(self) -> dict[str, Any]:
        data: dict[str, Any] = yaml.safe_load(self.spec_file.read_text())
        return data

    def write(self, spec: dict[str, Any]) -> None:
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def at_stage(self, stage: str, sign_off: dict[str, str] | None = None) -> None:
        spec = self.spec()
        spec["lifecycle"]["stage"] = stage
        spec["lifecycle"].pop("sign_off", None)
        if sign_off is not None:
            spec["lifecycle"]["sign_off"] = sign_off
        self.write(spec)

    def pulumi(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=600)

    def try_pulumi(self, *args: str) -> tuple[int, str]:
        done = pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=600)
        return done.returncode, done.stdout + done.stderr

    def resources(self) -> list[str]:
        state = json.loads(self.pulumi("stack", "export"))
        return sorted(r["urn"] for r in state["deployment"].get("resources") or [])


@pytest.fixture(scope="module")
def bar(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Tenant]:
    work = tmp_path_factory.mktemp("offboarding")
    tenant = Tenant(project_copy(work / "project"), file_backend(work / "backend"))
    spec = tenant.spec()
    spec["contract"]["gpus"] = 8 * len(NODES)
    spec["reservation"]["nodes"] = NODES
    for qos in spec["slurm"]["qos"].values():
        qos["gpus"] = min(qos["gpus"], 8 * len(NODES))
    tenant.write(spec)
    tenant.pulumi("stack", "init")
    tenant.pulumi("up", "--yes", "--skip-preview")
    yield tenant
    if tenant.resources():
        # Whatever a test left, the stack is taken down in the runbook's order.
        tenant.at_stage("destroy", {"by": "Test Teardown", "date": "2026-11-30", "ticket": "OPS-1"})
        tenant.pulumi("up", "--yes", "--skip-preview")
        tenant.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")


def association_limits(account: str) -> tuple[str, str]:
    """GrpJobs and GrpSubmitJobs of the account's own association."""
    for line in sacctmgr(
        "show", "assoc", "where", f"account={account}", "format=User,GrpJobs,GrpSubmit"
    ):
        user, grp_jobs, grp_submit = line.split("|")
        if not user:
            return grp_jobs, grp_submit
    raise AssertionError(f"no association for account {account}")


def partition_state(name: str) -> str:
    line = show_partition(name)
    return line.split(" State=", 1)[1].split()[0]


def test_destroy_of_an_active_tenant_deletes_nothing_and_names_the_next_stage(bar: Tenant) -> None:
    before = bar.resources()
    code, said = bar.try_pulumi("destroy", "--yes", "--skip-preview")
    assert code != 0
    assert "offboarding stage 'active'" in said
    assert "moves lifecycle.stage to 'frozen'" in said
    assert bar.resources() == before
    assert labelled(SLUG) == NODES
    assert association_limits(SLUG)[0] == GRP_JOBS


def test_frozen_blocks_jobs_and_downs_the_partition(bar: Tenant) -> None:
    bar.at_stage("frozen")
    preview = bar.pulumi("preview", "--diff")
    assert "grp_jobs" in preview
    assert "state" in preview
    bar.pulumi("up", "--yes", "--skip-preview")
    assert association_limits(SLUG) == ("0", "0")
    assert partition_state(SLUG) == "DOWN"


def test_destroy_excluding_protected_at_frozen_is_refused_too(bar: Tenant) -> None:
    before = bar.resources()
    code, said = bar.try_pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert code != 0
    assert "offboarding stage 'frozen'" in said
    assert "moves lifecycle.stage to 'drained'" in said
    assert bar.resources() == before


def test_rollback_from_frozen_restores_the_contract(bar: Tenant) -> None:
    bar.at_stage("active")
    bar.pulumi("up", "--yes", "--skip-preview")
    assert association_limits(SLUG) == (GRP_JOBS, "")
    assert partition_state(SLUG) == "UP"
    bar.pulumi("preview", "--expect-no-changes", "--refresh")


def test_destroy_at_stage_destroy_with_sign_off_takes_everything_down(bar: Tenant) -> None:
    bar.at_stage("destroy", {"by": "Erin Operator", "date": "2026-11-30", "ticket": "OPS-4242"})
    bar.pulumi("up", "--yes", "--skip-preview")
    bar.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert bar.resources() == []
    assert labelled(SLUG) == []
    assert sacctmgr("show", "account", SLUG) == []
    assert "not found" in show_partition(SLUG)
