"""Real Slurm 22.05 (munged, MariaDB, slurmdbd, slurmctld, and slurmd for one node) as plain
processes on 127.0.0.1."""

from sandbox.slurm.services import client_env, slurm_services
from sandbox.slurm.settings import (
    CLUSTER_NAME,
    MARIADB_PORT,
    SLURMCTLD_PORT,
    SLURMDBD_PORT,
    SlurmSettings,
)

__all__ = [
    "CLUSTER_NAME",
    "MARIADB_PORT",
    "SLURMCTLD_PORT",
    "SLURMDBD_PORT",
    "SlurmSettings",
    "client_env",
    "slurm_services",
]
