"""Batch jobs submitted for a user and followed to their end: what runbook step 7's smoke tests do
from the login pod. Run as root (or SlurmUser) where the transport runs, the job is submitted
with `sbatch --uid --gid`, so it runs as the tenant's user exactly as their own would; its output
goes to a directory the user makes, read back as the user through the same transport: no file
work as root in a place the tenant can write.

A job is known by its id and by when slurmctld took it (its submit time). slurmdbd keeps every
run of a job id, and Slurm gives an id again once slurmctld's state is lost or its ids wrap past
MaxJobId. sacct shows the newest run of an id, and slurmctld tells slurmdbd of a pending job only
every 5 s (or when it starts), so right after sbatch that newest run is the earlier one: finished,
on its own nodes. A run submitted before the job was is not the job's.

slurmdbd can also hold a finished job with only part of its nodes: a job started from the queue
is first recorded pending on one planned node, and its end may reach slurmdbd before its start
does (seen on 22.05: a two-node job COMPLETED on `gpu-14` for one to three seconds, NNodes 2). A
record is the job's only once its NodeList names all NNodes of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from providers.command import StreamingTransport
from providers.errors import SlurmError
from providers.slurm import commands
from providers.slurm.job_history import FINISHED
from providers.slurm.transport import SlurmCommandError, SlurmRunner, unreachable

__all__ = ["BatchJobs", "JobRecord", "parse_sacct_jobs", "parse_submit_times"]

_FIELDS = "JobID,State,ExitCode,NodeList,NNodes,Submit"
# sacct's NodeList of a job that never started.
_NO_NODES = "None assigned"


@dataclass(frozen=True)
class JobRecord:
    id: str
    state: str  # COMPLETED, FAILED, RUNNING, ... (`CANCELLED by 0` read as CANCELLED)
    exit_code: str  # `0:0`: the script's code, then the signal that ended it
    nodes: str  # a hostlist, `gpu-[14-15]`, or `None assigned`
    # When slurmctld took this run of the id (sacct's Submit; a requeue moves it later). None
    # only for a record made by hand.
    submitted: datetime | None = None
    node_count: int = 0  # NNodes: how many nodes the job was given (or asked for, pending)
    # `nodes` one name each, as `BatchJobs.records` gives them (the module's docstring).
    hosts: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def parse_sacct_jobs(text: str) -> dict[str, JobRecord]:
    """`sacct -X -n -P -o JobID,State,ExitCode,NodeList,NNodes,Submit` lines, by job id. Times
    are read as sacct prints them by default (ISO 8601, the host's local time), as in
    job_history."""
    records = {}
    for line in text.splitlines():
        if line.strip():
            job, state, exit_code, nodes, count, submitted = line.split("|", 5)
            records[job] = JobRecord(
                job,
                state.split()[0],
                exit_code,
                nodes,
                datetime.fromisoformat(submitted),
                int(count),
            )
    return records


def parse_submit_times(text: str) -> dict[str, datetime]:
    """`squeue -h -o %i|%V` lines: when slurmctld took each job, by job id."""
    times = {}
    for line in text.splitlines():
        if line.strip():
            job, submitted = line.split("|", 1)
            times[job] = datetime.fromisoformat(submitted.strip())
    return times


class BatchJobs:
    def __init__(self, transport: StreamingTransport) -> None:
        self.transport = transport
        self.runner = SlurmRunner(transport)

    def make_output_dir(self, path: str, uid: int, gid: int) -> None:
        """A new directory only the user (and root) may enter, for the jobs' output; a
        SlurmCommandError, and nothing changed, when `path` exists already."""
        doing = f"making the job output directory {path} as uid {uid}"
        fresh = (
            "name a directory that does not exist yet, in one that does and that the user may write"
        )
        self.runner.must(commands.private_directory(path, uid, gid), doing, fresh)

    def submit(
        self,
        script: str,
        *,
        name: str,
        uid: int,
        gid: int,
        output: str,
        export: Mapping[str, str] | None = None,
    ) -> str:
        """Submits `script` (its #SBATCH lines hold the partition, account and resources) as
        the user `uid`; returns the job id. `output` is the job's stdout and stderr file
        (`%j` is the job id), `export` what the job gets in its environment beyond this one's."""
        exported = [f"{k}={v}" for k, v in (export or {}).items()]
        argv = commands.submit(name, uid, gid, output, exported)
        result = self.transport.feed(argv, [script.encode()])
        if not result.ok:
            doing = f"submitting the batch job {name} for uid {uid}"
            raise SlurmCommandError(doing, result, unreachable(argv))
        # --parsable prints `id` or `id;cluster`.
        return result.stdout.strip().split(";", 1)[0]

    def submit_times(self, jobs: Sequence[str]) -> dict[str, datetime]:
        """When slurmctld took each of `jobs`, by job id: asked right after `submit`, while
        slurmctld certainly holds them, for `records`."""
        doing = f"reading when slurmctld took jobs {', '.join(jobs)}"
        times = self.runner.read(commands.submit_times(jobs), doing, parse_submit_times)
        missing = [job for job in jobs if job not in times]
        if missing:
            raise SlurmError(
                doing,
                f"squeue does not list {', '.join(missing)}",
                "see `sacct -j` for what became of them",
            )
        return times

    def records(self, submitted: Mapping[str, datetime]) -> dict[str, JobRecord]:
        """The jobs (`submit_times`) as accounting has them, each by its run from its submit time
        on, with its `hosts`; a job slurmdbd has not heard of yet is not there, even if an
        earlier run of its id is, nor a finished one whose NodeList does not name all its nodes
        yet (the module's docstring)."""
        jobs = list(submitted)
        argv = commands.job_records(jobs, _FIELDS)
        doing = f"reading jobs {', '.join(jobs)} from accounting"
        records = {}
        for job, record in self.runner.read(argv, doing, parse_sacct_jobs).items():
            if job not in submitted or record.submitted is None:
                continue
            if record.submitted < submitted[job]:
                continue
            hosts = self.hostnames(record.nodes) if record.nodes != _NO_NODES else []
            if record.finished and hosts and len(hosts) < record.node_count:
                continue
            records[job] = replace(record, hosts=tuple(hosts))
        return records

    def cancel(self, jobs: Sequence[str]) -> None:
        self.runner.must(commands.cancel(jobs), f"cancelling jobs {', '.join(jobs)}")

    def read(self, path: str, uid: int, gid: int) -> str:
        """A job's output file, read as the job's user (the directory is theirs: root would
        follow a link they planted to any file); "" if it has not written one."""
        result = self.runner.result(commands.as_user(uid, gid, commands.cat(path)))
        return result.stdout if result.ok else ""

    def partition_nodes(self, partition: str) -> list[str]:
        """The nodes of `partition` as sinfo shows them, one name each; [] if there is none."""
        doing = f"listing partition {partition}'s nodes"
        shown = self.runner.must(commands.partition_nodes(partition), doing).stdout.split()
        return self.hostnames(",".join(shown)) if shown else []

    def hostnames(self, hostlist: str) -> list[str]:
        """`gpu-[14-15]` as [gpu-14, gpu-15]."""
        doing = f"expanding {hostlist}"
        return self.runner.must(commands.hostnames([hostlist]), doing).stdout.split()
