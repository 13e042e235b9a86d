"""Fixtures of the end-to-end tests: project copies and throwaway stacks on them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pulumi import automation as auto

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project with a tenants/ of its own that a test may edit. tenant-foo and tenant-bar
    are marked as rehearsals, so that `destroy` takes them down at any stage, as the fixture
    `stacks` does after each test; the gates themselves are tested in tests/e2e/test_offboarding*.py
    and tests/contract/test_weka_*provider.py."""
    return project_copy(tmp_path / "project", rehearsals=("tenant-foo", "tenant-bar"))


@pytest.fixture
def stacks(
    project: Path, pulumi_backend: dict[str, str], sandbox: SandboxLayout
) -> Iterator[Callable[[str], auto.Stack]]:
    """Makes tenant stacks on a throwaway backend, and destroys them whatever the test did."""
    made: dict[str, auto.Stack] = {}

    def stack(name: str) -> auto.Stack:
        made[name] = auto.create_stack(
            name, work_dir=str(project), opts=auto.LocalWorkspaceOptions(env_vars=pulumi_backend)
        )
        return made[name]

    yield stack
    for created in made.values():
        created.destroy()
