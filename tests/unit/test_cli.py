"""The `gpu-tenants` command as `make setup` installs it (venv/bin's console script), run from
outside the checkout: its help, version, completion and exit statuses, a path that is not there,
a reader that went away and Ctrl-C included."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tomllib
from pathlib import Path

import pytest

from tenant_stack.commands import diagnose, main
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
    "completion": (),
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
    assert '\n  eval "$(gpu-tenants completion bash)"\n' in result.stdout


@pytest.mark.parametrize("argv", EVERY_COMMAND, ids=" ".join)
def test_every_command_has_help_with_its_exit_statuses_and_examples(
    argv: list[str], tmp_path: Path
) -> None:
    result = gpu_tenants(*argv, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: gpu-tenants {' '.join(argv)}")
    assert "Exit status: 0 " in result.stdout, "every command states its exit statuses"
    examples = result.stdout.split("\nExamples:\n", 1)[1].splitlines()
    # Each example a comment, then the command as written, unwrapped.
    assert examples[0].startswith("  # ")
    assert examples[1].startswith("  ")
    assert f"gpu-tenants {' '.join(argv)}" in examples[1]


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


def test_no_command_prints_the_help(tmp_path: Path) -> None:
    result = gpu_tenants(cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == gpu_tenants("--help", cwd=tmp_path).stdout


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["stauts"], "status"),
        (["retention", "calender"], "calendar"),
        (["fleet", "rolout"], "rollout"),
        (["stage", "tenant-foo", "frozn"], "frozen"),
        (["status", "-o", "jsn"], "json"),
    ],
    ids=" ".join,
)
def test_a_mistyped_command_or_choice_says_what_was_meant(
    argv: list[str], meant: str, tmp_path: Path
) -> None:
    result = gpu_tenants(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert f"invalid choice: {argv[-1]!r} (choose from " in result.stderr
    assert result.stderr.rstrip().endswith(f"); did you mean {meant!r}?")


def test_a_mistyped_slug_says_which_tenant_was_meant(tmp_path: Path) -> None:
    tenants = str(ROOT / "tenants")
    result = gpu_tenants("handover", "tenant-fo", "--tenants", tenants, cwd=tmp_path)
    assert result.returncode == 2
    assert "no spec for stack 'tenant-fo'" in result.stderr
    assert "did you mean 'tenant-foo'? specs that exist: tenant-bar.yaml, tenant-foo.yaml" in (
        result.stderr
    )


def test_o_json_is_the_json_flag_and_o_table_the_text(tmp_path: Path) -> None:
    tenants = ("--tenants", str(ROOT / "tenants"))
    as_json = gpu_tenants("check", *tenants, "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["specs"] == ["tenant-bar.yaml", "tenant-foo.yaml"]
    assert gpu_tenants("check", *tenants, "-o", "json", cwd=tmp_path).stdout == as_json.stdout
    as_table = gpu_tenants("check", *tenants, "-o", "table", cwd=tmp_path)
    assert as_table.stdout == gpu_tenants("check", *tenants, cwd=tmp_path).stdout
    assert not as_table.stdout.startswith("{")
    both = gpu_tenants("check", *tenants, "-o", "table", "--json", cwd=tmp_path)
    assert both.returncode == 2
    assert "not allowed with argument -o/--output" in both.stderr


def test_the_bash_completion_code_registers_the_command(tmp_path: Path) -> None:
    code = gpu_tenants("completion", "bash", cwd=tmp_path)
    assert code.returncode == 0, code.stderr
    (tmp_path / "completion.bash").write_text(code.stdout)
    registered = subprocess.run(
        ["bash", "-c", "source completion.bash && complete -p gpu-tenants"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert registered.returncode == 0, registered.stderr
    assert registered.stdout.rstrip().endswith(" gpu-tenants")
    zsh = gpu_tenants("completion", "zsh", cwd=tmp_path)
    assert zsh.returncode == 0, zsh.stderr
    assert zsh.stdout.startswith("#compdef gpu-tenants")


def test_completion_offers_the_tenants_slugs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "tenants").mkdir(parents=True)
    for slug in ("tenant-foo", "tenant-fox", "tenant-bar"):
        (project / "tenants" / f"{slug}.yaml").write_text("")
    offered = complete(f"gpu-tenants diagnose --project {project} tenant-fo", tmp_path)
    assert sorted(word.strip() for word in offered) == ["tenant-foo", "tenant-fox"]
    offered = complete(f"gpu-tenants status --tenants {project / 'tenants'} tenant-b", tmp_path)
    assert [word.strip() for word in offered] == ["tenant-bar"]


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


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["usage", "--csv", "{missing}/rows.csv"], "--csv"),
        (["usage", "--charts", "{missing}/charts"], "--charts"),
        (["review", "--base", "main", "--markdown", "{missing}/review.md"], "--markdown"),
        (["review", "--base", "main", "--json-file", "{missing}/review.json"], "--json-file"),
    ],
)
def test_a_path_that_cannot_be_written_exits_2_before_anything_runs(
    argv: list[str], option: str, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir"
    given = [arg.format(missing=missing) for arg in argv]
    result = gpu_tenants(*given, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"argument {option}: {missing}/" in result.stderr
    assert f"{missing} is not a directory this user can write" in result.stderr


def closed_pipe_run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command with its output going to a pipe nobody reads any more (`| head` done)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [str(COMMAND), *argv], cwd=cwd, stdout=write, stderr=subprocess.PIPE, text=True,
            timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write)


def test_a_closed_pipe_ends_every_command_quietly(tmp_path: Path) -> None:
    for argv in [[], *EVERY_COMMAND]:
        result = closed_pipe_run(*argv, "--help", cwd=tmp_path)
        assert (result.returncode, result.stderr) in ((0, ""), (141, "")), (argv, result.stderr)
    result = closed_pipe_run("check", "--tenants", str(ROOT / "tenants"), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (141, "")


def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    """doctor interrupted while it waits on a backend that never answers."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AUTHENTIK_")}
        env["AUTHENTIK_URL"] = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env["AUTHENTIK_TOKEN"] = "never-checked"
        # Its read's bound (20 s by default) is the one way doctor can finish before the signal
        # comes: exit 1 with every check reported, as a run on three workers once saw.
        doctor = subprocess.Popen(
            [str(COMMAND), "doctor", "--project", str(ROOT), "--timeout", "300"], cwd=tmp_path,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        silent.settimeout(60)
        connection, _ = silent.accept()  # doctor waits on its answer now
        with connection:
            doctor.send_signal(signal.SIGINT)
            out, err = doctor.communicate(timeout=60)
    assert doctor.returncode == 130, (out, err)
    assert err == "gpu-tenants: interrupted\n"


def test_an_unexpected_error_exits_2_with_its_traceback_not_1_as_a_finding(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """diagnose's 1 means problems found: a bug in a check must not read as one."""

    def broken(args: object) -> int:
        raise KeyError("spec")

    monkeypatch.setattr(diagnose, "run", broken)
    assert main(["diagnose", "tenant-foo"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "KeyError: 'spec'" in err
    assert err.endswith(
        "gpu-tenants diagnose: failed unexpectedly (the traceback above says where); nothing it "
        "reported is complete: report it with the traceback\n"
    )


def test_a_tenant_without_a_stack_is_not_onboarded_yet_and_nothing_of_it_is_read(
    tmp_path: Path,
) -> None:
    """tenant-bar has a spec and no stack: status and diagnose say so, and name the first up,
    without reading a backend (none answers here)."""
    project = tmp_path / "project"
    (project / "tenants").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (project / "tenants" / "tenant-bar.yaml").write_text(
        (ROOT / "tenants" / "tenant-bar.yaml").read_text()
    )
    (tmp_path / "backend").mkdir()
    nowhere = "http://127.0.0.1:9"  # the discard port: nothing answers there
    env = {
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}",
        "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
        "AUTHENTIK_URL": nowhere,
        "WEKA_URL": nowhere,
    }
    first_up = "not onboarded yet: there is no stack tenant-bar; `pulumi stack init tenant-bar`"
    said = gpu_tenants("status", "--json", "--project", str(project), cwd=tmp_path, env=env)
    assert said.returncode == 1, said.stderr
    [report] = json.loads(said.stdout)["tenants"]
    assert {c["reason"] for c in report["conditions"]} == {"NotOnboarded"}
    assert report["ready"] is False
    said = gpu_tenants("status", "--project", str(project), cwd=tmp_path, env=env)
    assert f"tenant-bar: {first_up}" in said.stdout
    said = gpu_tenants("diagnose", "tenant-bar", "--project", str(project), cwd=tmp_path, env=env)
    assert said.returncode == 1, said.stderr
    assert said.stdout.startswith(f"tenant-bar: {first_up}")


def test_the_sample_tenants_are_valid_today(tmp_path: Path) -> None:
    """A newcomer's first `check` and `expiring` on the repository's samples pass: when this
    fails with time, move the samples' contract.term.end on, as a renewal would."""
    tenants = ("--tenants", str(ROOT / "tenants"))
    checked = gpu_tenants("check", *tenants, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    expiring = gpu_tenants("expiring", *tenants, cwd=tmp_path)
    assert expiring.returncode == 0, expiring.stdout + expiring.stderr
