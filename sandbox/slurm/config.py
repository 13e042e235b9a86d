"""Renders slurm.conf, slurmdbd.conf, gres.conf and MariaDB's my.cnf from `SlurmSettings`."""

from __future__ import annotations

import os

from sandbox.slurm.settings import (
    ACCOUNTING_DB,
    ACCOUNTING_DB_USER,
    SlurmSettings,
)

# The platform's own partition: every node, so that sinfo and fleet-wide smoke tests see the
# whole cluster, but only the root account may use it, because tenants' capacity is sold
# through their own partitions (runbook step 4d), which the Slurm provider writes to
# partitions.conf. A partition may not be named "default".
PLATFORM_PARTITION = "platform"


def _lines(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def slurm_conf(s: SlurmSettings) -> str:
    auth = f"socket={s.munge_socket}"
    return _lines(
        "# Rendered by sandbox/slurm on every start; edits are lost. Partitions: see Include.",
        f"ClusterName={s.cluster_name}",
        f"SlurmctldHost={s.hostname}(127.0.0.1)",
        f"SlurmctldPort={s.slurmctld_port}",
        f"SlurmdPort={s.slurmd_ports[s.slurmd_nodes[0]]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo={auth}",
        "CredType=cred/munge",
        f"StateSaveLocation={s.ctld_state_dir}",
        # %n: the node's name, so that the slurmd daemons on this host keep apart.
        f"SlurmdSpoolDir={s.slurmd_spool_dir / '%n'}",
        f"SlurmctldPidFile={s.run_dir / 'slurmctld.pid'}",
        f"SlurmdPidFile={s.slurmd_pid_file('%n')}",
        f"SlurmctldLogFile={s.log_dir / 'slurmctld.log'}",
        "SlurmctldDebug=info",
        "MailProg=/bin/true",
        "MpiDefault=none",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "ReturnToService=2",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "GresTypes=gpu",
        "PriorityType=priority/multifactor",
        # GrpTRESMins budgets in the runbook decay with this half-life.
        "PriorityDecayHalfLife=7-0",
        "PriorityWeightFairshare=10000",
        "PriorityWeightQOS=10000",
        "PriorityWeightAge=1000",
        "PreemptType=preempt/qos",
        # preempt/qos refuses PreemptMode=OFF cluster-wide; partitions and QoS may still say OFF.
        "PreemptMode=REQUEUE",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=127.0.0.1",
        f"AccountingStoragePort={s.slurmdbd_port}",
        # Clients authenticate to slurmdbd with this socket, not with AuthInfo's.
        f"AccountingStoragePass={s.munge_socket}",
        "AccountingStorageEnforce=associations,limits,qos,safe",
        "AccountingStorageTRES=gres/gpu",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        # Puts the stand-in GPU tools on each task's PATH (see stand_ins/).
        f"TaskProlog={s.task_prolog}",
        # A real node's epilog cleans up after each job; this one can be made to hang (faults.py).
        f"Epilog={s.epilog}",
        # No slurmd runs for the CLOUD nodes. With power saving on, they stay powered down
        # (idle~), so slurmctld never pings them (it would block resolving gpu-NN, which has no
        # address, on every reconfigure); PrivateData=cloud shows powered-down CLOUD nodes in
        # sinfo and scontrol (FUTURE nodes would stay hidden). The slurmd nodes are never
        # suspended, so nothing waits on a resume program that does nothing.
        "SuspendProgram=/bin/true",
        "ResumeProgram=/bin/true",
        "SuspendTime=600",
        "SuspendTimeout=30",
        "ResumeTimeout=300",
        f"SuspendExcNodes={s.slurmd_hostlist}",
        "PrivateData=cloud",
        # The slurmd nodes are configured as the fleet's servers are, far larger than this host:
        # take slurm.conf's figures as they are instead of draining it as INVALID_REG.
        "SlurmdParameters=config_overrides",
        f"SlurmdLogFile={s.log_dir / 'slurmd-%n.log'}",
        # Each node's own, as on real nodes: PMIx makes a step's directories in it under names
        # that are the same on every node of the job.
        f"TmpFS={s.node_tmp_dir('%n')}",
        "SlurmdDebug=info",
        f"NodeName=DEFAULT CPUs={s.cpus_per_node} Boards=1"
        f" SocketsPerBoard={s.sockets_per_node} CoresPerSocket={s.cores_per_socket}"
        f" ThreadsPerCore={s.threads_per_core} RealMemory={s.real_memory_mb}"
        f" Gres=gpu:{s.gpus_per_node} Feature=h100",
        *(
            # slurmd -N names the node it serves; NodeHostname defaults to the node's name.
            f"NodeName={nodes} NodeAddr=127.0.0.1 Port={s.slurmd_ports[nodes]}"
            if served
            else f"NodeName={nodes} State=CLOUD"
            for nodes, served in s.node_runs()
        ),
        f"PartitionName={PLATFORM_PARTITION} Nodes=ALL Default=YES State=UP AllowAccounts=root"
        " MaxTime=01:00:00 DefaultTime=00:10:00",
        # One literal path each: 22.05 has no globs in Include. The Slurm provider rewrites the
        # first itself (its file form) and reaches the second through the partitions ConfigMap,
        # which sandbox/kubernetes/configmap_volume copies there (its ConfigMap form).
        f"Include {s.partitions_conf}",
        f"Include {s.configmap_partitions_conf}",
    )


def gres_conf(s: SlurmSettings) -> str:
    # A count would be all slurmctld needs, but slurmd 22.05 drops a GPU without a File ("Removing
    # file-less GPU"), even with Flags=CountOnly, then reports 0 GPUs and slurmctld drains the
    # node (config_overrides covers CPUs and memory, not gres). So each GPU gets a stand-in
    # device: a link to /dev/null (slurmd wants a character device; a plain file is an error).
    last = s.gpus_per_node - 1
    return _lines(f"NodeName={s.node_names} Name=gpu File={s.gpu_devices_dir}/nvidia[0-{last}]")


def cgroup_conf() -> str:
    # The sandbox's nodes have no device cgroup (TaskPlugin=task/none, and no GPUs to fence), so
    # no Slurm daemon reads this; the stand-in nvidia-smi does, to show a job the GPUs a node
    # with this file would (runbook 7a: 8 GPUs seen by a 1-GPU job means it says no).
    return _lines(
        "# Rendered by sandbox/slurm on every start; edits are lost. Only the stand-in",
        "# nvidia-smi reads it.",
        "ConstrainDevices=yes",
    )


def task_prolog(s: SlurmSettings) -> str:
    # slurmstepd runs it as the job's user before each task, and sets what it prints as
    # `export NAME=value` in the task's environment.
    return _lines(
        "#!/bin/sh",
        "# Rendered by sandbox/slurm: the stand-in GPU tools first on every task's PATH.",
        f'echo "export PATH={s.node_bin_dir}:$PATH"',
    )


def epilog(s: SlurmSettings) -> str:
    # slurmd runs it as root on each node of a job once the job has ended, and keeps the job
    # COMPLETING until it exits.
    fault = s.epilog_fault("$SLURMD_NODENAME")
    return _lines(
        "#!/bin/sh",
        "# Rendered by sandbox/slurm: nothing to clean up, unless a test has made the epilog of",
        "# this node hang, as one waiting on a wedged process does (sandbox/slurm/faults.py).",
        f'while [ -e "{fault}" ]; do sleep 1; done',
    )


def slurmdbd_conf(s: SlurmSettings, db_password: str) -> str:
    return _lines(
        "# Rendered by sandbox/slurm on every start; edits are lost. Mode 0600 (holds a password).",
        f"DbdHost={s.hostname}",
        "DbdAddr=127.0.0.1",
        f"DbdPort={s.slurmdbd_port}",
        "SlurmUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={s.munge_socket}",
        f"PidFile={s.run_dir / 'slurmdbd.pid'}",
        f"LogFile={s.log_dir / 'slurmdbd.log'}",
        "DebugLevel=info",
        f"ArchiveDir={s.archive_dir}",
        "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1",
        f"StoragePort={s.mariadb_port}",
        f"StorageUser={ACCOUNTING_DB_USER}",
        f"StoragePass={db_password}",
        f"StorageLoc={ACCOUNTING_DB}",
    )


def mariadb_cnf(s: SlurmSettings) -> str:
    # mariadbd refuses to run as root unless told to; as another user it must not be told.
    user = ["user=root"] if os.geteuid() == 0 else []
    return _lines(
        "# Rendered by sandbox/slurm on every start; edits are lost.",
        "[client]",
        f"socket={s.mariadb_socket}",
        f"port={s.mariadb_port}",
        "[mariadbd]",
        *user,
        f"datadir={s.mariadb_datadir}",
        f"tmpdir={s.mariadb_tmpdir}",
        f"socket={s.mariadb_socket}",
        f"pid-file={s.run_dir / 'mariadbd.pid'}",
        f"port={s.mariadb_port}",
        "bind-address=127.0.0.1",
        "skip-name-resolve",
        # slurmdbd logs an error below this; InnoDB only touches the pages it uses.
        "innodb_buffer_pool_size=1024M",
        "innodb_log_file_size=32M",
        "performance_schema=OFF",
        # slurmdbd warns below 900 s: its schema conversions take long locks.
        "innodb_lock_wait_timeout=900",
    )
