"""The argv of Slurm's commands other than sacctmgr's (which `sacctmgr` builds from the field
table): scontrol, squeue, scancel, sshare, sacct, sdiag, sinfo and sbatch, each written here
once, for `transport.SlurmRunner` to run.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "cancel",
    "cancel_pending",
    "cat",
    "hostnames",
    "job_records",
    "jobs_in_partition",
    "known_jobs",
    "partition_nodes",
    "private_directory",
    "queue",
    "queue_json",
    "reconfigure",
    "sacct",
    "sdiag",
    "show_nodes",
    "show_partition",
    "sshare",
    "submit",
    "submit_times",
]


def _listed(names: Sequence[str]) -> str:
    return ",".join(names)


def show_partition(name: str) -> list[str]:
    return ["scontrol", "show", "partition", name, "-o"]


def show_nodes() -> list[str]:
    return ["scontrol", "show", "node", "-o"]


def drain_node(node: str, reason: str) -> list[str]:
    """Takes no new job on `node`; what runs there ends as it would (offboarding step 7's RMA)."""
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def reconfigure() -> list[str]:
    return ["scontrol", "reconfigure"]


def hostnames(nodelists: Sequence[str]) -> list[str]:
    """The host names a list of hostlists (`gpu-[01-03]`) expands to."""
    return ["scontrol", "show", "hostnames", _listed(nodelists)]


def jobs_in_partition(partition: str) -> list[str]:
    """The ids of the jobs in `partition`, one a line."""
    return ["squeue", "-h", "-p", partition, "-o", "%i"]


def queue(accounts: Sequence[str], fields: str) -> list[str]:
    """Every job of `accounts` in any partition (hidden ones too), as `fields` (squeue's -o)."""
    return ["squeue", "-h", "--all", "-A", _listed(accounts), "-o", fields]


def known_jobs(accounts: Sequence[str], fields: str) -> list[str]:
    """Every job of `accounts` slurmctld still holds, those that ended too (it keeps one
    MinJobAge after its end), in any partition, as `fields` (squeue's -o)."""
    return ["squeue", "-h", "--all", "--states=all", "-A", _listed(accounts), "-o", fields]


def queue_json() -> list[str]:
    return ["squeue", "--json"]


def cancel_pending(accounts: Sequence[str]) -> list[str]:
    return ["scancel", "--state=PENDING", "-A", _listed(accounts)]


def cancel(jobs: Sequence[str], signal: str | None = None) -> list[str]:
    """Ends the jobs; with `signal`, sends it to every step of each, the batch shell included
    (`--full`), so that a trap in the job script runs."""
    sent = ["--full", f"--signal={signal}"] if signal else []
    return ["scancel", *sent, *jobs]


def sshare(accounts: Sequence[str], fields: str) -> list[str]:
    return ["sshare", "-P", "-n", "-a", f"--accounts={_listed(accounts)}", f"--format={fields}"]


def sacct(
    accounts: Sequence[str],
    since: str,
    until: str,
    fields: str,
    *,
    jobs_only: bool = True,
    header: bool = True,
) -> list[str]:
    """The records of every user's jobs of `accounts` eligible from `since` to `until` (sacct's
    time forms), `|`-separated: one per job (`jobs_only`), or per step too. Every run of a job id
    Slurm gave more than once (slurmctld's state lost, or ids wrapped past MaxJobId), told apart
    by its submit time: each was billed, and sacct shows only the newest of an id unless asked
    (`--duplicates`)."""
    return [
        "sacct",
        *(["-X"] if jobs_only else []),
        "--duplicates",
        "--allusers",
        f"--accounts={_listed(accounts)}",
        f"--starttime={since}",
        f"--endtime={until}",
        f"--format={fields}",
        "--parsable2",
        *([] if header else ["--noheader"]),
    ]


def as_user(uid: int, gid: int, argv: Sequence[str]) -> list[str]:
    """`argv` run with the user's uid and gid and no other group (util-linux's setpriv). File
    work in a directory the tenant's users can write is done as the user: a link a user planted
    there, or swapped in between two calls, reaches only what that user could reach anyway."""
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]


def private_directory(path: str, uid: int, gid: int) -> list[str]:
    """The command that makes a new directory on the host the transport reaches that only `uid`
    (and root) may enter: made by the user, so it is theirs without a chown. It must not exist
    (an existing one may be someone else's), and its parent must."""
    return as_user(uid, gid, ["mkdir", "-m", "0700", "--", path])


def sdiag() -> list[str]:
    return ["sdiag"]


def cat(path: str) -> list[str]:
    """A platform file on the host the transport reaches (a log, the controller's copy of a
    ConfigMap); a file in a tenant's directory is read `as_user`."""
    return ["cat", "--", path]


def job_records(jobs: Sequence[str], fields: str) -> list[str]:
    """The jobs' own records (not their steps'), `|`-separated, without a header: of each id the
    newest run, which may be one from before Slurm gave the id again (see `submit_times`)."""
    return ["sacct", "-X", "-n", "-P", "-j", _listed(jobs), "-o", fields]


def partition_nodes(partition: str) -> list[str]:
    """The partition's nodes as sinfo shows them: hostlists, one a line."""
    return ["sinfo", "-h", "-p", partition, "-o", "%N"]


def submit_times(jobs: Sequence[str]) -> list[str]:
    """Each job's id and the time slurmctld took it (`%V`, printed as sacct prints Submit),
    `|`-separated, in any state (`--states=all`): slurmctld holds a job until MinJobAge after its
    end."""
    return ["squeue", "-h", "--states=all", f"--jobs={_listed(jobs)}", "-o", "%i|%V"]


def submit(name: str, uid: int, gid: int, output: str, exported: Sequence[str]) -> list[str]:
    """sbatch of the script on stdin, for the user `uid` (root's and SlurmUser's right), its
    stdout and stderr to `output`, with this environment and `exported` (NAME=value)."""
    return [
        "sbatch", "--parsable", f"--job-name={name}", f"--uid={uid}", f"--gid={gid}",
        f"--output={output}", f"--export={_listed(['ALL', *exported])}",
    ]  # fmt: skip
