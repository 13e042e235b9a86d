"""Runbook step 4: the tenant's QoS, its account with the contract's caps bound to those QoS, the
team sub-accounts, one association per user with the per-user limits and GPU-minute budget, and
the partition whose nodes are the reservation's."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from providers.slurm.resources import SlurmAccount, SlurmPartition, SlurmQos, SlurmUser

TYPE = "gpu-tenants:slurm:SlurmAccounting"


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int
    gpus: int
    max_wall: str | None  # None: no limit
    flags: list[str]
    preempt_mode: str | None


@dataclass(frozen=True)
class Team:
    name: str
    description: str
    fairshare: int


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
    after: list[pulumi.Resource]


class SlurmAccounting(pulumi.ComponentResource):
    account: pulumi.Output[str]
    partition: pulumi.Output[str | None]
    qos: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: SlurmAccountingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        first = pulumi.ResourceOptions(parent=self, depends_on=args.after)
        child = pulumi.ResourceOptions(parent=self)
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
            grp_jobs=args.grp_jobs,
            qos=qos_names,
            default_qos=qos[0].name,
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
                parent=account.name,
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
        if args.partition is not None:
            p = args.partition
            partition = SlurmPartition(
                f"{name}-partition",
                name=args.tenant,
                tenant=args.tenant,
                nodes=p.nodes,
                allow_accounts=[account.name],
                max_time=p.max_time,
                default_time=p.default_time,
                preempt_mode=p.preempt_mode,
                oversubscribe=p.oversubscribe,
                opts=first,
            ).name
        self.account = account.name
        self.partition = partition
        self.qos = pulumi.Output.all(*qos_names)
        self.register_outputs(
            {"account": self.account, "partition": self.partition, "qos": self.qos}
        )
