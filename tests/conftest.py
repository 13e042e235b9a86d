"""Shared fixtures. Tests run in the environment that `make -s env` prints (make test sets it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sandbox.__main__ import up
from sandbox.layout import SandboxLayout
from tests.backends import file_backend

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def pulumi_backend(tmp_path: Path) -> dict[str, str]:
    """Environment for a throwaway file backend, so tests never touch the operator's stacks."""
    if shutil.which("pulumi") is None:
        pytest.fail(
            'pulumi is not on PATH: run `make setup` and `eval "$(make -s env)"`, or `make test`'
        )
    return file_backend(tmp_path / "backend")


@pytest.fixture(scope="session")
def sandbox() -> SandboxLayout:
    """The tests' own sandbox (state and ports apart from the operator's, so `make test` never
    touches what `make demo` onboarded). It is brought up if needed and its endpoints exported to
    every tool the tests run. It is left running, so that reruns (and test sessions running side
    by side) share it: `GPU_TENANTS_SANDBOX=test make sandbox-down` stops it. Tests that use it
    name what they create uniquely and remove it again."""
    os.environ["GPU_TENANTS_SANDBOX"] = "test"
    layout = SandboxLayout.from_environment()
    up(layout)
    os.environ.update(layout.environment())
    return layout
