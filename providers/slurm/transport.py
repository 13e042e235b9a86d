"""Slurm's side of the command transport (`providers.command`): the default wait and the error
a failed sacctmgr or scontrol becomes. The Slurm clients run through `LocalTransport` on this host
(the sandbox, or an operator host with Slurm clients and SLURM_CONF) or `KubectlExecTransport` in
the controller pod (`kubectl -n slurm-control exec deploy/slurmctld -- ...`).
"""

from __future__ import annotations

from collections.abc import Sequence

from providers.command import CommandResult, Transport
from providers.errors import SlurmError

__all__ = ["BACKEND", "DEFAULT_TIMEOUT", "SlurmCommandError", "must"]

# How Slurm commands are named in the benchmark's call log.
BACKEND = "slurm"

# sacctmgr waits about a minute for a slurmdbd that accepts connections but does not answer, and
# scontrol retries an unreachable slurmctld for ~10 s; every read or write of the provider takes
# well under a second when both answer.
DEFAULT_TIMEOUT = 20.0


class SlurmCommandError(SlurmError):
    """A Slurm command failed. Carries the argv, return code (None: it never finished), stdout
    and stderr; the message quotes the command's own words."""

    def __init__(self, doing: str, result: CommandResult, next_step: str = "") -> None:
        self.argv = result.argv
        self.returncode = result.returncode
        self.stdout = result.stdout
        self.stderr = result.stderr
        super().__init__(doing, result.words, next_step)


def must(transport: Transport, argv: Sequence[str], doing: str, next_step: str) -> CommandResult:
    """Runs a Slurm command that has to succeed; SlurmCommandError with its words otherwise."""
    result = transport.run(argv)
    if not result.ok:
        raise SlurmCommandError(doing, result, next_step)
    return result
