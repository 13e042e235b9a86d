"""The Slurm sandbox against the real daemons, read back with the real Slurm clients."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from providers.slurm.partitions import locked
from sandbox.layout import SandboxLayout
from sandbox.service import Service
from sandbox.slurm import (
    SlurmSettings,
    client_env,
    ensure_user,
    slurm_services,
    slurmd_services,
)
from sandbox.slurm.prepare import PARTITIONS_PLACEHOLDER
from sandbox.slurm.probes import node_usable
from sandbox.supervisor import SandboxError, Supervisor, port_in_use
from tests.backends import (
    CHECKPOINTING_JOB,
    sacct_job,
    sbatch_as,
    scratch_directory,
    squeue_job,
    wait_for,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


# The sandbox is shared with tenant stacks: tests add their partition after what the file holds.
TEST_PARTITION = (
    "PartitionName=sbx-part Nodes=gpu-[01-08] AllowAccounts=sbx-part Default=NO State=UP"
    " MaxTime=24:00:00 DefaultTime=01:00:00 PreemptMode=OFF OverSubscribe=EXCLUSIVE\n"
)


@dataclass
class Sandbox:
    supervisor: Supervisor
    services: list[Service]
    settings: SlurmSettings
    env: dict[str, str]

    def service(self, name: str) -> Service:
        return next(s for s in self.services if s.name == name)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(argv),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if check:
            assert result.returncode == 0, (
                f"{argv} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
            )
        return result

    def lines(self, *argv: str) -> list[str]:
        return self.run(*argv).stdout.splitlines()


def usable(slurm: Sandbox, node: str) -> bool:
    return node_usable(slurm.run("scontrol", "show", "node", node, "-o").stdout)


@pytest.fixture(scope="module")
def slurm(sandbox: SandboxLayout) -> Sandbox:
    state_dir = sandbox.root / "slurm"
    return Sandbox(
        Supervisor(sandbox.root),
        [
            *slurm_services(state_dir, sandbox.ports.offset),
            *slurmd_services(state_dir, sandbox.ports.offset, sandbox.node_scratch),
        ],
        sandbox.slurm,
        {**os.environ, **client_env(state_dir)},
    )


def test_cluster_is_registered_by_slurmctld(slurm: Sandbox) -> None:
    clusters = slurm.lines(
        "sacctmgr", "-P", "-n", "show", "cluster", "format=Cluster,ControlHost,ControlPort"
    )
    assert clusters == [f"production|127.0.0.1|{slurm.settings.slurmctld_port}"]


def test_gpu_is_an_accounting_tres(slurm: Sandbox) -> None:
    tres = slurm.lines("sacctmgr", "-P", "-n", "show", "tres", "format=Type,Name")
    assert "gres|gpu" in tres
    assert "cpu|" in tres


def test_platform_partition_holds_every_node(slurm: Sandbox) -> None:
    out = slurm.run("scontrol", "show", "partition").stdout
    assert "PartitionName=platform" in out
    assert "Nodes=gpu-[01-16]" in out
    assert "AllowAccounts=root" in out
    assert "gres/gpu=128" in out


@pytest.mark.parametrize("node", ["gpu-14", "gpu-15"])
def test_each_slurmd_node_is_up_after_start(slurm: Sandbox, node: str) -> None:
    assert node in slurm.settings.slurmd_nodes
    # A slurmctld restarted just before (the lifecycle tests restart it) holds the node UNKNOWN
    # for a few seconds, until it asks slurmd to register again.
    wait_for(f"{node} to be registered", lambda: usable(slurm, node), timeout=15)
    shown = slurm.run("scontrol", "show", "node", node, "-o").stdout
    # IDLE, or busy with a job of a test session running beside this one; never CLOUD,
    # POWERED_DOWN, DRAIN or NOT_RESPONDING, and no reason recorded.
    assert node_usable(shown), shown
    assert re.search(r" State=(IDLE|ALLOCATED|MIXED) ", shown), shown
    assert "Reason=" not in shown
    assert "NodeAddr=127.0.0.1 " in shown
    # Configured as the fleet's servers, whatever this host has (config_overrides), with its
    # eight GPUs (stand-in device files) all reported by slurmd.
    assert "CfgTRES=cpu=224,mem=2000000M,billing=224,gres/gpu=8" in shown
    assert "Gres=gpu:8 " in shown
    # Its own slurmd, on its own port, recorded as its service.
    pid = slurm.supervisor.pid(f"slurmd-{node}")
    port = slurm.settings.slurmd_ports[node]
    listening = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True)
    assert f"pid={pid}," in listening.stdout, listening.stdout


def test_sinfo_lists_fourteen_cloud_nodes_and_the_slurmd_nodes(slurm: Sandbox) -> None:
    rows = slurm.lines("sinfo", "-N", "-h", "-p", "platform", "-o", "%N|%G|%c|%m|%T")
    assert [r.split("|")[0] for r in rows] == [f"gpu-{i:02d}" for i in range(1, 17)]
    states = {r.split("|", 1)[0]: r.split("|", 1)[1] for r in rows}
    served = [states.pop(node) for node in ("gpu-14", "gpu-15")]
    # Powered-down CLOUD nodes: visible, never pinged, never DOWN.
    assert set(states.values()) == {"gpu:8|224|2000000|idle~"}
    # The slurmd nodes: configured as the others, powered up (no ~), taking jobs.
    for state in served:
        assert state.rsplit("|", 1)[0] == "gpu:8|224|2000000"
        assert state.rsplit("|", 1)[1] in ("idle", "mixed", "allocated")
    node = slurm.run("scontrol", "show", "node", "gpu-16").stdout
    assert "CLOUD" in node
    assert "CfgTRES=cpu=224,mem=2000000M,billing=224,gres/gpu=8" in node


def test_a_two_node_job_runs_a_pmix_step_on_both_nodes_with_the_scratch_mounted(
    slurm: Sandbox, sandbox: SandboxLayout, tmp_path: Path
) -> None:
    """Runbook 7b's shape (two nodes, eight tasks each, `srun --mpi=pmix`) on the two slurmd
    nodes, each task writing into /scratch, which each node mounts from the Weka emulator's
    shared scratch filesystem."""
    mark = f"sbx-two-nodes-{os.getpid()}"
    script = tmp_path / "two-nodes.sh"
    script.write_text(
        "#!/bin/bash\nset -euo pipefail\n"
        f"srun --mpi=pmix bash -c 'touch /scratch/{mark}.$SLURMD_NODENAME.$SLURM_PROCID'\n"
    )
    try:
        slurm.run(
            "sbatch", "--wait", "--partition=platform", "--nodes=2", "--ntasks-per-node=8",
            "--gres=gpu:8", "--time=00:02:00", f"--output={tmp_path}/out", str(script),
        )  # fmt: skip
        written = sorted(p.name for p in sandbox.node_scratch.glob(f"{mark}.*"))
        assert written == sorted(
            f"{mark}.{node}.{rank}"
            for node, ranks in (("gpu-14", range(8)), ("gpu-15", range(8, 16)))
            for rank in ranks
        ), (tmp_path / "out").read_text()
    finally:
        for path in sandbox.node_scratch.glob(f"{mark}.*"):
            path.unlink()


def test_config_files_have_safe_modes(slurm: Sandbox) -> None:
    s = slurm.settings
    assert s.slurmdbd_conf.stat().st_mode & 0o777 == 0o600
    assert s.munge_key.stat().st_mode & 0o777 == 0o600
    assert s.munge_dir.stat().st_mode & 0o777 == 0o755
    assert s.archive_dir.is_dir()
    assert f"Include {s.partitions_conf}" in s.slurm_conf.read_text()
    # Job users run their batch scripts from slurmd's spool, and their sruns read slurm.conf:
    # every directory above both must let them through, which the state directory (in root's
    # 0700 home) need not.
    for directory in (*s.slurmd_spool_dir.parents, s.slurmd_spool_dir, s.etc_dir):
        assert directory.stat().st_mode & 0o005 == 0o005, directory


def test_account_and_qos_round_trip(slurm: Sandbox) -> None:
    sacctmgr = ("sacctmgr", "-i")
    slurm.run(
        *sacctmgr, "add", "qos", "normal-sbx-rt", "Priority=100", "GrpTRES=gres/gpu=64",
        "MaxWall=24:00:00", "Flags=DenyOnLimit",
    )  # fmt: skip
    slurm.run(
        *sacctmgr, "add", "account", "sbx-rt", "Description=Tenant RT",
        "Organization=sbx-rt", "Cluster=production", "Fairshare=300", "GrpTRES=gres/gpu=64",
        "GrpJobs=200",
    )  # fmt: skip
    slurm.run(
        *sacctmgr, "modify", "account", "sbx-rt", "set", "qos=normal-sbx-rt",
        "DefaultQOS=normal-sbx-rt",
    )  # fmt: skip
    try:
        qos = slurm.lines(
            "sacctmgr", "-P", "-n", "show", "qos", "normal-sbx-rt",
            "format=Name,Priority,GrpTRES,MaxWall,Flags",
        )  # fmt: skip
        assert qos == ["normal-sbx-rt|100|gres/gpu=64|1-00:00:00|DenyOnLimit"]
        assoc = slurm.lines(
            "sacctmgr", "-P", "-n", "show", "assoc", "account=sbx-rt",
            "format=Cluster,Account,User,ParentName,Fairshare,GrpTRES,GrpJobs,QOS,DefaultQOS",
        )  # fmt: skip
        assert assoc == ["production|sbx-rt||root|300|gres/gpu=64|200|normal-sbx-rt|normal-sbx-rt"]
        account = slurm.lines(
            "sacctmgr", "-P", "-n", "show", "account", "sbx-rt",
            "format=Account,Description,Organization",
        )  # fmt: skip
        # slurmdbd lowercases Description and Organization.
        assert account == ["sbx-rt|tenant rt|sbx-rt"]
        again = slurm.run(*sacctmgr, "add", "account", "sbx-rt", check=False)
        assert again.returncode == 1
        assert "Nothing new added" in again.stdout + again.stderr
    finally:
        slurm.run(*sacctmgr, "delete", "account", "sbx-rt")
        slurm.run(*sacctmgr, "delete", "qos", "normal-sbx-rt")
    assert slurm.lines("sacctmgr", "-P", "-n", "show", "account", "sbx-rt") == []
    assert slurm.lines("sacctmgr", "-P", "-n", "show", "qos", "normal-sbx-rt") == []
    gone = slurm.run(*sacctmgr, "delete", "qos", "normal-sbx-rt", check=False)
    assert gone.returncode == 1
    assert "Nothing deleted" in gone.stdout + gone.stderr


@pytest.fixture
def partitions_to_ourselves(slurm: Sandbox) -> Iterator[None]:
    """Holds the Slurm provider's lock on the partitions file, so that no tenant stack applied
    meanwhile loses its line to this test's edit and restore."""
    with locked(slurm.settings.partitions_conf):
        yield


@pytest.mark.usefixtures("partitions_to_ourselves")
def test_partitions_file_is_applied_on_reconfigure(slurm: Sandbox) -> None:
    partitions = slurm.settings.partitions_conf
    before = partitions.read_text()
    assert before.startswith(PARTITIONS_PLACEHOLDER)
    partitions.write_text(before + TEST_PARTITION)
    try:
        slurm.run("scontrol", "reconfigure")
        out = slurm.run("scontrol", "show", "partition", "sbx-part").stdout
        assert "PartitionName=sbx-part" in out
        assert "Nodes=gpu-[01-08]" in out
        assert "AllowAccounts=sbx-part" in out
        assert "OverSubscribe=EXCLUSIVE" in out
        assert "PreemptMode=OFF" in out
        assert "gres/gpu=64" in out
        assert slurm.lines("sinfo", "-h", "-p", "sbx-part", "-o", "%D|%N") == ["8|gpu-[01-08]"]
    finally:
        partitions.write_text(before)
        slurm.run("scontrol", "reconfigure")
    missing = slurm.run("scontrol", "show", "partition", "sbx-part", check=False)
    assert "not found" in missing.stdout + missing.stderr


def _wait_dead(supervisor: Supervisor, name: str, pid: int) -> None:
    # The daemon is this process's child: reap it so that it does not linger as a zombie.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    deadline = time.monotonic() + 10
    while supervisor.pid(name) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert supervisor.pid(name) is None


def test_slurmctld_survives_sigkill(slurm: Sandbox) -> None:
    slurm.run("sacctmgr", "-i", "add", "account", "sbx-kill", "GrpTRES=gres/gpu=16")
    try:
        ctld = slurm.service("slurmctld")
        pid = slurm.supervisor.pid("slurmctld")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        _wait_dead(slurm.supervisor, "slurmctld", pid)
        down = slurm.run("timeout", "20", "scontrol", "ping", check=False)
        assert "DOWN" in down.stdout

        assert slurm.supervisor.start(ctld) is True
        assert "is UP" in slurm.run("scontrol", "ping").stdout
        # The restarted controller reloaded the account from slurmdbd, limits included.
        assoc = slurm.run(
            "scontrol", "show", "assoc_mgr", "accounts=sbx-kill", "flags=assoc"
        ).stdout
        assert "Account=sbx-kill" in assoc
        assert "gres/gpu=16" in assoc
        assert len(slurm.lines("sinfo", "-N", "-h", "-p", "platform", "-o", "%N")) == 16
    finally:
        slurm.run("sacctmgr", "-i", "delete", "account", "sbx-kill")


# A tenant with one user whose jobs run on gpu-14. The ids stay clear of real accounts and of
# the tenant specs' (which start at 2000 for users and 4000 for groups, per LDAP's numbering).
JOBS_TENANT = "sbx-jobs"
JOBS_USER, JOBS_UID = "sbx-jobs-alice", 4990
JOBS_GROUP, JOBS_GID = "sbx-jobs", 4990
JOBS_PARTITION = (
    f"PartitionName={JOBS_TENANT} Nodes=gpu-14 AllowAccounts={JOBS_TENANT} Default=NO State=UP"
    " MaxTime=24:00:00 DefaultTime=01:00:00 PreemptMode=OFF OverSubscribe=EXCLUSIVE\n"
)


def test_ensure_user_is_idempotent_and_refuses_another_uid() -> None:
    ensure_user(JOBS_USER, JOBS_UID, JOBS_GID, JOBS_GROUP)
    ensure_user(JOBS_USER, JOBS_UID, JOBS_GID, JOBS_GROUP)
    passwd = subprocess.run(
        ["getent", "passwd", JOBS_USER], capture_output=True, text=True, check=True
    ).stdout
    assert passwd.split(":")[2:4] == [str(JOBS_UID), str(JOBS_GID)]
    with pytest.raises(SandboxError, match=f"exists with uid {JOBS_UID}, not {JOBS_UID + 1}"):
        ensure_user(JOBS_USER, JOBS_UID + 1, JOBS_GID, JOBS_GROUP)
    with pytest.raises(SandboxError, match=f"uid {JOBS_UID} belongs to user '{JOBS_USER}'"):
        ensure_user("sbx-jobs-other", JOBS_UID, JOBS_GID, JOBS_GROUP)


@pytest.fixture
def jobs_tenant(slurm: Sandbox) -> Iterator[Path]:
    """The tenant's user on this host, its account and user association (runbook 4a and 4b),
    its partition on gpu-14 (4d, added as the other tests here add theirs), and its scratch,
    which this yields. Afterwards its jobs are ended and all of it removed."""
    sacctmgr = ("sacctmgr", "-i")
    ensure_user(JOBS_USER, JOBS_UID, JOBS_GID, JOBS_GROUP)
    partitions = slurm.settings.partitions_conf
    try:
        slurm.run(
            *sacctmgr, "add", "account", JOBS_TENANT, "Description=Sandbox jobs",
            f"Organization={JOBS_TENANT}", "Cluster=production", "Fairshare=300",
            "GrpTRES=gres/gpu=64", "GrpJobs=200",
        )  # fmt: skip
        slurm.run(
            *sacctmgr, "add", "user", JOBS_USER, f"Account={JOBS_TENANT}",
            f"DefaultAccount={JOBS_TENANT}", "Fairshare=parent", "MaxJobs=20",
            "GrpTRESMins=gres/gpu=240000",
        )  # fmt: skip
        with locked(partitions), scratch_directory(JOBS_GID) as scratch:
            before = partitions.read_text()
            partitions.write_text(before + JOBS_PARTITION)
            try:
                slurm.run("scontrol", "reconfigure")
                yield scratch
            finally:
                # A job still running would keep its account from being deleted; the job's
                # trap ends it at once on SIGTERM.
                slurm.run("scancel", "--full", "--signal=TERM", f"--account={JOBS_TENANT}")
                wait_for(
                    f"the jobs of account {JOBS_TENANT} to end",
                    lambda: slurm.lines("squeue", "-h", f"--account={JOBS_TENANT}") == [],
                )
                partitions.write_text(before)
                slurm.run("scontrol", "reconfigure")
    finally:
        # Without check: what failed to be added is not there to delete. (A slurmctld SIGKILLed
        # while it still holds these finished jobs, for MinJobAge = 5 minutes, rewrites their
        # records as NODE_FAIL: it reloads them without their partition and association.)
        slurm.run(
            *sacctmgr, "delete", "user", JOBS_USER, "where", f"Account={JOBS_TENANT}", check=False
        )
        slurm.run(*sacctmgr, "delete", "account", JOBS_TENANT, check=False)
    assert slurm.lines("sacctmgr", "-P", "-n", "show", "account", JOBS_TENANT) == []


def submit_checkpointing_job(scratch: Path, *job_args: str) -> int:
    return sbatch_as(
        JOBS_USER, JOBS_GROUP, f"--partition={JOBS_TENANT}", f"--account={JOBS_TENANT}",
        "--time=00:10:00", f"--chdir={scratch}", f"--output={scratch}/slurm-%j.out",
        str(CHECKPOINTING_JOB), str(scratch), *job_args,
    )  # fmt: skip


def test_a_tenant_users_job_runs_on_gpu_14_and_lands_in_accounting(jobs_tenant: Path) -> None:
    scratch = jobs_tenant
    job = submit_checkpointing_job(scratch, "3")
    wait_for(f"job {job} to run", lambda: squeue_job(job, "%T") == "RUNNING")
    assert squeue_job(job, "%T|%N|%u|%a|%P") == (
        f"RUNNING|gpu-14|{JOBS_USER}|{JOBS_TENANT}|{JOBS_TENANT}"
    )
    started = scratch / f"started-{job}"
    wait_for(f"{started} to be written", started.exists, timeout=10)
    # Run as the user, not as root who submitted it.
    assert (started.stat().st_uid, started.stat().st_gid) == (JOBS_UID, JOBS_GID)
    assert started.read_text().endswith(f"as {JOBS_USER}\n")

    wait_for(f"job {job} to leave the queue", lambda: squeue_job(job) == "")
    fields = "JobID,User,Account,Partition,NodeList,State,ExitCode"
    # slurmctld reports a job's end to slurmdbd a moment after the job leaves the queue.
    wait_for(f"job {job} in accounting", lambda: "|COMPLETED|" in "".join(sacct_job(job, fields)))
    assert sacct_job(job, fields) == [
        f"{job}|{JOBS_USER}|{JOBS_TENANT}|{JOBS_TENANT}|gpu-14|COMPLETED|0:0"
    ]
    assert not (scratch / f"checkpoint-{job}").exists()


def test_scancel_full_term_makes_the_job_checkpoint_to_scratch(
    slurm: Sandbox, jobs_tenant: Path
) -> None:
    scratch = jobs_tenant
    job = submit_checkpointing_job(scratch, "600")
    started = scratch / f"started-{job}"
    # Its TERM trap is set once this file exists.
    wait_for(f"{started} to be written", started.exists)
    checkpoint = scratch / f"checkpoint-{job}"

    # Without --full, slurmctld signals only the job's steps, and a batch script with none
    # never hears of it: the runbook's `scancel --account=X --signal=TERM` alone is not enough.
    slurm.run("scancel", "--signal=TERM", str(job))
    time.sleep(2)
    assert squeue_job(job) == "RUNNING"
    assert not checkpoint.exists()

    slurm.run("scancel", "--full", "--signal=TERM", str(job))
    wait_for(f"{checkpoint} to be written", checkpoint.exists, timeout=10)
    assert checkpoint.stat().st_uid == JOBS_UID
    assert checkpoint.read_text().startswith(f"job {job} checkpointed at ")
    wait_for(f"job {job} to leave the queue", lambda: squeue_job(job) == "")
    fields = "JobID,User,Account,State,ExitCode"
    wait_for(f"job {job} in accounting", lambda: "|FAILED|" in "".join(sacct_job(job, fields)))
    # The script exits 143 (128 + SIGTERM), which Slurm 22.05 records as exit code 15.
    assert sacct_job(job, fields) == [f"{job}|{JOBS_USER}|{JOBS_TENANT}|FAILED|15:0"]


@pytest.mark.usefixtures("partitions_to_ourselves")
def test_full_restart_keeps_state(slurm: Sandbox) -> None:
    s = slurm.settings
    # Starting what runs and answers is a no-op, once it answers: a test before may have
    # restarted slurmctld, whose nodes read not responding until their slurmd registers again.
    wait_for("every Slurm service ready", lambda: all(svc.ready() for svc in slurm.services), 60)
    assert [slurm.supervisor.start(svc) for svc in slurm.services] == [False] * 6
    slurm.run("sacctmgr", "-i", "add", "account", "sbx-keep", "GrpTRES=gres/gpu=32")
    before = s.partitions_conf.read_text()
    s.partitions_conf.write_text(before + TEST_PARTITION)
    key = s.munge_key.read_bytes()
    password = s.db_password_file.read_text()
    try:
        for service in reversed(slurm.services):
            assert slurm.supervisor.stop(service) is True
        ports = (s.mariadb_port, s.slurmdbd_port, s.slurmctld_port, *s.slurmd_ports.values())
        assert not [p for p in ports if port_in_use(p)]
        for service in slurm.services:
            assert slurm.supervisor.start(service) is True

        assert s.munge_key.read_bytes() == key
        assert s.db_password_file.read_text() == password
        assert s.partitions_conf.read_text() == before + TEST_PARTITION
        assoc = slurm.lines(
            "sacctmgr", "-P", "-n", "show", "assoc", "account=sbx-keep", "format=Account,GrpTRES"
        )
        assert assoc == ["sbx-keep|gres/gpu=32"]
        assert "PartitionName=sbx-part" in slurm.run("scontrol", "show", "partition").stdout
        assert usable(slurm, "gpu-14")
    finally:
        s.partitions_conf.write_text(before)
        slurm.run("scontrol", "reconfigure")
        slurm.run("sacctmgr", "-i", "delete", "account", "sbx-keep")
