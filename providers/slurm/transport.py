"""The one way the Slurm provider runs a command: an argv list (never a shell string), a bounded
wait, and a result that keeps the command's own words.

Two transports, as the runbooks reach Slurm: `LocalTransport` runs the Slurm clients on this host
(the sandbox, or an operator host with Slurm clients and SLURM_CONF), `KubectlExecTransport` runs
them inside the controller pod (`kubectl -n slurm-control exec deploy/slurmctld -- ...`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from providers.call_log import record
from tenant_stack.errors import SlurmError

__all__ = [
    "DEFAULT_TIMEOUT",
    "CommandResult",
    "KubectlExecTransport",
    "LocalTransport",
    "SlurmCommandError",
    "Transport",
]

# sacctmgr waits about a minute for a slurmdbd that accepts connections but does not answer, and
# scontrol retries an unreachable slurmctld for ~10 s; every read or write of the provider takes
# well under a second when both answer.
DEFAULT_TIMEOUT = 20.0


@dataclass(frozen=True)
class CommandResult:
    """What a command did. `returncode` is None when it never finished: it timed out or could not
    be started; `stderr` then says which."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def words(self) -> str:
        """The command's own words, as the error a person reads: stderr first, then stdout."""
        said = "\n".join(part.strip() for part in (self.stderr, self.stdout) if part.strip())
        return said or f"exit status {self.returncode}, no output"


class SlurmCommandError(SlurmError):
    """A Slurm command failed. Carries the argv, return code (None: it never finished), stdout
    and stderr; the message quotes the command's own words."""

    def __init__(self, doing: str, result: CommandResult, next_step: str = "") -> None:
        self.argv = result.argv
        self.returncode = result.returncode
        self.stdout = result.stdout
        self.stderr = result.stderr
        super().__init__(doing, result.words, next_step)


class Transport(Protocol):
    def command(self, argv: Sequence[str]) -> list[str]:
        """The argv actually run for a Slurm command `argv` (["sacctmgr", ...])."""

    def run(self, argv: Sequence[str]) -> CommandResult:
        """Runs a Slurm command and returns its result; never raises for the command's failure."""


def _execute(
    argv: Sequence[str], full: list[str], env: dict[str, str] | None, timeout: float
) -> CommandResult:
    record("slurm", " ".join(a for a in argv[:3] if not a.startswith("-")))
    try:
        done = subprocess.run(
            full,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        return CommandResult(
            tuple(argv),
            None,
            _text(expired.stdout),
            f"{_text(expired.stderr)}\n{full[0]} gave no answer within {timeout:g} s (is the "
            "Slurm controller or slurmdbd down?)".strip(),
        )
    except OSError as error:
        return CommandResult(tuple(argv), None, "", f"could not run {full[0]}: {error}")
    return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


def _text(output: str | bytes | None) -> str:
    # TimeoutExpired keeps what was read so far as bytes even when the run asked for text.
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@dataclass(frozen=True, kw_only=True)
class LocalTransport:
    """Runs Slurm clients on this host, with SLURM_CONF set when `slurm_conf` is given."""

    slurm_conf: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        env = dict(os.environ)
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        return _execute(argv, self.command(argv), env, self.timeout)


@dataclass(frozen=True, kw_only=True)
class KubectlExecTransport:
    """Runs Slurm clients in the controller pod, as the runbooks do. kubectl finds its cluster as
    usual (KUBECONFIG); the pod's own slurm.conf applies there."""

    namespace: str = "slurm-control"
    target: str = "deploy/slurmctld"
    timeout: float = DEFAULT_TIMEOUT

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["kubectl", "-n", self.namespace, "exec", self.target, "--", *argv]

    def run(self, argv: Sequence[str]) -> CommandResult:
        return _execute(argv, self.command(argv), None, self.timeout)
