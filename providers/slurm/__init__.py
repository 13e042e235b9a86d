"""Slurm accounting and partitions of a tenant (runbook step 4) as dynamic resources, driven
through sacctmgr and scontrol as the runbooks do. See `settings` for the environment it reads."""
