"""The one way a provider runs a command on a host: an argv list (never a shell string), a
bounded wait, and a result that keeps the command's own words.

Two transports, as the runbooks reach the cluster: `LocalTransport` runs the command on this
host, `KubectlExecTransport` runs it inside a pod (`kubectl -n NS exec TARGET -- ...`). The Slurm
provider runs sacctmgr and scontrol through them; the Weka directory provider runs mkdir, chown
and stat on a host or pod that mounts the Weka filesystems.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from providers import environment
from providers.call_log import record

__all__ = [
    "CommandResult",
    "KubectlExecTransport",
    "LocalTransport",
    "Transport",
    "TransportSettings",
]


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


class Transport(Protocol):
    def command(self, argv: Sequence[str]) -> list[str]:
        """The argv actually run for the command `argv`."""

    def run(self, argv: Sequence[str]) -> CommandResult:
        """Runs the command and returns its result; never raises for the command's failure."""


def _execute(
    backend: str,
    argv: Sequence[str],
    full: list[str],
    env: dict[str, str] | None,
    timeout: float,
) -> CommandResult:
    started = time.perf_counter()
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
            f"{_text(expired.stderr)}\n{full[0]} gave no answer within {timeout:g} s".strip(),
        )
    except OSError as error:
        return CommandResult(tuple(argv), None, "", f"could not run {full[0]}: {error}")
    finally:
        call = " ".join(a for a in argv[:3] if not a.startswith("-"))
        record(backend, call, time.perf_counter() - started)
    return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


def _text(output: str | bytes | None) -> str:
    # TimeoutExpired keeps what was read so far as bytes even when the run asked for text.
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


@dataclass(frozen=True, kw_only=True)
class LocalTransport:
    """Runs commands on this host, with `env` added to this process's environment. `backend`
    names the calls in the benchmark's call log."""

    backend: str
    timeout: float
    env: Mapping[str, str] = field(default_factory=dict)

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        return _execute(
            self.backend, argv, self.command(argv), {**os.environ, **self.env}, self.timeout
        )


@dataclass(frozen=True, kw_only=True)
class KubectlExecTransport:
    """Runs commands in a pod, as the runbooks do. kubectl finds its cluster as usual
    (KUBECONFIG); the pod's own configuration applies there."""

    backend: str
    timeout: float
    namespace: str
    target: str

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["kubectl", "-n", self.namespace, "exec", self.target, "--", *argv]

    def run(self, argv: Sequence[str]) -> CommandResult:
        return _execute(self.backend, argv, self.command(argv), None, self.timeout)


@dataclass(frozen=True, kw_only=True)
class TransportSettings:
    """How to reach a host that runs a provider's commands, read from `<PREFIX>_TRANSPORT`
    (`local` or `kubectl`), `<PREFIX>_TIMEOUT` (seconds), `<PREFIX>_KUBECTL_NAMESPACE` and
    `<PREFIX>_KUBECTL_TARGET`."""

    kind: str
    timeout: float
    namespace: str
    target: str

    @classmethod
    def from_environment(
        cls, env: Mapping[str, str], prefix: str, *, namespace: str, target: str
    ) -> TransportSettings:
        """The settings, or ValueError naming the variable that is wrong and how to fix it."""
        kind = env.get(f"{prefix}_TRANSPORT") or "local"
        if kind not in ("local", "kubectl"):
            raise ValueError(f"{prefix}_TRANSPORT={kind!r}: set it to 'local' or 'kubectl'")
        return cls(
            kind=kind,
            timeout=environment.seconds(env, f"{prefix}_TIMEOUT", "20"),
            namespace=env.get(f"{prefix}_KUBECTL_NAMESPACE") or namespace,
            target=env.get(f"{prefix}_KUBECTL_TARGET") or target,
        )

    def make(self, backend: str, local_env: Mapping[str, str] | None = None) -> Transport:
        """The transport; `local_env` is added to the environment of local commands."""
        if self.kind == "kubectl":
            return KubectlExecTransport(
                backend=backend, timeout=self.timeout, namespace=self.namespace, target=self.target
            )
        return LocalTransport(backend=backend, timeout=self.timeout, env=dict(local_env or {}))
