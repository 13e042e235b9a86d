"""Slurm's side of the command transport (`providers.command`): the error a failed sacctmgr or
scontrol becomes, and what to do when a daemon does not answer. The Slurm clients run through
`LocalTransport` on this host (the sandbox, or an operator host with Slurm clients and
SLURM_CONF) or `KubectlExecTransport` in the controller pod
(`kubectl -n slurm-control exec deploy/slurmctld -- ...`).
"""

from __future__ import annotations

from collections.abc import Sequence

from providers.command import CommandResult, Transport
from providers.errors import SlurmError

__all__ = ["BACKEND", "SLURMCTLD_UNREACHABLE", "SLURMDBD_UNREACHABLE", "SlurmCommandError", "must"]

# How Slurm commands are named in the benchmark's call log.
BACKEND = "slurm"

# The next step when a command fails for want of an answer: squeue, scancel and sshare need
# slurmctld alone; sacct, sacctmgr and sdiag's accounting figures need slurmdbd behind it too.
SLURMCTLD_UNREACHABLE = "check that slurmctld answers (`scontrol ping`), then run again"
SLURMDBD_UNREACHABLE = "check that slurmdbd and slurmctld answer (`sacctmgr ping`), then run again"


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
