"""Slurm's side of the command transport (`providers.command`): the one runner of Slurm's commands,
the error a failed one becomes, and what to do when a daemon does not answer. The commands run
through `LocalTransport` on this host (the sandbox, or an operator host with Slurm clients and
SLURM_CONF) or `KubectlExecTransport` in the controller pod (`kubectl -n slurm-control exec
deploy/slurmctld -- ...`), whose timeout bounds each.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TypeVar

from providers.command import CommandResult, Transport
from providers.errors import SlurmError
from providers.files import exclusive_lock
from providers.kubernetes.lease import LeaseLock

__all__ = [
    "BACKEND",
    "SLURMCTLD_UNREACHABLE",
    "SLURMDBD_UNREACHABLE",
    "SlurmCommandError",
    "SlurmRunner",
    "unreachable",
]

_T = TypeVar("_T")

# How Slurm commands are named in the benchmark's call log.
BACKEND = "slurm"

# The next step when a command fails for want of an answer: squeue, scancel, sshare and scontrol
# need slurmctld alone; sacct, sacctmgr and sdiag's accounting figures need slurmdbd behind it.
SLURMCTLD_UNREACHABLE = "check that slurmctld answers (`scontrol ping`), then run again"
SLURMDBD_UNREACHABLE = "check that slurmdbd and slurmctld answer (`sacctmgr ping`), then run again"
_NEEDS_SLURMDBD = ("sacct", "sacctmgr", "sdiag")

# One lock for every sacctmgr write from this host, whichever stack or process makes it.
WRITE_LOCK = Path(tempfile.gettempdir()) / "gpu-tenants-sacctmgr-writes.lock"
# How long a write waits for the Lease that other hosts' writes hold (each holds it briefly).
_LEASE_WAIT = 300.0
# slurmctld drops its connections while it rereads its configuration (`scontrol reconfigure`,
# which every partition change runs, so tenants brought up together meet it): a read that meets
# that moment fails with one of these and succeeds a moment later. Only reads are retried.
_TRANSIENT = (
    "Unexpected missing socket error",
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    # The connection closed mid-answer (`slurm_load_partitions error: Zero Bytes were
    # transmitted or received`), seen when four tenants' partitions changed at once.
    "Zero Bytes were transmitted or received",
)
_READ_ATTEMPTS = 4
_READ_BACKOFF = 0.5  # seconds, doubled after each attempt


def unreachable(argv: Sequence[str]) -> str:
    """The next step when the command `argv` got no answer from the daemon it needs."""
    return SLURMDBD_UNREACHABLE if argv[0] in _NEEDS_SLURMDBD else SLURMCTLD_UNREACHABLE


def _writes(argv: Sequence[str]) -> bool:
    return (
        argv[0] == "scancel"
        or (argv[0] == "sacctmgr" and "-i" in argv)
        or (argv[0] == "scontrol" and "show" not in argv)
    )


class SlurmCommandError(SlurmError):
    """A Slurm command failed. Carries the argv, return code (None: it never finished), stdout
    and stderr; the message quotes the command's own words."""

    def __init__(self, doing: str, result: CommandResult, next_step: str = "") -> None:
        self.argv = result.argv
        self.returncode = result.returncode
        self.stdout = result.stdout
        self.stderr = result.stderr
        super().__init__(doing, result.words, next_step)


class SlurmRunner:
    """Runs Slurm's commands through `transport`. sacctmgr's writes go one at a time from this
    host, and from every host that holds `write_lock` (a Lease: fleet workers on many machines);
    a read that meets slurmctld rereading its configuration is tried again a few times."""

    def __init__(self, transport: Transport, write_lock: LeaseLock | None = None) -> None:
        self.transport = transport
        self.write_lock = write_lock

    def result(self, argv: Sequence[str]) -> CommandResult:
        """Whatever came of `argv`, an answer or none: for a caller that must act on either."""
        if argv[0] == "sacctmgr" and "-i" in argv:
            # slurmdbd loses the user record of one of two `add user`s that run at once (seen on
            # 22.05: the association is there, `show user` is not), and Pulumi creates a
            # tenant's users in parallel.
            with exclusive_lock(WRITE_LOCK, 0o666), self._across_hosts():
                return self.transport.run(argv)
        result = self.transport.run(argv)
        if _writes(argv):
            return result
        for attempt in range(1, _READ_ATTEMPTS):
            if result.ok or not any(word in result.words for word in _TRANSIENT):
                break
            time.sleep(_READ_BACKOFF * 2 ** (attempt - 1))
            result = self.transport.run(argv)
        return result

    def _across_hosts(self) -> AbstractContextManager[None]:
        return self.write_lock.held(_LEASE_WAIT) if self.write_lock else nullcontext()

    def run(self, argv: Sequence[str], doing: str) -> CommandResult:
        """Runs `argv`; SlurmCommandError if it never finished. A non-zero return code is the
        caller's."""
        result = self.result(argv)
        if result.returncode is None:
            raise SlurmCommandError(doing, result, unreachable(argv))
        return result

    def must(self, argv: Sequence[str], doing: str, next_step: str | None = None) -> CommandResult:
        """Runs a command that has to succeed; SlurmCommandError with its words otherwise, and
        `next_step` (by default: to see that the daemon it needs answers)."""
        result = self.run(argv, doing)
        if not result.ok:
            raise SlurmCommandError(
                doing, result, unreachable(argv) if next_step is None else next_step
            )
        return result

    def read(self, argv: Sequence[str], doing: str, parse: Callable[[str], _T]) -> _T:
        """What `parse` makes of the output of a command that has to succeed; SlurmError when
        the output is not what `parse` expects."""
        text = self.must(argv, doing).stdout
        try:
            return parse(text)
        except ValueError as error:
            raise SlurmError(
                doing,
                f"unexpected output: {error}",
                f"run `{' '.join(argv)}` by hand to see what it prints",
            ) from None
