"""The Slurm resources of a tenant (runbook step 4), as the program declares them.

Their types are `pulumi-python:dynamic/slurm:<Name>`. Their fields, each given as a keyword
argument, are those of the field table (`fields`): a name it does not have is a TypeError. Every
one takes `tenant`, the tenant's slug, which is also its ownership mark in Slurm; the
tenant-level ones (QoS, tenant account, partition) take `lifecycle`, and refuse deletion before
offboarding's stage destroy. Outputs hold what Slurm reports (Description lowercased, times as
Slurm prints them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import Resource, ResourceProvider

from providers.slurm import fields
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


class _TableResource(Resource):
    """A resource whose fields are those of `kind` in the table, given as keyword arguments
    (pulumi Inputs), and made by `provider_type`."""

    kind: ClassVar[fields.Kind]
    provider_type: ClassVar[type[ResourceProvider]]

    def __init__(
        self, resource_name: str, opts: pulumi.ResourceOptions | None = None, **given: Any
    ) -> None:
        super().__init__(self.provider_type(), resource_name, self.kind.inputs(given), opts)


class SlurmQos(_TableResource, module="slurm", name="Qos"):
    """A QoS (runbook 4c), marked as the tenant's by its Description."""

    kind = fields.QOS
    provider_type = SlurmQosProvider
    name: pulumi.Output[str]


class SlurmAccount(_TableResource, module="slurm", name="Account"):
    """An account and its association on the cluster (runbook 4a), marked as the tenant's by its
    Organization."""

    kind = fields.ACCOUNT
    provider_type = SlurmAccountProvider
    name: pulumi.Output[str]


class SlurmUser(_TableResource, module="slurm", name="User"):
    """A user's association with one of the tenant's accounts (runbook 4b); `default_account`
    defaults to `account`."""

    kind = fields.USER
    provider_type = SlurmUserProvider

    def __init__(
        self, resource_name: str, opts: pulumi.ResourceOptions | None = None, **given: Any
    ) -> None:
        if given.get("default_account") is None:
            given["default_account"] = given.get("account")
        super().__init__(resource_name, opts, **given)


class SlurmPartition(_TableResource, module="slurm", name="Partition"):
    """A tenant partition (runbook 4d), applied with `scontrol reconfigure`."""

    kind = fields.PARTITION
    provider_type = SlurmPartitionProvider
    name: pulumi.Output[str]


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
        # Kept in plain values, so the drained step names the same queue without repeating it.
        self.drain: dict[str, Any] = {"tenant": tenant, "accounts": list(accounts), "mode": mode}
        inputs = {**self.drain, "started_at": None, "term_sent_at": None, "cancelled": None}
        super().__init__(DrainStartProvider(), resource_name, inputs, opts)


class SlurmDrained(Resource, module="slurm", name="Drained"):
    """Offboarding step 2 done: the queue of the `start`'s accounts is empty. Each `up` waits at
    most `wait_seconds` for it, then fails with the progress; `hard` mode ends what is left
    `timeout_seconds` after the TERM."""

    drained_at: pulumi.Output[float]

    def __init__(
        self,
        resource_name: str,
        *,
        start: SlurmDrainStart,
        timeout_seconds: int,
        wait_seconds: int,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            **start.drain,
            "started_at": start.started_at,
            "term_sent_at": start.term_sent_at,
            "timeout_seconds": timeout_seconds,
            "wait_seconds": wait_seconds,
            "drained_at": None,
        }
        super().__init__(DrainedProvider(), resource_name, inputs, opts)
