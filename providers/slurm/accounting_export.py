"""A tenant's Slurm records as offboarding archives them (runbook step 3), read with Slurm's own
tools. `sacctmgr archive dump` is cluster-wide, runs on slurmdbd's host and purges what it
archives, so it is no per-tenant step: the tenant's records are exported instead.

- jobs: `sacct -X --allusers` over the tenant's accounts for its whole lifetime, one row per job
  (`--parsable2`, a header line first); an export without a row is refused, as the runbook's
  sanity check says, since a tenant that ran jobs cannot have none. slurmdbd learns of a job
  after slurmctld: the export waits, bounded, until slurmdbd holds every job of the accounts that
  slurmctld knows, with its end, so a job that ended just before is not missing from the billing
  archive (see `wait_for_accounting`).
- steps: the same without `-X`, every step of every job.
- associations: the association and QoS tree as `sacctmgr show` prints it.
- logs (`export_logs`): the lines of the controller's logs (SLURM_LOG_FILES, read on the Slurm
  host) and of the slurmd log of each node of the tenant's reservation and each node its jobs
  ran on (read where it lives, `node_logs`; a node whose log cannot be read is named with why,
  and the rest is archived) that are the tenant's (runbook 3c): those naming one of its jobs, and
  those naming none
  of another's but one of its accounts or nodes, or one of its users in the forms Slurm logs a
  user in (`user alice`, `alice(2147)`, `uid=2147`). The logs are the whole cluster's, and
  another tenant's jobs are no part of this one's archive.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from providers.command import Transport
from providers.errors import SlurmError
from providers.slurm import commands, sacctmgr
from providers.slurm.job_history import FINISHED, JOB_FIELDS, NOT_YET
from providers.slurm.node_logs import read_node_logs
from providers.slurm.settings import Settings
from providers.slurm.transport import SLURMDBD_UNREACHABLE, SlurmCommandError, SlurmRunner

__all__ = ["KINDS", "Export", "export", "export_logs", "tenant_lines", "wait_for_accounting"]

KINDS = ("jobs", "steps", "associations", "logs")
# From before any tenant: the whole lifetime, whatever the cluster's age.
_SINCE = "1970-01-01"
# sacct selects by eligible time, and a job cancelled while held (`--begin` later) was never
# eligible before now: the window reaches ahead so that it is billed for too.
_UNTIL = "now+3650days"


# How Slurm's daemons name a job in a log line: `JobId=123`, `StepId=123.0`, `job 123`,
# `job_id:123`, slurmd's `[123.batch]` prefix (an array task as `JobId=123_4(127)`: both ids).
_JOB_ID = re.compile(
    r"(?:\bJob[Ii][Dd]=|\bStepId=|\bjob[ _]id[=:]\s?|\bjob |\[)([0-9]+)(?:_[0-9]+\(([0-9]+)\))?"
    r"(?=[]._ (),:]|$)"
)


@dataclass(frozen=True)
class Export:
    data: bytes
    rows: int  # records (jobs, steps, associations, log lines): the header is not counted
    extension: str
    unread: Mapping[str, str] = field(default_factory=dict)  # logs: node -> why not read


# How long an export waits for slurmdbd to hold what slurmctld knows, and how often it looks:
# records slurmdbd takes arrive within seconds; one still missing after this is a slurmdbd that
# does not take them, which an operator must see to.
DBD_QUEUE_WAIT = 120.0
_DBD_QUEUE_POLL = 1.0
_DBD_QUEUE = re.compile(r"^DBD Agent queue size:\s*([0-9]+)", re.MULTILINE)
# The jobs slurmctld knows (squeue's fields: id, state, submit time, which squeue prints as sacct
# does, and nodes), and what slurmdbd holds of them (sacct's): a run of a job is its id and submit
# time, since slurmctld may give an id again (its state lost, or ids wrapped past MaxJobId).
_KNOWN = "%i|%T|%V|%N"
_HELD = "JobID,Submit,End,NodeList"


@dataclass(frozen=True)
class _Known:
    """A run of a job as slurmctld knows it."""

    id: str
    state: str
    submit: str
    # Its hostlist; "" before it starts. Of a COMPLETING job, squeue names only the nodes that
    # have not finished yet.
    nodes: str

    def __str__(self) -> str:
        return f"{self.id} ({self.state.lower()}, submitted {self.submit})"


def _parse_known(text: str) -> list[_Known]:
    jobs = []
    for line in text.splitlines():
        if line.strip():
            id_, state, submit, nodes = line.split("|", 3)
            # A pending array's tasks to come ("12_[3-9]") have no record anywhere yet.
            if "[" not in id_:
                jobs.append(_Known(id_, state, submit, nodes))
    return jobs


def wait_for_accounting(
    transport: Transport,
    doing: str,
    accounts: Sequence[str] = (),
    timeout: float = DBD_QUEUE_WAIT,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Returns once slurmdbd holds what slurmctld has of `accounts`: no record queued for
    slurmdbd (`sdiag`), and every job of the accounts that slurmctld still knows (`squeue
    --states=all`) in sacct, with its end once it ended. SlurmError naming the queue's size or
    the jobs missing when that is still not so after `timeout` seconds.

    The queue alone proves too little: it holds what slurmctld's agent sends (a job's end among
    it), but slurmctld sends a job's start itself, as the job starts and every few seconds for
    jobs without a record, and a queue seen empty once may be between two records. sacct is
    asked only once the queue is empty, so a slurmdbd that does not answer is not asked
    meanwhile (sacct would wait on it)."""
    runner = SlurmRunner(transport)
    deadline = time.monotonic() + timeout
    while True:
        queued = _dbd_queue(runner, doing)
        missing = _not_held(runner, accounts, doing) if queued == 0 else []
        if queued == 0 and not missing:
            return
        if time.monotonic() >= deadline:
            raise _not_in_accounting(doing, accounts, queued, missing, timeout)
        sleep(_DBD_QUEUE_POLL)


def _dbd_queue(runner: SlurmRunner, doing: str) -> int:
    """How many records slurmctld holds for slurmdbd (sdiag's DBD Agent queue size)."""
    said = runner.must(commands.sdiag(), doing).stdout
    found = _DBD_QUEUE.search(said)
    if found is None:
        raise SlurmError(doing, "sdiag printed no 'DBD Agent queue size'", SLURMDBD_UNREACHABLE)
    return int(found.group(1))


def _not_held(runner: SlurmRunner, accounts: Sequence[str], doing: str) -> list[_Known]:
    """The jobs of `accounts` slurmctld knows that slurmdbd does not hold, or holds without the
    end or the nodes slurmctld knows of. Jobs slurmctld no longer holds (MinJobAge after their
    end) it sent through its queue before it let them go.

    A job's end can reach slurmdbd before its start does: slurmdbd then holds it finished on the
    one node it was planned on while pending (seen on 22.05: a two-node job COMPLETED on
    `gpu-14` for one to three seconds), and jobs.csv would say so."""
    if not accounts:
        return []
    known = runner.read(commands.known_jobs(accounts, _KNOWN), doing, _parse_known)
    if not known:
        return []
    since = min(job.submit for job in known)
    argv = commands.sacct(accounts, since, _UNTIL, _HELD, header=False)
    held: dict[tuple[str, str], tuple[str, str]] = {}
    for line in runner.must(argv, doing).stdout.splitlines():
        fields = line.split("|")
        if len(fields) == 4:
            held[(fields[0], fields[1])] = (fields[2], fields[3])
    missing = []
    for job in known:
        end, nodes = held.get((job.id, job.submit), (None, None))
        if (
            end is None
            or (job.state in FINISHED and end in NOT_YET)
            or (job.nodes and job.state != "COMPLETING" and nodes != job.nodes)
        ):
            missing.append(job)
    return missing


def _not_in_accounting(
    doing: str, accounts: Sequence[str], queued: int, missing: list[_Known], timeout: float
) -> SlurmError:
    if not missing:
        return SlurmError(
            doing,
            f"slurmctld still holds {queued} records for slurmdbd after {timeout:g} s "
            "(sdiag's DBD Agent queue size): the export would miss jobs",
            "check slurmdbd (`sacctmgr ping`, its log) and run `pulumi up` again once "
            "`sdiag` shows the queue empty; nothing was archived",
        )
    listed = ", ".join(str(job) for job in missing[:10])
    more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
    ids = ",".join(job.id for job in missing)
    return SlurmError(
        doing,
        f"slurmdbd still lacks {len(missing)} jobs of accounts {', '.join(accounts)} that "
        f"slurmctld knows, or their end, after {timeout:g} s ({listed}{more}): the export "
        "would miss them",
        "check slurmdbd (`sacctmgr ping`, its log) and run `pulumi up` again once `sacct -X "
        f"--duplicates --allusers --jobs={ids} --format=JobID,Submit,End` lists each with its "
        "end; nothing was archived",
    )


def _sacct(runner: SlurmRunner, accounts: Sequence[str], jobs_only: bool, doing: str) -> Export:
    argv = commands.sacct(accounts, _SINCE, _UNTIL, JOB_FIELDS, jobs_only=jobs_only)
    text = runner.must(argv, doing).stdout
    lines = [line for line in text.splitlines() if line]
    return Export(text.encode(), max(len(lines) - 1, 0), "csv")


def _doing(kind: str, accounts: Sequence[str]) -> str:
    return f"exporting the Slurm {kind} of accounts {', '.join(accounts)}"


def export(
    transport: Transport, kind: str, accounts: Sequence[str], allow_empty: bool = False
) -> Export:
    """The tenant's records of `kind` (jobs, steps or associations); SlurmError when Slurm fails
    or a job export is empty."""
    doing = _doing(kind, accounts)
    runner = SlurmRunner(transport)
    if kind in ("jobs", "steps"):
        wait_for_accounting(transport, doing, accounts)
    if kind == "jobs":
        found = _sacct(runner, accounts, jobs_only=True, doing=doing)
        if found.rows == 0 and not allow_empty:
            raise SlurmError(
                doing,
                f"sacct lists no job of these accounts since {_SINCE}: an empty billing export",
                "check the accounts and that slurmdbd holds the tenant's history (`sacct -X "
                f"--allusers --accounts={','.join(accounts)}`); nothing was archived",
            )
        return found
    if kind == "steps":
        return _sacct(runner, accounts, jobs_only=False, doing=doing)
    if kind == "associations":
        tree, every_qos = sacctmgr.show_tree(accounts), sacctmgr.show_all_qos()
        assoc = runner.must(tree, doing).stdout
        qos = runner.must(every_qos, doing).stdout
        text = f"# {_shown(tree)}\n{assoc}\n# {_shown(every_qos)}\n{qos}"
        return Export(text.encode(), max(len(assoc.splitlines()) - 1, 0), "txt")
    raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")


def _shown(argv: Sequence[str]) -> str:
    # As the archive's header names the command: its words, without the output options.
    return " ".join(arg for arg in argv if not arg.startswith("-"))


def export_logs(settings: Settings, accounts: Sequence[str], nodes: Sequence[str]) -> Export:
    """The tenant's lines of the controller's logs and of the slurmd logs of `nodes` (its
    reservation's) and of the nodes its jobs ran on; SlurmError when Slurm or a controller log
    fails. A node whose log cannot be read is in `unread`, with why."""
    doing = _doing("logs", accounts)
    log_files = settings.log_files
    if not log_files:
        raise SlurmError(doing, "SLURM_LOG_FILES is not set", "set it to the logs' paths")
    transport = settings.make_transport()
    wait_for_accounting(transport, doing, accounts)
    runner = SlurmRunner(transport)
    argv = commands.sacct(
        accounts, _SINCE, _UNTIL, "JobID,JobIDRaw,User,UID,NodeList", header=False
    )
    jobs: set[str] = set()
    names = set(accounts)
    users: dict[str, str] = {}
    nodelists = set()
    for line in runner.must(argv, doing).stdout.splitlines():
        fields = line.split("|")
        if len(fields) != 5:
            continue
        job, raw, user, uid, nodelist = fields
        jobs.update(part for part in (job.split("_")[0], raw) if part.isdigit())
        if user and uid.isdigit():
            users[user] = uid
        if nodelist and nodelist != "None assigned":
            nodelists.add(nodelist)
    ran_on: set[str] = set()
    if nodelists:
        hostnames = commands.hostnames(sorted(nodelists))
        ran_on.update(runner.must(hostnames, doing, SLURMDBD_UNREACHABLE).stdout.split())
    names.update(ran_on)
    logs: dict[str, str] = {}
    for path in log_files:
        result = runner.result(commands.cat(path))
        if not result.ok:
            raise SlurmCommandError(
                doing, result, "correct SLURM_LOG_FILES to the logs' paths on the Slurm host"
            )
        logs[path] = result.stdout
    node_logs = read_node_logs(settings, sorted(ran_on | set(nodes)))
    logs.update((f"slurmd on {node}", text) for node, text in node_logs.read.items())
    parts, kept = [], 0
    for source, text in logs.items():
        lines = tenant_lines(text.splitlines(), jobs, names, users)
        kept += len(lines)
        parts.append("\n".join([f"==> {source} <==", *lines]))
    unread = node_logs.unread
    parts += [f"==> slurmd on {node}: not read: {why} <==" for node, why in unread.items()]
    return Export(("\n".join(parts) + "\n").encode(), kept, "log", unread)


def tenant_lines(
    lines: Iterable[str], jobs: set[str], names: set[str], users: Mapping[str, str]
) -> list[str]:
    """The lines that are the tenant's: naming one of its `jobs` (ids), or naming no job of
    another's and one of its `names` (accounts, nodes) as a whole word or one of its `users`
    (username: uid) as Slurm logs a user. A username alone is an ordinary word too (a user may
    be called `error` or `launch`), which would pull in every tenant's lines with that word."""
    forms = [_whole_word(names)] if names else []
    if users:
        usernames = "|".join(re.escape(user) for user in sorted(users))
        uids = "|".join(sorted(set(users.values())))
        forms += [
            rf"\b(?i:user)[=: ]\s?'?(?:{usernames}|{uids})'?(?![\w.-])",
            rf"(?<![\w.-])(?:{usernames})\([0-9]+\)",
            rf"\b(?i:uid)[=: ]\s?(?:{uids})(?![0-9])",
        ]
    tenants = re.compile("|".join(forms)) if forms else None
    kept = []
    for line in lines:
        mentioned = {i for match in _JOB_ID.finditer(line) for i in match.groups() if i}
        if mentioned - jobs:
            continue
        if mentioned or (tenants is not None and tenants.search(line)):
            kept.append(line)
    return kept


def _whole_word(names: set[str]) -> str:
    return r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?![\w-])"
