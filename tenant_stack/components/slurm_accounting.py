"""Runbook step 4: the tenant's QoS, its account with the contract's caps bound to those QoS, the
team sub-accounts, one association per user with the per-user limits and GPU-minute budget, and
the partition whose nodes are the reservation's.

Offboarding step 1 (`frozen`, and every stage after it) sets GrpJobs=0 and GrpSubmitJobs=0 on the
account and every sub-account and takes the partition DOWN; moving back to `active` puts the
contract's limits back and the partition UP."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from providers.slurm.resources import (
    SlurmAccount,
    SlurmDrained,
    SlurmDrainStart,
    SlurmPartition,
    SlurmQos,
    SlurmUser,
)

TYPE = "gpu-tenants:slurm:SlurmAccounting"


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int
    gpus: int
    max_wall: str | None  # None: no limit
    flags: list[str]
    preempt_mode: str | None
    # How long its jobs run before they may be preempted: the wall limit for a QoS whose jobs
    # are never preempted; None: the cluster's (none).
    preempt_exempt_time: str | None


@dataclass(frozen=True)
class Team:
    name: str
    description: str
    fairshare: int
    gpus: int | None  # its own cap; None: the tenant's alone


@dataclass(frozen=True)
class User:
    username: str
    team: str | None  # None: the association sits on the tenant's account


@dataclass(frozen=True)
class Partition:
    nodes: str  # hostlist, as the Reservation's nodes
    max_time: str
    default_time: str
    preempt_mode: str
    oversubscribe: str


@dataclass(frozen=True)
class Drain:
    mode: str  # graceful | hard
    timeout_seconds: int  # graceful: how long the queue may take; hard: TERM to KILL
    wait_seconds: int  # how long one `up` waits for the queue before it reports progress


@dataclass(frozen=True)
class SlurmAccountingArgs:
    tenant: str
    description: str
    fairshare: int
    gpus: int
    grp_jobs: int
    max_jobs_per_user: int
    gpu_minutes_per_user: int
    normal: Qos
    interactive: Qos
    teams: list[Team]
    users: list[User]
    # None for on-demand and spot tenants, who get no partition of their own.
    partition: Partition | None
    frozen: bool  # offboarding has reached stage frozen: no job may start or be submitted
    drain: Drain | None  # offboarding has reached stage drained: the queue is emptied
    lifecycle: Mapping[str, object]  # recorded on tenant-level objects (providers.base.LIFECYCLE)
    after: list[pulumi.Resource]


class SlurmAccounting(pulumi.ComponentResource):
    account: pulumi.Output[str]
    partition: pulumi.Output[str | None]
    qos: pulumi.Output[list[str]]
    cancelled_jobs: pulumi.Output[list[str]]  # the pending jobs the drain cancelled

    def __init__(
        self, name: str, args: SlurmAccountingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        first = pulumi.ResourceOptions(parent=self, depends_on=args.after)
        child = pulumi.ResourceOptions(parent=self)
        # A frozen association may neither start nor queue a job (0); unfrozen, no submit limit.
        grp_submit_jobs = 0 if args.frozen else None
        qos = [
            SlurmQos(
                f"{name}-qos-{q.name}",
                name=q.name,
                tenant=args.tenant,
                priority=q.priority,
                grp_tres_gpus=q.gpus,
                max_wall=q.max_wall,
                flags=q.flags,
                preempt_mode=q.preempt_mode,
                preempt_exempt_time=q.preempt_exempt_time,
                lifecycle=args.lifecycle,
                opts=first,
            )
            for q in (args.normal, args.interactive)
        ]
        qos_names = [q.name for q in qos]
        account = SlurmAccount(
            f"{name}-account",
            name=args.tenant,
            tenant=args.tenant,
            description=args.description,
            fairshare=args.fairshare,
            grp_tres_gpus=args.gpus,
            grp_jobs=0 if args.frozen else args.grp_jobs,
            grp_submit_jobs=grp_submit_jobs,
            qos=qos_names,
            default_qos=qos[0].name,
            lifecycle=args.lifecycle,
            opts=child,
        )
        accounts = {args.tenant: account}
        for team in args.teams:
            accounts[team.name] = SlurmAccount(
                f"{name}-account-{team.name}",
                name=team.name,
                tenant=args.tenant,
                description=team.description,
                fairshare=team.fairshare,
                grp_tres_gpus=team.gpus,
                parent=account.name,
                grp_jobs=0 if args.frozen else None,
                grp_submit_jobs=grp_submit_jobs,
                opts=child,
            )
        for user in args.users:
            home = accounts[user.team or args.tenant]
            SlurmUser(
                f"{name}-user-{user.username}",
                user=user.username,
                account=home.name,
                tenant=args.tenant,
                fairshare="parent",
                max_jobs=args.max_jobs_per_user,
                grp_tres_mins_gpus=args.gpu_minutes_per_user,
                qos=qos_names,
                default_qos=qos[0].name,
                opts=child,
            )
        partition: pulumi.Output[str | None] = pulumi.Output.from_input(None)
        frozen: list[pulumi.Resource] = list(accounts.values())
        if args.partition is not None:
            p = args.partition
            partition_resource = SlurmPartition(
                f"{name}-partition",
                name=args.tenant,
                tenant=args.tenant,
                nodes=p.nodes,
                # Slurm matches a job's own account, not its parents: the runbook's
                # AllowAccounts=<tenant> alone leaves every team's users outside their partition.
                allow_accounts=[a.name for a in accounts.values()],
                max_time=p.max_time,
                default_time=p.default_time,
                preempt_mode=p.preempt_mode,
                oversubscribe=p.oversubscribe,
                state="DOWN" if args.frozen else "UP",
                lifecycle=args.lifecycle,
                opts=first,
            )
            partition = partition_resource.name
            frozen.append(partition_resource)
        cancelled: pulumi.Output[list[str]] = pulumi.Output.from_input([])
        if args.drain is not None:
            cancelled = self._drain(name, args, frozen).cancelled
        self.account = account.name
        self.partition = partition
        self.qos = pulumi.Output.all(*qos_names)
        self.cancelled_jobs = cancelled
        self.register_outputs(
            {
                "account": self.account,
                "partition": self.partition,
                "qos": self.qos,
                "cancelled_jobs": self.cancelled_jobs,
            }
        )

    def _drain(
        self, name: str, args: SlurmAccountingArgs, frozen: list[pulumi.Resource]
    ) -> SlurmDrainStart:
        """Step 2, once step 1's limits are in place (pending jobs can then never start)."""
        assert args.drain is not None
        start = SlurmDrainStart(
            f"{name}-drain-start",
            tenant=args.tenant,
            accounts=[args.tenant, *(team.name for team in args.teams)],
            mode=args.drain.mode,
            opts=pulumi.ResourceOptions(parent=self, depends_on=frozen),
        )
        SlurmDrained(
            f"{name}-drained",
            start=start,
            timeout_seconds=args.drain.timeout_seconds,
            wait_seconds=args.drain.wait_seconds,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return start
