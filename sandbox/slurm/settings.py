"""Where the Slurm sandbox keeps its state, and the fixed ports it listens on."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

# Fixed so that clients (the project's Slurm provider, tests, an operator's shell) find the
# sandbox without discovery; chosen away from the products' defaults (3306, 6817-6819) so a
# system-wide install on the same host does not collide.
MARIADB_PORT = 23306
SLURMCTLD_PORT = 26817
# Nothing listens here (the nodes are CLOUD, no slurmd runs), but slurm.conf needs a value and
# the default 6818 would point at a system slurmd.
SLURMD_PORT = 26818
SLURMDBD_PORT = 26819

# The runbooks address the cluster by this name (sacctmgr ... Cluster=production).
CLUSTER_NAME = "production"
ACCOUNTING_DB = "slurm_acct_db"
ACCOUNTING_DB_USER = "slurm"

# Unix socket paths longer than sun_path (108 bytes with the NUL) cannot be bound.
MAX_SOCKET_PATH = 107


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
    node_names: str = "gpu-[01-16]"
    node_count: int = 16
    sockets_per_node: int = 2
    cores_per_socket: int = 56
    threads_per_core: int = 2
    real_memory_mb: int = 2_000_000
    gpus_per_node: int = 8

    @property
    def mariadb_port(self) -> int:
        return MARIADB_PORT + self.port_offset

    @property
    def slurmctld_port(self) -> int:
        return SLURMCTLD_PORT + self.port_offset

    @property
    def slurmd_port(self) -> int:
        return SLURMD_PORT + self.port_offset

    @property
    def slurmdbd_port(self) -> int:
        return SLURMDBD_PORT + self.port_offset

    @property
    def cpus_per_node(self) -> int:
        return self.sockets_per_node * self.cores_per_socket * self.threads_per_core

    # Munge
    @property
    def munge_dir(self) -> Path:
        return self.state_dir / "munge"

    @property
    def munge_socket(self) -> Path:
        return self.munge_dir / "munge.socket.2"

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
    def mariadb_socket(self) -> Path:
        return self.mariadb_dir / "mariadbd.sock"

    @property
    def db_password_file(self) -> Path:
        return self.mariadb_dir / "slurm.password"

    # Slurm
    @property
    def etc_dir(self) -> Path:
        return self.state_dir / "etc"

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
        return self.state_dir / "partitions.conf"

    @property
    def configmap_partitions_conf(self) -> Path:
        """The partitions ConfigMap's key as the slurmctld pod would see it mounted."""
        return self.state_dir / "partitions-configmap.conf"

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
        return self.state_dir / "slurmd"

    @property
    def archive_dir(self) -> Path:
        return self.state_dir / "archive"
