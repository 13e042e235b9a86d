"""The tenant stacks of a project, through the Pulumi CLI (whatever backend and credentials the
operator's environment selects): which there are, what each holds, and deleting one resource of
one through the engine, so that the state and the backends agree.

Every command names its stack (`--stack`), so nothing here selects a stack in the workspace file
that other commands share, and commands on different stacks may run side by side.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenant_stack.errors import StackError, StackNotFoundError

__all__ = ["SPECS_VARIABLE", "Engine", "Running", "Stacks"]

PLATFORM_STACK = "prod"
# The specs' directory the program reads when this is set, else its project's tenants/. The
# commands that take --tenants set it for every engine they start, so that the engine applies the
# specs the command itself read.
SPECS_VARIABLE = "GPU_TENANTS_SPECS"
# The engine's events, one per line, for a `--json` preview or refresh preview (its one-document
# output leaves policy findings out; `up --json` always streams). The engine never installs a
# plugin in these commands: commands on many stacks at once would race to install it into one
# PULUMI_HOME, so a missing plugin is that stack's error (`make setup` installs every plugin once).
_NO_PLUGIN_INSTALLS = {"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true"}
_STREAMING = {"PULUMI_ENABLE_STREAMING_JSON_PREVIEW": "true", **_NO_PLUGIN_INSTALLS}
# A targeted destroy runs the delete of one resource: a store upload of a large archive is slow.
_TIMEOUT = 1800.0
# The CLI exits 255 for every error, so a missing stack is told from the others only by its words
# (`error: no stack named 'tenant-foo' found`), as Pulumi's own Automation API tells it.
_NO_STACK = "no stack named"


class Stacks:
    """The stacks of the Pulumi project in `project`, whose program reads the specs in `specs`
    (default: the project's tenants/, or $GPU_TENANTS_SPECS)."""

    def __init__(self, project: Path, specs: Path | None = None) -> None:
        self.project = project
        self._specs = {SPECS_VARIABLE: str(specs.absolute())} if specs else {}

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

    def destroy(self, stack: str, urns: Sequence[str], env: Mapping[str, str]) -> None:
        """Deletes the resources `urns` of `stack` in one engine run, protected or not, each
        through its provider (which may still refuse: its own gate), with `env` added to the
        engine's environment."""
        targets = [arg for urn in urns for arg in ("--target", urn)]
        self._pulumi(
            "destroy",
            "--stack",
            stack,
            *targets,
            "--ignore-protect",
            "--yes",
            "--skip-preview",
            env=env,
        )

    def up(self, stack: str) -> str:
        """`pulumi up` of `stack`: the engine's output."""
        return self._pulumi("up", "--stack", stack, "--yes", "--skip-preview")

    def start_write(self, *args: str) -> Running:
        """`pulumi <args>`, a command that writes to the stack, started in a session of its own:
        the engine and every plugin and program it starts stay in that session (each plugin in
        a process group of its own), which whoever finds the command orphaned (its caller
        killed) can then kill whole."""
        return self._start(*args, env=_NO_PLUGIN_INSTALLS, session=True)

    def start_up(self, stack: str) -> Running:
        """`pulumi up` of `stack` (start_write), its output the engine's events."""
        return self.start_write("up", "--json", "--yes", "--skip-preview", "--stack", stack)

    @staticmethod
    def after_killed_run(stack: str) -> tuple[tuple[str, ...], ...]:
        """The commands that make `stack` usable again after a run killed while it wrote (its
        engine surely gone), in order: `pulumi cancel` releases the lock the run held, `pulumi
        refresh --clear-pending-creates` drops the creates it began and never recorded. The
        next `up` makes those again, and our providers adopt what the dead run made by its
        ownership marks, so nothing is made twice (docs/design.md: a killed `up`)."""
        return (
            ("cancel", "--stack", stack, "--yes"),
            ("refresh", "--stack", stack, "--yes", "--skip-preview", "--clear-pending-creates"),
        )

    def refresh_preview(self, stack: str) -> Engine:
        """`pulumi refresh --preview-only` of `stack`: what each resource's provider reads live,
        against the state, as the engine's events. It changes nothing and takes no stack lock,
        so it runs beside an `up` of the same stack."""
        return self._engine("refresh", "--preview-only", "--json", "--stack", stack, env=_STREAMING)

    def init(self, stack: str, env: Mapping[str, str] | None = None) -> None:
        """`pulumi stack init` of a new, empty stack."""
        self._pulumi("stack", "init", stack, env=env)

    def preview(
        self, stack: str, env: Mapping[str, str] | None = None, policy_pack: Path | None = None
    ) -> Engine:
        """`pulumi preview` of `stack` (with the policy pack in `policy_pack`, if given): the
        steps an `up` would take and the pack's findings, as the engine's events."""
        policies = ["--policy-pack", str(policy_pack)] if policy_pack else []
        return self._engine(
            "preview", "--json", *policies, "--stack", stack, env={**_STREAMING, **(env or {})}
        )

    def _pulumi(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        result = self._engine(*args, env=env)
        if result.returncode != 0:
            said = (result.stderr.strip() or result.stdout.strip())[-2000:]
            error = StackNotFoundError if _NO_STACK in said else StackError
            raise error(f"`{result.command}` failed (exit {result.returncode}):\n{said}")
        return result.stdout

    def _engine(self, *args: str, env: Mapping[str, str] | None = None) -> Engine:
        return self._start(*args, env=env).wait()

    def _start(
        self, *args: str, env: Mapping[str, str] | None = None, session: bool = False
    ) -> Running:
        argv = ["pulumi", *args, "--non-interactive"]
        try:
            process = subprocess.Popen(
                argv,
                cwd=self.project,
                env={**os.environ, **self._specs, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=session,
            )
        except FileNotFoundError:
            raise StackError('pulumi is not on PATH (eval "$(make -s env)")') from None
        return Running(" ".join(argv), process)


@dataclass(frozen=True)
class Running:
    """A `pulumi` command that is running."""

    command: str
    process: subprocess.Popen[str]

    def wait(self) -> Engine:
        """What it printed once it ends; a StackError (and the command killed) after _TIMEOUT."""
        try:
            stdout, stderr = self.process.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise StackError(f"`{self.command}` did not finish within {_TIMEOUT:.0f}s") from None
        return Engine(self.command, self.process.returncode, stdout, stderr)


@dataclass(frozen=True)
class Engine:
    """What one `pulumi` command printed, and how it exited."""

    command: str
    returncode: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, Any]]:
        """The engine's events, from a command run with streaming JSON (one object per line)."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]
