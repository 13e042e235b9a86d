"""Runbook step 2: the tenant's Authentik group under `tenants` (with tenant_slug and its pinned
gidNumber), the `<slug>-admins` group when the tenant names admins, and every user with name,
email, SSH keys and pinned uidNumber/gidNumber (strings, as Authentik 2024.10 honours them).

Offboarding step 5 (stage destroy, `revoked`): every user is disabled and taken out of the
groups, and stays in the stack as a protected tombstone that depends on nothing (no group name
as input), so `pulumi destroy --exclude-protected` deletes the groups and keeps the users for the
retention purge to delete once the tenant's accounting horizon has passed (accounting names users
by uid). Once the destroy is done (`offboarded`), the tombstones are all this declares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from providers.authentik.resources import TenantGroup, TenantUser

TYPE = "gpu-tenants:identity:IdentityGroup"


@dataclass(frozen=True)
class IdentityUser:
    username: str
    full_name: str
    email: str
    uid: int
    ssh_keys: list[str]
    admin: bool
    erased: bool = False  # a right to erasure: name and email redacted, logins forgotten


@dataclass(frozen=True)
class IdentityGroupArgs:
    tenant: str
    parent_group: str
    gid: int
    admins_group: str | None
    admins_gid: int | None
    users: list[IdentityUser]
    lifecycle: Mapping[str, object]  # recorded on the groups (providers.base.LIFECYCLE)
    revoked: bool  # stage destroy of a live tenant: users become disabled tombstones
    abandoned: bool  # an onboarding rolled back: destroy deletes the users, keeping none
    tombstone_days: int  # how long a tombstone is kept (the tenant's accounting horizon)
    # The destroy is done: the groups are gone, and the tombstones are all there is to declare.
    offboarded: bool
    # Created after these, deleted before them: offboarding revokes identity before Slurm.
    after: list[pulumi.Resource]


class IdentityGroup(pulumi.ComponentResource):
    group: pulumi.Output[str]
    gid: pulumi.Output[int]
    uids: pulumi.Output[dict[str, int]]

    def __init__(
        self, name: str, args: IdentityGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        tombstone = pulumi.ResourceOptions(parent=self, protect=True)
        if args.offboarded:
            for user in args.users:
                _user(name, args, user, [], tombstone)
            self.group = pulumi.Output.from_input(args.tenant)
            self.gid = pulumi.Output.from_input(args.gid)
            self.uids = pulumi.Output.from_input({u.username: u.uid for u in args.users})
            self.register_outputs({"group": self.group, "gid": self.gid, "uids": self.uids})
            return
        group = TenantGroup(
            f"{name}-group",
            tenant=args.tenant,
            group_name=args.tenant,
            parent=args.parent_group,
            gid=args.gid,
            attributes={"tenant_slug": args.tenant},
            lifecycle=args.lifecycle,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        admins = None
        if args.admins_group and args.admins_gid is not None:
            admins = TenantGroup(
                f"{name}-admins",
                tenant=args.tenant,
                group_name=args.admins_group,
                parent=args.parent_group,
                gid=args.admins_gid,
                attributes={"tenant_slug": args.tenant},
                lifecycle=args.lifecycle,
                opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
            )
        users = []
        for user in args.users:
            groups: list[pulumi.Input[str]] = [group.name]
            if admins is not None and user.admin:
                groups.append(admins.name)
            if args.revoked:
                users.append(_user(name, args, user, [], tombstone))
            else:
                users.append(_user(name, args, user, groups, pulumi.ResourceOptions(parent=self)))
        self.group = group.name
        self.gid = group.gid
        self.uids = pulumi.Output.all(*[u.uid for u in users]).apply(
            lambda uids: {u.username: uid for u, uid in zip(args.users, uids, strict=True)}
        )
        self.register_outputs({"group": self.group, "gid": self.gid, "uids": self.uids})


def _user(
    name: str,
    args: IdentityGroupArgs,
    user: IdentityUser,
    groups: list[pulumi.Input[str]],
    opts: pulumi.ResourceOptions,
) -> TenantUser:
    """A user of the tenant, or with `args.revoked` its disabled tombstone, in no group."""
    return TenantUser(
        f"{name}-user-{user.username}",
        tenant=args.tenant,
        username=user.username,
        full_name=user.full_name,
        email=user.email,
        uid=user.uid,
        gid=args.gid,
        ssh_keys=user.ssh_keys,
        groups=groups,
        active=not args.revoked,
        retention_days=args.tombstone_days if args.revoked else None,
        erased=user.erased,
        abandoned=args.abandoned,
        opts=opts,
    )
