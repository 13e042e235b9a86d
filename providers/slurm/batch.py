"""Batch jobs submitted for a user and followed to their end: what runbook step 7's smoke tests do
from the login pod. Run as root (or SlurmUser) where the transport runs, the job is submitted
with `sbatch --uid --gid`, so it runs as the tenant's user exactly as their own would; its output
goes to a directory made for that user, read back through the same transport.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from providers.command import StreamingTransport
from providers.slurm.transport import SlurmCommandError, SlurmRunner, unreachable

__all__ = ["FINISHED", "BatchJobs", "JobRecord", "parse_sacct_jobs"]

# sacct's states of a job that will not run any more.
FINISHED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)

_FIELDS = "JobID,State,ExitCode,NodeList"


@dataclass(frozen=True)
class JobRecord:
    id: str
    state: str  # COMPLETED, FAILED, RUNNING, ... (`CANCELLED by 0` read as CANCELLED)
    exit_code: str  # `0:0`: the script's code, then the signal that ended it
    nodes: str  # a hostlist, `gpu-[14-15]`, or `None assigned`

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def parse_sacct_jobs(text: str) -> dict[str, JobRecord]:
    """`sacct -X -n -P -o JobID,State,ExitCode,NodeList` lines, by job id."""
    records = {}
    for line in text.splitlines():
        if line.strip():
            job, state, exit_code, nodes = line.split("|", 3)
            records[job] = JobRecord(job, state.split()[0], exit_code, nodes)
    return records


class BatchJobs:
    def __init__(self, transport: StreamingTransport) -> None:
        self.transport = transport
        self.runner = SlurmRunner(transport)

    def make_output_dir(self, path: str, uid: int, gid: int) -> None:
        """A directory only the user (and root) may enter, for the jobs' output."""
        argv = ["install", "-d", "-m", "0700", "-o", str(uid), "-g", str(gid), path]
        self.runner.must(argv, f"making the job output directory {path}", "")

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
        exported = ",".join(["ALL", *(f"{k}={v}" for k, v in (export or {}).items())])
        argv = [
            "sbatch", "--parsable", f"--job-name={name}", f"--uid={uid}", f"--gid={gid}",
            f"--output={output}", f"--export={exported}",
        ]  # fmt: skip
        result = self.transport.feed(argv, [script.encode()])
        if not result.ok:
            doing = f"submitting the batch job {name} for uid {uid}"
            raise SlurmCommandError(doing, result, unreachable(argv))
        # --parsable prints `id` or `id;cluster`.
        return result.stdout.strip().split(";", 1)[0]

    def records(self, jobs: Sequence[str]) -> dict[str, JobRecord]:
        """The jobs as accounting has them; a job just submitted may not be there yet."""
        argv = ["sacct", "-X", "-n", "-P", "-j", ",".join(jobs), "-o", _FIELDS]
        doing = f"reading jobs {', '.join(jobs)} from accounting"
        return parse_sacct_jobs(self.runner.must(argv, doing).stdout)

    def cancel(self, jobs: Sequence[str]) -> None:
        self.runner.must(["scancel", *jobs], f"cancelling jobs {', '.join(jobs)}")

    def read(self, path: str) -> str:
        """A job's output file; "" if it has not written one."""
        result = self.transport.run(["sh", "-c", f"cat {shlex.quote(path)} 2>/dev/null || true"])
        return result.stdout

    def partition_nodes(self, partition: str) -> list[str]:
        """The nodes of `partition` as sinfo shows them, one name each; [] if there is none."""
        doing = f"listing partition {partition}'s nodes"
        argv = ["sinfo", "-h", "-p", partition, "-o", "%N"]
        shown = self.runner.must(argv, doing).stdout.split()
        return self.hostnames(",".join(shown)) if shown else []

    def hostnames(self, hostlist: str) -> list[str]:
        """`gpu-[14-15]` as [gpu-14, gpu-15]."""
        argv = ["scontrol", "show", "hostnames", hostlist]
        return self.runner.must(argv, f"expanding {hostlist}").stdout.split()
