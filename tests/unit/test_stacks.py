"""How `Stacks` tells a missing stack from the engine's other failures: the CLI exits 255 for
both, so a stand-in `pulumi` on PATH prints each message as the real one does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenant_stack.errors import StackError, StackNotFoundError
from tenant_stack.stacks import Stacks


def stand_in_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str) -> Stacks:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pulumi = bin_dir / "pulumi"
    pulumi.write_text(f"#!/bin/sh\necho {said!r} >&2\nexit 255\n")
    pulumi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return Stacks(tmp_path)


def test_a_missing_stack_is_stack_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stacks = stand_in_pulumi(tmp_path, monkeypatch, "error: no stack named 'tenant-x' found")
    with pytest.raises(StackNotFoundError, match="no stack named 'tenant-x' found"):
        stacks.resources("tenant-x")


def test_any_other_failure_is_a_stack_error_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stacks = stand_in_pulumi(tmp_path, monkeypatch, "error: could not decrypt the state")
    with pytest.raises(StackError, match="could not decrypt") as raised:
        stacks.resources("tenant-x")
    assert not isinstance(raised.value, StackNotFoundError)
