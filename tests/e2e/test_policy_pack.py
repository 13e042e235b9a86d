"""The policy pack (policy/) run by the engine through the project's own language host: the
program as it is passes it; a program changed to break its rules fails `pulumi preview` and
`review`, naming each policy and resource. Previews only, of stacks that do not exist yet."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox.project import project_copy
from tests.backends import ROOT, file_backend, operator_command, pulumi, run_pulumi

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

PACK = ROOT / "policy"


def test_the_program_as_it_is_passes_every_policy(tmp_path: Path) -> None:
    project = project_copy(tmp_path / "project")
    env = file_backend(tmp_path / "backend")
    run_pulumi(env, project, "stack", "init", "tenant-bar")
    previewed = pulumi(env, project, "preview", "--stack", "tenant-bar", "--policy-pack", str(PACK))
    assert previewed.returncode == 0, previewed.stdout + previewed.stderr
    assert "gpu-tenants@v1.0.0" in previewed.stdout


def test_a_program_that_breaks_the_rules_fails_preview_and_review(tmp_path: Path) -> None:
    project = project_copy(tmp_path / "project")
    (project / "tenant_stack").unlink()
    shutil.copytree(
        ROOT / "tenant_stack",
        project / "tenant_stack",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    git = ["git", "-c", "user.name=R", "-c", "user.email=r@example.invalid"]
    for args in (["init", "--quiet"], ["add", "--all"], ["commit", "--quiet", "-m", "base"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    reservation = project / "tenant_stack" / "components" / "capacity_reservation.py"
    reservation.write_text(
        reservation.read_text().replace('"evictOnRelease": False', '"evictOnRelease": True')
    )
    env = file_backend(tmp_path / "backend")
    run_pulumi(env, project, "stack", "init", "tenant-bar")

    previewed = pulumi(env, project, "preview", "--stack", "tenant-bar", "--policy-pack", str(PACK))
    assert previewed.returncode != 0
    assert "reservation-keeps-workloads" in previewed.stdout
    assert "mandatory" in previewed.stdout

    reviewed = operator_command("review", "--base", "HEAD", "--json", "--project", project, env=env)
    assert reviewed.returncode == 1, reviewed.stderr
    report = json.loads(reviewed.stdout)
    assert report["touched"]["program"] == ["tenant_stack/components/capacity_reservation.py"]
    for tenant in report["tenants"]:
        assert tenant["status"] == "failed"
        assert {(v["policy"], v["level"], v["resource"]) for v in tenant["violations"]} == {
            ("reservation-keeps-workloads", "mandatory", f"{tenant['tenant']}-reservation")
        }
        assert tenant["error"].startswith("[mandatory] reservation-keeps-workloads on ")
