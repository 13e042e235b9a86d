"""A tenant's Slurm records as offboarding archives them (runbook step 3), read with Slurm's own
tools. `sacctmgr archive dump` is cluster-wide, runs on slurmdbd's host and purges what it
archives, so it is no per-tenant step: the tenant's records are exported instead.

- jobs: `sacct -X --allusers` over the tenant's accounts for its whole lifetime, one row per job
  (`--parsable2`, a header line first); an export without a row is refused, as the runbook's
  sanity check says, since a tenant that ran jobs cannot have none.
- steps: the same without `-X`, every step of every job.
- associations: the association and QoS tree as `sacctmgr show` prints it.
- logs: the controller's and nodes' logs (SLURM_LOG_FILES), read on the Slurm host.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from providers.command import Transport
from providers.errors import SlurmError
from providers.slurm.transport import SlurmCommandError, must

__all__ = ["KINDS", "Export", "export"]

KINDS = ("jobs", "steps", "associations", "logs")
# Every field billing asks about (runbook 3b), and what tells one job from another.
_JOB_FIELDS = (
    "JobID,JobName,User,Account,Partition,QOS,ReqTRES,AllocTRES,Submit,Start,End,Elapsed,"
    "State,ExitCode,NodeList"
)
# From before any tenant: the whole lifetime, whatever the cluster's age.
_SINCE = "1970-01-01"
_UNREACHABLE = "check that slurmdbd and slurmctld answer (`sacctmgr ping`), then run again"


@dataclass(frozen=True)
class Export:
    data: bytes
    rows: int  # records (jobs, steps, associations, log lines): the header is not counted
    extension: str


def _must(transport: Transport, argv: Sequence[str], doing: str) -> str:
    return must(transport, argv, doing, _UNREACHABLE).stdout


def _sacct(transport: Transport, accounts: Sequence[str], jobs_only: bool, doing: str) -> Export:
    argv = [
        "sacct",
        *(["-X"] if jobs_only else []),
        "--allusers",
        f"--accounts={','.join(accounts)}",
        f"--starttime={_SINCE}",
        # sacct selects by eligible time, and a job cancelled while held (`--begin` later) was
        # never eligible before now: the window reaches ahead so that it is billed for too.
        "--endtime=now+3650days",
        f"--format={_JOB_FIELDS}",
        "--parsable2",
    ]
    text = _must(transport, argv, doing)
    lines = [line for line in text.splitlines() if line]
    return Export(text.encode(), max(len(lines) - 1, 0), "csv")


def export(
    transport: Transport,
    kind: str,
    accounts: Sequence[str],
    log_files: Sequence[str] = (),
    allow_empty: bool = False,
) -> Export:
    """The tenant's records of `kind`; SlurmError when Slurm fails or a job export is empty."""
    doing = f"exporting the Slurm {kind} of accounts {', '.join(accounts)}"
    if kind == "jobs":
        found = _sacct(transport, accounts, jobs_only=True, doing=doing)
        if found.rows == 0 and not allow_empty:
            raise SlurmError(
                doing,
                f"sacct lists no job of these accounts since {_SINCE}: an empty billing export",
                "check the accounts and that slurmdbd holds the tenant's history (`sacct -X "
                f"--allusers --accounts={','.join(accounts)}`); nothing was archived",
            )
        return found
    if kind == "steps":
        return _sacct(transport, accounts, jobs_only=False, doing=doing)
    if kind == "associations":
        where = f"account={','.join(accounts)}"
        assoc = _must(transport, ["sacctmgr", "-P", "show", "assoc", "where", where, "tree"], doing)
        qos = _must(transport, ["sacctmgr", "-P", "show", "qos"], doing)
        text = f"# sacctmgr show assoc where {where} tree\n{assoc}\n# sacctmgr show qos\n{qos}"
        return Export(text.encode(), max(len(assoc.splitlines()) - 1, 0), "txt")
    if kind == "logs":
        if not log_files:
            raise SlurmError(doing, "SLURM_LOG_FILES is not set", "set it to the logs' paths")
        parts = []
        for path in log_files:
            result = transport.run(["cat", path])
            if not result.ok:
                raise SlurmCommandError(
                    doing, result, "correct SLURM_LOG_FILES to the logs' paths on the Slurm host"
                )
            parts.append(f"==> {path} <==\n{result.stdout}")
        text = "\n".join(parts)
        return Export(text.encode(), len(text.splitlines()), "log")
    raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
