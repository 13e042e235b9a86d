"""The `gpu-tenants` command as `make setup` installs it (venv/bin's console script), run from
outside the checkout: its help, version, completion and exit statuses."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

COMMAND = ROOT / "venv" / "bin" / "gpu-tenants"
COMMANDS = {
    "new": (),
    "stage": (),
    "doctor": (),
    "smoke": (),
    "handover": (),
    "verify-offboarded": (),
    "check": (),
    "drift": (),
    "fleet": ("drift", "rollout", "stage", "schedule"),
    "worker": (),
    "status": (),
    "diagnose": (),
    "review": (),
    "retention": ("calendar", "run", "hold", "release", "erase"),
    "expiring": (),
    "usage": (),
    "import": (),
}
EVERY_COMMAND = [
    [name, *sub]
    for name, subs in COMMANDS.items()
    for sub in ([[]] if not subs else [[s] for s in subs])
]


def gpu_tenants(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    assert COMMAND.exists(), f"{COMMAND} is missing: make setup installs it"
    return subprocess.run(
        [str(COMMAND), *argv],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_names_every_command_and_how_to_enable_completion(tmp_path: Path) -> None:
    result = gpu_tenants("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: gpu-tenants")
    assert all(name in result.stdout for name in COMMANDS)
    assert 'eval "$(register-python-argcomplete gpu-tenants)"' in " ".join(result.stdout.split())


@pytest.mark.parametrize("argv", EVERY_COMMAND, ids=" ".join)
def test_every_command_has_help(argv: list[str], tmp_path: Path) -> None:
    result = gpu_tenants(*argv, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: gpu-tenants {' '.join(argv)}")


def test_version_names_the_project_the_pinned_engine_and_the_sdk(tmp_path: Path) -> None:
    pins = (ROOT / "toolchain" / "versions.sh").read_text()
    engine = next(line for line in pins.splitlines() if line.startswith("PULUMI_VERSION="))
    sdk = next(
        line for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.startswith("pulumi==")
    )  # fmt: skip
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    result = gpu_tenants("--version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"gpu-tenants {project['version']}",
        f"Pulumi engine {engine.partition('=')[2]} (pinned in toolchain/versions.sh)",
        f"Pulumi Python SDK {sdk.partition('==')[2]}",
    ]


def complete(line: str, tmp_path: Path) -> list[str]:
    """What the shell's completion offers for `line`, the cursor at its end: the script run as
    argcomplete's shell function runs it, its answer in a file."""
    answer = tmp_path / "completion"
    result = gpu_tenants(
        cwd=tmp_path,
        env={
            "_ARGCOMPLETE": "1",
            "_ARGCOMPLETE_SHELL": "bash",
            "COMP_LINE": line,
            "COMP_POINT": str(len(line)),
            "_ARGCOMPLETE_STDOUT_FILENAME": str(answer),
        },
    )
    assert result.returncode == 0, result.stderr
    return answer.read_text().split("\v")


def test_completion_offers_the_commands(tmp_path: Path) -> None:
    offered = complete("gpu-tenants ", tmp_path)
    assert {word for word in offered if not word.startswith("-")} == set(COMMANDS)
    assert [word.strip() for word in complete("gpu-tenants dri", tmp_path)] == ["drift"]
    assert set(complete("gpu-tenants retention ", tmp_path)) >= set(COMMANDS["retention"])


def test_completion_offers_a_commands_options(tmp_path: Path) -> None:
    offered = complete("gpu-tenants status --pro", tmp_path)
    assert [word.strip() for word in offered] == ["--project"]


def test_an_unknown_command_exits_2_naming_it(tmp_path: Path) -> None:
    result = gpu_tenants("no-such-command", cwd=tmp_path)
    assert result.returncode == 2
    assert "invalid choice: 'no-such-command'" in result.stderr


def test_no_command_exits_2(tmp_path: Path) -> None:
    result = gpu_tenants(cwd=tmp_path)
    assert result.returncode == 2
    assert "usage: gpu-tenants" in result.stderr


def test_python_m_tenant_stack_is_the_same_command(tmp_path: Path) -> None:
    python = ROOT / "venv" / "bin" / "python"
    result = subprocess.run(
        [str(python), "-m", "tenant_stack", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == gpu_tenants("--version", cwd=tmp_path).stdout


def test_the_specs_are_the_projects_unless_tenants_says_otherwise(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "tenants").mkdir(parents=True)
    elsewhere.mkdir()
    spec = (ROOT / "tenants" / "tenant-bar.yaml").read_text()
    (project / "tenants" / "tenant-bar.yaml").write_text(spec)
    from_project = {"GPU_TENANTS_PROJECT": str(project)}
    assert gpu_tenants("handover", "tenant-bar", cwd=tmp_path, env=from_project).returncode == 0
    assert gpu_tenants("check", cwd=tmp_path, env=from_project).stdout == "1 specs, no collision\n"
    moved = gpu_tenants("handover", "tenant-bar", "--tenants", str(elsewhere), cwd=tmp_path)
    assert moved.returncode == 2
    assert f"looked for {elsewhere / 'tenant-bar.yaml'}" in moved.stderr


@pytest.mark.parametrize("argv", [["status"], ["check"], ["expiring"], ["usage", "--json"]])
def test_a_directory_that_is_not_there_exits_2_naming_it(argv: list[str], tmp_path: Path) -> None:
    """A typo in a CI job's path must fail the job, not read as a project with no tenants."""
    missing = tmp_path / "no-such-dir"
    for option in ("--tenants", "--project"):
        result = gpu_tenants(*argv, option, str(missing), cwd=tmp_path)
        assert result.returncode == 2, (option, result.stdout, result.stderr)
        assert f"argument {option}: {missing}: no such directory" in result.stderr
    # A project without tenants/ is no project of tenants either.
    result = gpu_tenants(*argv, "--project", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"{tmp_path / 'tenants'}: no such directory" in result.stderr
