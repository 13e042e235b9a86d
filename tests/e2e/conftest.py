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
    """The project with a tenants/ of its own that a test may edit. tenant-foo is marked as a
    rehearsal, so that `destroy` may delete its (empty) filesystems without an offboarding
    snapshot; the gate itself is tested in tests/contract/test_weka_provider.py."""
    return project_copy(tmp_path / "project", rehearsals=("tenant-foo",))


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
