"""Real Slurm 22.05 (munged, MariaDB, slurmdbd, slurmctld, and a slurmd for each of two nodes) as
plain processes on 127.0.0.1, and the local users whose jobs those nodes run."""

from sandbox.slurm.services import client_env, slurm_services, slurmd_services
from sandbox.slurm.settings import (
    CLUSTER_NAME,
    MARIADB_PORT,
    SLURMCTLD_PORT,
    SLURMDBD_PORT,
    SlurmSettings,
)
from sandbox.slurm.users import ensure_user

__all__ = [
    "CLUSTER_NAME",
    "MARIADB_PORT",
    "SLURMCTLD_PORT",
    "SLURMDBD_PORT",
    "SlurmSettings",
    "client_env",
    "ensure_user",
    "slurm_services",
    "slurmd_services",
]
