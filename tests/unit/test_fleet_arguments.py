"""The fleet commands refuse a bad argument before they reach Temporal, naming the option."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("argv", "option", "value"),
    [
        (["fleet", "schedule", "--every-seconds", "0"], "--every-seconds", "0"),
        (["fleet", "schedule", "--every-seconds", "-5"], "--every-seconds", "-5"),
        (["worker", "--concurrency", "many"], "--concurrency", "many"),
    ],
)
def test_a_bad_number_is_refused_naming_its_option(
    argv: list[str], option: str, value: str
) -> None:
    result = _command(*argv)
    assert result.returncode == 2
    assert f"argument {option}: '{value}' is not a whole number above 0" in result.stderr


@pytest.mark.parametrize("wave", ["a,,b", ",", "a,"])
def test_a_wave_naming_an_empty_stack_is_refused(wave: str) -> None:
    result = _command("fleet", "rollout", "--wave", "a", "--wave", wave)
    assert result.returncode == 2
    assert f"argument --wave: '{wave}' names an empty stack" in result.stderr


def test_a_rollout_needs_a_wave() -> None:
    result = _command("fleet", "rollout")
    assert result.returncode == 2
    assert "the following arguments are required: --wave" in result.stderr


def _command(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tenant_stack", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
