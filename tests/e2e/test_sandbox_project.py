"""Sandbox stacks keep their config out of the checkout: creating and selecting them, `prod`
included, with a passphrase other than production's, leaves every tracked file as it was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox.project import ROOT, STACK_CONFIG_DIR, sandbox_project

pytestmark = [pytest.mark.e2e]


def checkout_state() -> str:
    """Everything `git` would report about the checkout: status, tracked changes, and the
    untracked Pulumi files (which a stack made here would be)."""
    git = ["git", "-C", str(ROOT)]
    status = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    diff = subprocess.run([*git, "diff"], capture_output=True, text=True, check=True).stdout
    return status + diff + "\n".join(sorted(p.name for p in ROOT.glob("Pulumi.*")))


def test_creating_and_selecting_sandbox_stacks_leaves_the_checkout_unchanged(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    before = checkout_state()
    project = sandbox_project(tmp_path / "project")
    env = {**os.environ, **pulumi_backend}

    def pulumi(*args: str) -> str:
        result = subprocess.run(
            ["pulumi", *args, "--non-interactive"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, f"pulumi {' '.join(args)}:\n{result.stderr}"
        return result.stdout

    for stack in ("prod", "tenant-foo"):
        pulumi("stack", "select", "--create", stack)
        pulumi("config", "set", "--secret", "rehearsal-note", "kept in the sandbox only")
        pulumi("stack", "select", stack)
    # A second make-up of the same project (every `make sandbox-up`) keeps the stacks' files.
    sandbox_project(project)

    assert checkout_state() == before
    made = sorted(p.name for p in (project / STACK_CONFIG_DIR).iterdir())
    assert made == ["Pulumi.prod.yaml", "Pulumi.tenant-foo.yaml"]
    assert "encryptionsalt" in (project / STACK_CONFIG_DIR / "Pulumi.prod.yaml").read_text()
    # The program still reads the checkout's platform file through the project's link.
    assert (project / "Pulumi.prod.yaml").resolve() == ROOT / "Pulumi.prod.yaml"
    assert "kept in the sandbox only" in pulumi(
        "config", "get", "rehearsal-note", "--stack", "tenant-foo"
    )
