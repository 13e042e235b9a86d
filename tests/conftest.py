"""Shared fixtures. Tests run in the environment that `make -s env` prints (make test sets it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.__main__ import reset, up
from sandbox.layout import SandboxLayout, name_of_tests_sandbox
from sandbox.sessions import SessionMarks
from tests import budget, scheduling
from tests.backends import file_backend

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(budget, "gpu-tenants-budget")
    config.pluginmanager.register(scheduling, "gpu-tenants-scheduling")


@pytest.fixture
def pulumi_backend(tmp_path: Path) -> dict[str, str]:
    """Environment for a throwaway file backend, so tests never touch the operator's stacks."""
    if shutil.which("pulumi") is None:
        pytest.fail(
            'pulumi is not on PATH: run `make setup` and `eval "$(make -s env)"`, or `make test`'
        )
    return file_backend(tmp_path / "backend")


def worker_sandbox() -> str:
    """The GPU_TENANTS_SANDBOX of this pytest worker's sandbox: each xdist worker (gw0, gw1, ...)
    has one of its own, because tests name tenants alike (tenant-foo) and take the slurmd nodes
    for their tenant, which two workers running side by side could not share."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return name_of_tests_sandbox(int(worker.removeprefix("gw")) + 1)


@pytest.fixture(scope="session")
def sandbox() -> Iterator[SandboxLayout]:
    """This worker's own sandbox (state and ports apart from the operator's, so `make test` never
    touches what `make demo` onboarded). It is brought up if needed and its endpoints exported to
    every tool the tests run. It is left running, so that reruns (and test sessions running side
    by side) share it: `GPU_TENANTS_SANDBOX=test make sandbox-down` stops it. Tests that use it
    name what they create uniquely and remove it again.

    A test session killed midway never removes what its tests made (a Reservation holding a node,
    a stack's objects), and later sessions would trip over it. So each session marks the sandbox
    while it runs, and the next session that finds only the marks of dead ones starts from a
    fresh sandbox."""
    os.environ["GPU_TENANTS_SANDBOX"] = worker_sandbox()
    layout = SandboxLayout.from_environment()
    sessions = SessionMarks(layout.root / "test-sessions")
    if sessions.left_by_killed_sessions():
        print(f"\n[tests] a killed test session left {layout.root} behind: starting afresh")
        reset(layout)
    up(layout)
    os.environ.update(layout.environment())
    with sessions.held():
        yield layout
