"""Slurm accounting and partitions of a tenant (runbook step 4) as dynamic resources, driven
through sacctmgr and scontrol as the runbooks do. See `settings` for the environment it reads."""

from providers.slurm.resources import SlurmAccount, SlurmPartition, SlurmQos, SlurmUser
from providers.slurm.transport import SlurmCommandError

__all__ = ["SlurmAccount", "SlurmCommandError", "SlurmPartition", "SlurmQos", "SlurmUser"]
