"""The Slurm resources of a tenant (runbook step 4), as the program declares them.

Their types are `pulumi-python:dynamic/slurm:<Name>`. Every one takes `tenant`, the tenant's
slug, which is also its ownership mark in Slurm; the tenant-level ones (QoS, tenant account,
partition) take `lifecycle`, and refuse deletion before offboarding's stage destroy. Outputs
hold what Slurm reports (Description lowercased, times as Slurm prints them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
from pulumi.dynamic import Resource

from providers.slurm.drain_provider import DrainedProvider, DrainStartProvider
from providers.slurm.provider import (
    SlurmAccountProvider,
    SlurmPartitionProvider,
    SlurmQosProvider,
    SlurmUserProvider,
)

__all__ = [
    "SlurmAccount",
    "SlurmDrainStart",
    "SlurmDrained",
    "SlurmPartition",
    "SlurmQos",
    "SlurmUser",
]

Names = pulumi.Input[Sequence[pulumi.Input[str]]]
# The tenant's offboarding stage on a tenant-level object, which gates its delete
# (`providers.base.LIFECYCLE`); None on a team's sub-account.
Lifecycle = pulumi.Input[Mapping[str, object]]


class SlurmQos(Resource, module="slurm", name="Qos"):
    """A QoS (runbook 4c). Its Description is the mark `gpu-tenants:<tenant>`. A change of
    `name` replaces it; everything else is modified in place."""

    name: pulumi.Output[str]
    tenant: pulumi.Output[str]
    description: pulumi.Output[str]
    priority: pulumi.Output[int]
    grp_tres_gpus: pulumi.Output[int | None]
    max_wall: pulumi.Output[str | None]
    flags: pulumi.Output[list[str]]
    preempt_mode: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        name: pulumi.Input[str],
        tenant: pulumi.Input[str],
        priority: pulumi.Input[int],
        grp_tres_gpus: pulumi.Input[int] | None = None,
        max_wall: pulumi.Input[str] | None = None,
        flags: Names | None = None,
        preempt_mode: pulumi.Input[str] | None = None,
        lifecycle: Lifecycle | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`grp_tres_gpus`: GrpTRES=gres/gpu=N; `max_wall`: `[D-]HH:MM:SS` (None: no limit);
        `preempt_mode`: off (stored by Slurm as `cluster`), cancel or requeue."""
        inputs: dict[str, object] = {
            "name": name,
            "tenant": tenant,
            "lifecycle": lifecycle,
            "priority": priority,
            "grp_tres_gpus": grp_tres_gpus,
            "max_wall": max_wall,
            "flags": flags if flags is not None else [],
            "preempt_mode": preempt_mode,
            "description": None,
        }
        super().__init__(SlurmQosProvider(), resource_name, inputs, opts)


class SlurmAccount(Resource, module="slurm", name="Account"):
    """An account and its association on the cluster (runbook 4a): the tenant's account under
    `root`, or a team sub-account with `parent` set to it. Its Organization is the mark (the
    tenant slug). A change of `name` or `parent` replaces it; the rest is modified in place, which
    is how the offboarding's frozen stage sets `grp_jobs` and `grp_submit_jobs` to 0."""

    name: pulumi.Output[str]
    parent: pulumi.Output[str]
    tenant: pulumi.Output[str]
    organization: pulumi.Output[str]
    description: pulumi.Output[str]
    fairshare: pulumi.Output[int]
    grp_tres_gpus: pulumi.Output[int | None]
    grp_jobs: pulumi.Output[int | None]
    grp_submit_jobs: pulumi.Output[int | None]
    qos: pulumi.Output[list[str]]
    default_qos: pulumi.Output[str | None]
    cluster: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        name: pulumi.Input[str],
        tenant: pulumi.Input[str],
        description: pulumi.Input[str],
        fairshare: pulumi.Input[int],
        parent: pulumi.Input[str] = "root",
        grp_tres_gpus: pulumi.Input[int] | None = None,
        grp_jobs: pulumi.Input[int] | None = None,
        grp_submit_jobs: pulumi.Input[int] | None = None,
        qos: Names | None = None,
        default_qos: pulumi.Input[str] | None = None,
        lifecycle: Lifecycle | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Unset limits are no limits. Unset `qos` and `default_qos` are inherited from the
        parent account (as a sub-account inherits the tenant account's binding)."""
        inputs: dict[str, object] = {
            "name": name,
            "parent": parent,
            "tenant": tenant,
            "lifecycle": lifecycle,
            "description": description,
            "fairshare": fairshare,
            "grp_tres_gpus": grp_tres_gpus,
            "grp_jobs": grp_jobs,
            "grp_submit_jobs": grp_submit_jobs,
            "qos": qos,
            "default_qos": default_qos,
            "organization": None,
            "cluster": None,
        }
        super().__init__(SlurmAccountProvider(), resource_name, inputs, opts)


class SlurmUser(Resource, module="slurm", name="User"):
    """A user's association with one of the tenant's accounts (runbook 4b). A change of `user` or
    `account` replaces it; the rest is modified in place."""

    user: pulumi.Output[str]
    account: pulumi.Output[str]
    tenant: pulumi.Output[str]
    default_account: pulumi.Output[str]
    fairshare: pulumi.Output[str]
    max_jobs: pulumi.Output[int | None]
    grp_tres_mins_gpus: pulumi.Output[int | None]
    qos: pulumi.Output[list[str]]
    default_qos: pulumi.Output[str | None]
    cluster: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        user: pulumi.Input[str],
        account: pulumi.Input[str],
        tenant: pulumi.Input[str],
        default_account: pulumi.Input[str] | None = None,
        fairshare: pulumi.Input[int | str] = "parent",
        max_jobs: pulumi.Input[int] | None = None,
        grp_tres_mins_gpus: pulumi.Input[int] | None = None,
        qos: Names | None = None,
        default_qos: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`default_account` defaults to `account`; `fairshare` is a number or `parent`;
        `grp_tres_mins_gpus` is the GPU-minute budget (GrpTRESMins=gres/gpu=N)."""
        inputs: dict[str, object] = {
            "user": user,
            "account": account,
            "tenant": tenant,
            "default_account": default_account if default_account is not None else account,
            "fairshare": fairshare,
            "max_jobs": max_jobs,
            "grp_tres_mins_gpus": grp_tres_mins_gpus,
            "qos": qos,
            "default_qos": default_qos,
            "cluster": None,
        }
        super().__init__(SlurmUserProvider(), resource_name, inputs, opts)


class SlurmPartition(Resource, module="slurm", name="Partition"):
    """A tenant partition (runbook 4d): one line of SLURM_PARTITIONS_FILE, applied with `scontrol
    reconfigure`, with Default=NO. `allow_accounts` must include the tenant's account (named by
    its slug): that is the mark. A change of `name` replaces it; the rest is rewritten in place,
    which is how the offboarding's frozen stage sets `state` to DOWN."""

    name: pulumi.Output[str]
    tenant: pulumi.Output[str]
    nodes: pulumi.Output[str]
    allow_accounts: pulumi.Output[list[str]]
    max_time: pulumi.Output[str]
    default_time: pulumi.Output[str]
    preempt_mode: pulumi.Output[str]
    oversubscribe: pulumi.Output[str]
    state: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        name: pulumi.Input[str],
        tenant: pulumi.Input[str],
        nodes: pulumi.Input[str],
        allow_accounts: Names,
        max_time: pulumi.Input[str],
        default_time: pulumi.Input[str],
        preempt_mode: pulumi.Input[str] = "OFF",
        oversubscribe: pulumi.Input[str] = "EXCLUSIVE",
        state: pulumi.Input[str] = "UP",
        lifecycle: Lifecycle | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`nodes` is a hostlist (`gpu-[01-08]`); times are `[D-]HH:MM:SS` (`max_time` may be
        UNLIMITED); `oversubscribe` is EXCLUSIVE or NO; `state` UP or DOWN."""
        inputs: dict[str, object] = {
            "name": name,
            "tenant": tenant,
            "lifecycle": lifecycle,
            "nodes": nodes,
            "allow_accounts": allow_accounts,
            "max_time": max_time,
            "default_time": default_time,
            "preempt_mode": preempt_mode,
            "oversubscribe": oversubscribe,
            "state": state,
        }
        super().__init__(SlurmPartitionProvider(), resource_name, inputs, opts)


class SlurmDrainStart(Resource, module="slurm", name="DrainStart"):
    """Offboarding step 2 begun: pending jobs of `accounts` cancelled (listed in `cancelled`),
    and in `hard` mode TERM sent to every running job (`term_sent_at`)."""

    started_at: pulumi.Output[float]
    term_sent_at: pulumi.Output[float | None]
    cancelled: pulumi.Output[list[str]]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        accounts: Sequence[str],
        mode: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "accounts": list(accounts),
            "mode": mode,
            "started_at": None,
            "term_sent_at": None,
            "cancelled": None,
        }
        super().__init__(DrainStartProvider(), resource_name, inputs, opts)


class SlurmDrained(Resource, module="slurm", name="Drained"):
    """Offboarding step 2 done: the queue of `accounts` is empty. Each `up` waits at most
    `wait_seconds` for it, then fails with the progress; `hard` mode ends what is left
    `timeout_seconds` after the TERM."""

    drained_at: pulumi.Output[float]

    def __init__(
        self,
        resource_name: str,
        *,
        start: SlurmDrainStart,
        tenant: str,
        accounts: Sequence[str],
        mode: str,
        timeout_seconds: int,
        wait_seconds: int,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "accounts": list(accounts),
            "mode": mode,
            "started_at": start.started_at,
            "term_sent_at": start.term_sent_at,
            "timeout_seconds": timeout_seconds,
            "wait_seconds": wait_seconds,
            "drained_at": None,
        }
        super().__init__(DrainedProvider(), resource_name, inputs, opts)
