"""The tenant stacks of a project, through the Pulumi CLI (whatever backend and credentials the
operator's environment selects): which there are, what each holds, and deleting one resource of
one through the engine, so that the state and the backends agree.

Every command names its stack (`--stack`), so nothing here selects a stack in the workspace file
that other commands share.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tenant_stack.errors import StackError

__all__ = ["Stacks"]

PLATFORM_STACK = "prod"
# A targeted destroy runs the delete of one resource: a store upload of a large archive is slow.
_TIMEOUT = 1800.0


class Stacks:
    """The stacks of the Pulumi project in `project`."""

    def __init__(self, project: Path) -> None:
        self.project = project

    def tenants(self) -> list[str]:
        """Every stack but the platform's, by name (a tenant stack is named after its slug)."""
        listed = json.loads(self._pulumi("stack", "ls", "--json"))
        names = (str(stack["name"]).rsplit("/", 1)[-1] for stack in listed)
        return sorted(name for name in names if name != PLATFORM_STACK)

    def resources(self, stack: str) -> list[dict[str, Any]]:
        """The resources in `stack`'s state (secrets stay encrypted: no --show-secrets)."""
        exported = json.loads(self._pulumi("stack", "export", "--stack", stack))
        resources: list[dict[str, Any]] = exported.get("deployment", {}).get("resources") or []
        return resources

    def destroy_one(self, stack: str, urn: str, env: Mapping[str, str]) -> None:
        """Deletes the resource `urn` of `stack`, protected or not, through its provider (which
        may still refuse: its own gate), with `env` added to the engine's environment."""
        self._pulumi(
            "destroy",
            "--stack",
            stack,
            "--target",
            urn,
            "--ignore-protect",
            "--yes",
            "--skip-preview",
            env=env,
        )

    def up(self, stack: str) -> str:
        """`pulumi up` of `stack`: the engine's output."""
        return self._pulumi("up", "--stack", stack, "--yes", "--skip-preview")

    def _pulumi(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        argv = ["pulumi", *args, "--non-interactive"]
        try:
            result = subprocess.run(
                argv,
                cwd=self.project,
                env={**os.environ, **(env or {})},
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise StackError('pulumi is not on PATH (eval "$(make -s env)")') from None
        except subprocess.TimeoutExpired:
            raise StackError(f"`{' '.join(argv)}` did not finish within {_TIMEOUT:.0f}s") from None
        if result.returncode != 0:
            said = (result.stderr.strip() or result.stdout.strip())[-2000:]
            raise StackError(f"`{' '.join(argv)}` failed (exit {result.returncode}):\n{said}")
        return result.stdout
