"""Where the Slurm sandbox keeps its state, and the fixed ports it listens on."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# Fixed so that clients (the project's Slurm provider, tests, an operator's shell) find the
# sandbox without discovery; chosen away from the products' defaults (3306, 6817-6819) so a
# system-wide install on the same host does not collide.
MARIADB_PORT = 23306
SLURMCTLD_PORT = 26817
SLURMDBD_PORT = 26819
# The slurmd daemons (SlurmSettings.slurmd_nodes), in order: each node's Port= in slurm.conf, as
# several slurmd may share a host when each serves a node of its own on its own port.
SLURMD_PORTS = (26818, 26820)

# Where a node mounts the shared scratch filesystem (Weka's, in the NodeSet's volume mount): the
# smoke test's `cd /scratch/<slug>` (runbook 7c) needs it there.
NODE_SCRATCH = Path("/scratch")

# The runbooks address the cluster by this name (sacctmgr ... Cluster=production).
CLUSTER_NAME = "production"
ACCOUNTING_DB = "slurm_acct_db"
ACCOUNTING_DB_USER = "slurm"

# Unix socket paths longer than sun_path (108 bytes with the NUL) cannot be bound.
MAX_SOCKET_PATH = 107


def _hostlist(prefix: str, numbers: Iterable[int]) -> str:
    """`prefix[01-13,15-16]` for the node numbers given in ascending order; `prefix14` for one."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    parts = [f"{a:02d}" if a == b else f"{a:02d}-{b:02d}" for a, b in runs]
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"{prefix}{parts[0]}"
    return f"{prefix}[{','.join(parts)}]"


def short_hostname() -> str:
    # slurmctld and slurmdbd refuse to start unless SlurmctldHost / DbdHost name this host.
    return socket.gethostname().split(".", 1)[0]


@dataclass(frozen=True)
class SlurmSettings:
    """The few choices behind the rendered configuration; everything else is derived."""

    state_dir: Path
    # Added to every port, so a second sandbox (the tests') can run beside the operator's.
    port_offset: int = 0
    hostname: str = field(default_factory=short_hostname)
    cluster_name: str = CLUSTER_NAME
    # A fleet of 8x H100 SXM servers (DGX H100 shape): 2 x 56-core Xeon 8480C with SMT, 2 TiB RAM.
    node_prefix: str = "gpu-"
    node_count: int = 16
    # The nodes a real slurmd each serves, on this host, so that jobs really run (and land in
    # accounting) for the offboarding tests (freeze, drain, cancel, archive), and a two-node job
    # for the smoke tests (runbook 7b). The others stay CLOUD nodes with no daemon. No tenant
    # spec puts jobs on these; the tests that do each take them for their own tenant.
    slurmd_nodes: tuple[str, ...] = ("gpu-14", "gpu-15")
    sockets_per_node: int = 2
    cores_per_socket: int = 56
    threads_per_core: int = 2
    real_memory_mb: int = 2_000_000
    gpus_per_node: int = 8
    # Where slurmd's spool directory goes (see slurmd_spool_dir).
    spool_root: Path = Path("/var/spool/gpu-tenants")

    @property
    def mariadb_port(self) -> int:
        return MARIADB_PORT + self.port_offset

    @property
    def slurmctld_port(self) -> int:
        return SLURMCTLD_PORT + self.port_offset

    @property
    def slurmd_ports(self) -> dict[str, int]:
        """Each slurmd node's port; the first is also SlurmdPort, where `scontrol show slurmd`
        asks."""
        return {
            node: port + self.port_offset
            for node, port in zip(self.slurmd_nodes, SLURMD_PORTS, strict=True)
        }

    @property
    def slurmdbd_port(self) -> int:
        return SLURMDBD_PORT + self.port_offset

    @property
    def node_names(self) -> str:
        """Every node, as a Slurm hostlist: gpu-[01-16]."""
        return _hostlist(self.node_prefix, range(1, self.node_count + 1))

    @property
    def slurmd_hostlist(self) -> str:
        """The slurmd nodes as a Slurm hostlist: gpu-[14-15]."""
        prefix = len(self.node_prefix)
        return _hostlist(self.node_prefix, sorted(int(n[prefix:]) for n in self.slurmd_nodes))

    def node_runs(self) -> list[tuple[str, bool]]:
        """The nodes in order, as hostlists of the runs between the slurmd nodes, each with
        whether slurmd serves it: [("gpu-[01-13]", False), ("gpu-14", True), ("gpu-15", True),
        ("gpu-16", False)]. A slurmd node is a run of its own (it has its own port). Declared in
        this order, they keep it in every node list."""
        runs: list[tuple[list[int], bool]] = []
        for n in range(1, self.node_count + 1):
            served = f"{self.node_prefix}{n:02d}" in self.slurmd_nodes
            if runs and not served and not runs[-1][1]:
                runs[-1][0].append(n)
            else:
                runs.append(([n], served))
        return [(_hostlist(self.node_prefix, numbers), served) for numbers, served in runs]

    @property
    def cpus_per_node(self) -> int:
        return self.sockets_per_node * self.cores_per_socket * self.threads_per_core

    # Munge
    @property
    def munge_dir(self) -> Path:
        return self.state_dir / "munge"

    @property
    def munge_socket(self) -> Path:
        """Where the nodes' jobs reach it too: a job's srun makes its credential there, as the
        job's user."""
        return self.node_dir / "munge" / "munge.socket.2"

    @property
    def munge_key(self) -> Path:
        return self.munge_dir / "munge.key"

    # MariaDB
    @property
    def mariadb_dir(self) -> Path:
        return self.state_dir / "mariadb"

    @property
    def mariadb_datadir(self) -> Path:
        return self.mariadb_dir / "data"

    @property
    def mariadb_cnf(self) -> Path:
        return self.mariadb_dir / "my.cnf"

    @property
    def mariadb_tmpdir(self) -> Path:
        """The server's temporary tables, this sandbox's own: in the shared /tmp, a bootstrap's
        temporary table vanished under it while the other worker's sandbox came up (ci,
        2026-12-05: `Unknown table 'mysql.tmp_proxies_priv'`)."""
        return self.mariadb_dir / "tmp"

    @property
    def mariadb_socket(self) -> Path:
        return self.mariadb_dir / "mariadbd.sock"

    @property
    def db_password_file(self) -> Path:
        return self.mariadb_dir / "slurm.password"

    # Slurm
    @property
    def node_dir(self) -> Path:
        """What the nodes' jobs read, outside the state directory, which may sit in a home no
        other user can enter (root's is 0700): the Slurm configuration (a job's srun and sinfo
        read it as the job's user), slurmd's spool (slurmd runs a batch script from it as the
        job's user) and the nodes' tools. One per sandbox."""
        digest = hashlib.sha256(str(self.state_dir.absolute()).encode()).hexdigest()[:12]
        return self.spool_root / f"slurmd-{digest}"

    @property
    def etc_dir(self) -> Path:
        return self.node_dir / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc_dir / "slurm.conf"

    @property
    def slurmdbd_conf(self) -> Path:
        # slurmdbd has no option for its config file: it reads slurmdbd.conf next to SLURM_CONF.
        return self.etc_dir / "slurmdbd.conf"

    @property
    def gres_conf(self) -> Path:
        return self.etc_dir / "gres.conf"

    @property
    def partitions_conf(self) -> Path:
        return self.etc_dir / "partitions.conf"

    @property
    def configmap_partitions_conf(self) -> Path:
        """The partitions ConfigMap's key as the slurmctld pod would see it mounted."""
        return self.etc_dir / "partitions-configmap.conf"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "log"

    @property
    def run_dir(self) -> Path:
        return self.state_dir / "run"

    @property
    def ctld_state_dir(self) -> Path:
        return self.state_dir / "slurmctld"

    @property
    def slurmd_spool_dir(self) -> Path:
        """Each node's slurmd spools in a directory of its own here (slurm.conf's `%n`)."""
        return self.node_dir / "spool"

    def node_tmp_dir(self, node: str) -> Path:
        """The node's TmpFS (its /tmp, for Slurm's own use: PMIx's directories)."""
        return self.node_dir / "tmp" / node

    @property
    def cgroup_conf(self) -> Path:
        return self.etc_dir / "cgroup.conf"

    @property
    def node_bin_dir(self) -> Path:
        """The stand-ins for the GPU tools a real node has (nvidia-smi, nccl-tests), on every
        task's PATH through the task prolog."""
        return self.node_dir / "bin"

    @property
    def task_prolog(self) -> Path:
        return self.node_dir / "task-prolog"

    @property
    def epilog(self) -> Path:
        return self.node_dir / "epilog"

    @property
    def faults_dir(self) -> Path:
        """Where the tests inject faults into the nodes (faults.py)."""
        return self.node_dir / "faults"

    def epilog_fault(self, node: str) -> Path:
        """While this file exists, the epilog of every job ending on `node` hangs."""
        return self.faults_dir / f"epilog-hangs-{node}"

    def slurmd_pid_file(self, node: str) -> Path:
        """Where the slurmd of `node` writes its pid (slurm.conf's SlurmdPidFile with `%n`)."""
        return self.run_dir / f"slurmd-{node}.pid"

    @property
    def gpu_devices_dir(self) -> Path:
        """Stand-ins for the GPUs' device files, /dev/nvidia0... on a real node (config.py)."""
        return self.state_dir / "gpus"

    @property
    def archive_dir(self) -> Path:
        return self.state_dir / "archive"
