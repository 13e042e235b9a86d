"""The rules across fields and against the platform (`check_spec`): capacity, identity, Slurm,
storage and quotas, network and login, lifecycle. They run only on a spec whose fields are all
valid, since a rule over a malformed field would only add noise; each problem names the field a
reviewer should change and what would be right.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator

from providers.retention.objects import LEDGER_PREFIX
from providers.weka.settings import UPLOADS_PREFIX
from tenant_stack.errors import Problem
from tenant_stack.lifecycle import SIGNED_OFF
from tenant_stack.partition_types import NODELESS_PARTITION_TYPES
from tenant_stack.platform import Platform
from tenant_stack.spec.models import TenantSpec, hostlist
from tenant_stack.spec.quantities import Duration, format_cpu, format_size
from tenant_stack.spec.ssh_keys import parse_ssh_key


def _repeats(keys: Iterable[Hashable]) -> Iterator[tuple[int, int]]:
    """(index, index of the first occurrence) for every key seen before."""
    first: dict[Hashable, int] = {}
    for index, key in enumerate(keys):
        if key in first:
            yield index, first[key]
        else:
            first[key] = index


def check_spec(spec: TenantSpec, platform: Platform) -> list[Problem]:
    """Every rule across fields and against the platform; needs a spec whose fields are valid."""
    return [
        *_names(spec, platform),
        *_capacity(spec, platform),
        *_identity(spec, platform),
        *_slurm(spec),
        *_qos_reach(spec, platform),
        *_never_preempted(spec),
        *_storage_and_quota(spec),
        *_network_and_login(spec, platform),
        *_lifecycle(spec),
        *_contact(spec, platform),
    ]


def platform_names(platform: Platform) -> dict[str, str]:
    """The names the platform's own objects have, each with what it is: no name of a tenant's
    (namespace, Slurm account, QoS or partition, Authentik group, Weka organization, retention
    store prefix) may be one of them, or the tenant's `up` would take the platform's object over
    and its destroy delete it."""
    kubernetes, weka, key = platform.kubernetes, platform.weka, "Pulumi.prod.yaml"
    return {
        kubernetes.auth_namespace: f"the namespace of Authentik and the LDAP bind Secret "
        f"({key} kubernetes.auth_namespace)",
        kubernetes.slurm_namespace: f"Slurm's namespace ({key} kubernetes.slurm_namespace)",
        kubernetes.reservation_operator_namespace: "the reservation operator's namespace "
        f"({key} kubernetes.reservation_operator_namespace)",
        platform.authentik.tenants_group: "the Authentik group every tenant's group is under "
        f"({key} authentik.tenants_group)",
        platform.slurm.cluster: f"the Slurm cluster ({key} slurm.cluster)",
        weka.filesystem_group: f"Weka's filesystem group ({key} weka.filesystem_group)",
        weka.shared_home_filesystem: "the shared home filesystem "
        f"({key} weka.shared_home_filesystem)",
        weka.shared_scratch_filesystem: "the shared scratch filesystem "
        f"({key} weka.shared_scratch_filesystem)",
        weka.object_store: f"Weka's object store bucket ({key} weka.object_store)",
        UPLOADS_PREFIX: "the retention store's prefix of every tenant's uploaded snapshots",
        LEDGER_PREFIX: "the retention store's prefix of the retention ledger",
    }


def _names(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    taken = platform_names(platform)
    named = [
        ("slug", spec.slug, "namespace, Slurm account and partition, group and organization"),
        ("slug", spec.admins_group, "admins group"),
        ("slug", spec.qos_normal, "QoS"),
        ("slug", spec.qos_interactive, "QoS"),
        *(
            (f"slurm.teams.{index}.name", team.name, "Slurm account")
            for index, team in enumerate(spec.slurm.teams)
        ),
    ]
    for field, name, what in named:
        if name in taken:
            yield Problem(
                field,
                f"{spec.slug!r} would name its {what} {name!r}, which is {taken[name]}; "
                "choose another name",
            )


def _capacity(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    contract, reservation = spec.contract, spec.reservation
    sku = platform.skus.get(contract.gpu_sku)
    if sku is None:
        yield Problem(
            "contract.gpu_sku",
            f"{contract.gpu_sku!r} is not in the platform's SKU catalogue; "
            f"use one of {', '.join(sorted(platform.skus))}",
        )
    pool = platform.node_pools.get(reservation.hardware_pool)
    if pool is None:
        yield Problem(
            "reservation.hardware_pool",
            f"{reservation.hardware_pool!r} is not a node pool of cluster "
            f"{platform.cluster_name!r}; pools: {', '.join(sorted(platform.node_pools))}",
        )
    elif sku is not None and pool.sku != contract.gpu_sku:
        yield Problem(
            "reservation.hardware_pool",
            f"pool {reservation.hardware_pool} holds {pool.sku} nodes but contract.gpu_sku is "
            f"{contract.gpu_sku}; pick a pool of {contract.gpu_sku} nodes",
        )
    if contract.partition_type == "reserved" and not reservation.nodes:
        yield Problem(
            "reservation.nodes",
            "a reserved partition needs the named nodes of its reservation; list them",
        )
    if contract.partition_type != "reserved" and reservation.nodes:
        yield Problem(
            "reservation.nodes",
            f"partition_type {contract.partition_type} reserves no nodes; remove the list, "
            "or make partition_type reserved",
        )
    for index, first in _repeats(reservation.nodes):
        yield Problem(
            f"reservation.nodes.{index}",
            f"{reservation.nodes[index]} is listed twice (reservation.nodes.{first})",
        )
    if pool is not None:
        for index, node in enumerate(reservation.nodes):
            if node not in pool.nodes:
                yield Problem(
                    f"reservation.nodes.{index}",
                    f"{node} is not a node of pool {reservation.hardware_pool} "
                    f"({hostlist(pool.nodes)})",
                )
    if sku is None:
        return
    if contract.partition_type == "reserved" and reservation.nodes:
        nodes = len(set(reservation.nodes))
        if contract.gpus != nodes * sku.gpus_per_node:
            yield Problem(
                "contract.gpus",
                f"{contract.gpus} GPUs, but the reservation's {nodes} nodes x "
                f"{sku.gpus_per_node} GPUs per {contract.gpu_sku} node = "
                f"{nodes * sku.gpus_per_node}; make them agree",
            )
    elif contract.gpus > (inventory := platform.gpu_inventory()[contract.gpu_sku]):
        yield Problem(
            "contract.gpus",
            f"{contract.gpus} GPUs, but the fleet has {inventory} {contract.gpu_sku} GPUs",
        )
    users = len(spec.users)
    if contract.gpu_minutes % users:
        yield Problem(
            "contract.gpu_minutes",
            f"{contract.gpu_minutes} GPU-minutes do not split evenly between {users} users "
            f"({contract.gpu_minutes / users:.2f} each); use a multiple of {users}, such as "
            f"{contract.gpu_minutes // users * users}",
        )
    if contract.interactive_wall_limit > contract.wall_limit:
        yield Problem(
            "contract.interactive_wall_limit",
            f"{contract.interactive_wall_limit} is longer than wall_limit "
            f"{contract.wall_limit}; interactive jobs get at most the wall limit",
        )
    if contract.term.end <= contract.term.start:
        yield Problem(
            "contract.term.end",
            f"{contract.term.end} is not after term.start {contract.term.start}",
        )


def _identity(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    users, ldap = spec.users, platform.ldap
    if spec.identity.gid < ldap.gid_start_number:
        yield Problem(
            "identity.gid",
            f"{spec.identity.gid} is below the platform's gid_start_number "
            f"{ldap.gid_start_number}; pin a gid from {ldap.gid_start_number} up",
        )
    for index, first in _repeats(u.username for u in users):
        yield Problem(
            f"users.{index}.username",
            f"{users[index].username!r} is already users.{first}.username; usernames are unique",
        )
    for index, first in _repeats(u.uid for u in users):
        yield Problem(
            f"users.{index}.uid",
            f"{users[index].uid} is already {users[first].username}'s uid "
            f"(users.{first}.uid); pin an unused uid",
        )
    for index, first in _repeats(u.email.casefold() for u in users):
        yield Problem(
            f"users.{index}.email",
            f"{users[index].email} is already {users[first].username}'s email "
            f"(users.{first}.email)",
        )
    for index, user in enumerate(users):
        if user.uid < ldap.uid_start_number:
            yield Problem(
                f"users.{index}.uid",
                f"{user.uid} is below the platform's uid_start_number {ldap.uid_start_number}; "
                f"pin a uid from {ldap.uid_start_number} up",
            )
    admins_gid = spec.identity.admins_gid
    if spec.identity.admins and admins_gid is None:
        yield Problem(
            "identity.admins_gid",
            f"required when identity.admins is set: pin the gidNumber of {spec.admins_group}",
        )
    if admins_gid is not None and admins_gid == spec.identity.gid:
        yield Problem(
            "identity.admins_gid", f"{admins_gid} is already identity.gid; pin another gid"
        )
    if admins_gid is not None and admins_gid < ldap.gid_start_number:
        yield Problem(
            "identity.admins_gid",
            f"{admins_gid} is below the platform's gid_start_number {ldap.gid_start_number}",
        )
    names = [u.username for u in users]
    for index, admin in enumerate(spec.identity.admins):
        if admin not in names:
            yield Problem(
                f"identity.admins.{index}",
                f"{admin!r} is not a user of this tenant; admins are chosen from "
                f"{', '.join(names)}",
            )
    for index, first in _repeats(spec.identity.admins):
        yield Problem(f"identity.admins.{index}", f"listed twice (identity.admins.{first})")
    keys: dict[bytes, str] = {}
    for index, user in enumerate(users):
        for number, text in enumerate(user.ssh_keys):
            key = parse_ssh_key(text)
            where = f"users.{index}.ssh_keys.{number}"
            if key.blob in keys:
                yield Problem(
                    where,
                    f"key {key.fingerprint()} is already {keys[key.blob]}; every key "
                    "belongs to one user and is listed once",
                )
            keys.setdefault(key.blob, where)


# QoS flags that let a QoS's limits override its partition's (OverPartQOS) or its MaxWall the
# partition's time limit (PartitionTimeLimit): on the shared pool's partitions that is every
# other tenant's limit.
_OVERRIDES_PARTITION = ("OverPartQOS", "PartitionTimeLimit")


def _qos_reach(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    """A QoS setting that would reach other tenants' jobs: a priority above the platform's cap,
    a flag overriding a shared partition's limits, and a spot tenant's jobs made unpreemptible."""
    cap, kind = platform.slurm.max_qos_priority, spec.contract.partition_type
    for name, qos in (
        ("normal", spec.slurm.qos.normal),
        ("interactive", spec.slurm.qos.interactive),
    ):
        if qos.priority > cap:
            yield Problem(
                f"slurm.qos.{name}.priority",
                f"{qos.priority} is above the platform's cap {cap} (Pulumi.prod.yaml "
                "slurm.max_qos_priority): a QoS priority weighs against every tenant's jobs",
            )
        for flag in sorted(set(qos.flags) & set(_OVERRIDES_PARTITION)):
            if kind in NODELESS_PARTITION_TYPES:
                yield Problem(
                    f"slurm.qos.{name}.flags",
                    f"{flag} lets this QoS override the limits of the shared pool's partition, "
                    f"which every {kind} tenant shares; only a reserved tenant may set it",
                )
        if kind == "spot" and qos.preempt_mode == "off":
            yield Problem(
                f"slurm.qos.{name}.preempt_mode",
                "off would make a spot tenant's jobs unpreemptible on the shared pool; "
                "use cancel or requeue",
            )
    if kind == "spot" and spec.slurm.partition.preempt_mode == "off":
        yield Problem(
            "slurm.partition.preempt_mode",
            "off would make a spot tenant's jobs unpreemptible on the shared pool; "
            "use cancel or requeue",
        )


def _never_preempted(spec: TenantSpec) -> Iterator[Problem]:
    """`preempt_mode: off` exempts a QoS's jobs from preemption for their wall limit (Slurm's
    PreemptExemptTime, which has no unlimited value), so such a QoS needs a wall limit."""
    contract = spec.contract
    for name, qos, wall, wall_field in (
        ("normal", spec.slurm.qos.normal, contract.wall_limit, "wall_limit"),
        ("interactive", spec.slurm.qos.interactive, contract.interactive_wall_limit,
         "interactive_wall_limit"),
    ):  # fmt: skip
        if qos.preempt_mode == "off" and wall.seconds is None:
            yield Problem(
                f"slurm.qos.{name}.preempt_mode",
                f"off keeps this QoS's jobs from preemption for their wall limit (Slurm's "
                f"PreemptExemptTime, which cannot be unlimited), and contract.{wall_field} is "
                "UNLIMITED: give the contract a wall limit, or use cancel or requeue",
            )


def _slurm(spec: TenantSpec) -> Iterator[Problem]:
    slurm, teams = spec.slurm, spec.slurm.teams
    for index, first in _repeats(t.name for t in teams):
        yield Problem(f"slurm.teams.{index}.name", f"already slurm.teams.{first}.name")
    for index, team in enumerate(teams):
        if team.name == spec.slug or (
            spec.imported is None and not team.name.endswith(f"-{spec.short_name}")
        ):
            yield Problem(
                f"slurm.teams.{index}.name",
                f"{team.name!r}: Slurm accounts are cluster-wide, so a team's name ends in "
                f"'-{spec.short_name}' and differs from the slug, such as "
                f"'ml-team-{spec.short_name}'",
            )
    team_names = [t.name for t in teams]
    for index, user in enumerate(spec.users):
        if user.team is not None and user.team not in team_names:
            known = ", ".join(team_names) or "none are defined"
            yield Problem(
                f"users.{index}.team",
                f"{user.team!r} is not a team in slurm.teams ({known}); "
                "name one, or leave team out to use the tenant account",
            )
    if slurm.max_jobs_per_user > slurm.grp_jobs:
        yield Problem(
            "slurm.max_jobs_per_user",
            f"{slurm.max_jobs_per_user} is more than the tenant's grp_jobs {slurm.grp_jobs}",
        )
    for index, team in enumerate(slurm.teams):
        if team.gpus is not None and team.gpus > spec.contract.gpus:
            yield Problem(
                f"slurm.teams.{index}.gpus",
                f"{team.gpus} is more than the contract's {spec.contract.gpus} GPUs",
            )
    for name, qos in (("normal", slurm.qos.normal), ("interactive", slurm.qos.interactive)):
        if qos.gpus > spec.contract.gpus:
            yield Problem(
                f"slurm.qos.{name}.gpus",
                f"{qos.gpus} is more than the contract's {spec.contract.gpus} GPUs",
            )
    if slurm.partition.default_time > spec.contract.wall_limit:
        yield Problem(
            "slurm.partition.default_time",
            f"{slurm.partition.default_time} is longer than contract.wall_limit "
            f"{spec.contract.wall_limit}",
        )


def _storage_and_quota(spec: TenantSpec) -> Iterator[Problem]:
    storage, quota = spec.storage, spec.kubernetes.quota
    for name, limits in (("home_per_user", storage.home_per_user), ("scratch", storage.scratch)):
        if limits.soft > limits.hard:
            yield Problem(
                f"storage.{name}.soft",
                f"{format_size(limits.soft)} is above the hard limit {format_size(limits.hard)}; "
                "the soft limit warns before the hard one stops writes",
            )
    homes = len(spec.users) * storage.home_per_user.hard
    if homes > storage.home_capacity:
        yield Problem(
            "storage.home_capacity",
            f"{format_size(storage.home_capacity)} cannot hold {len(spec.users)} users x "
            f"{format_size(storage.home_per_user.hard)} = {format_size(homes)}",
        )
    for index, first in _repeats(p.name for p in storage.pvcs):
        yield Problem(f"storage.pvcs.{index}.name", f"already storage.pvcs.{first}.name")
    claimed = sum(p.size for p in storage.pvcs)
    if claimed > storage.scratch.hard:
        yield Problem(
            "storage.pvcs",
            f"the claims total {format_size(claimed)}, more than the scratch hard limit "
            f"{format_size(storage.scratch.hard)} they are carved from",
        )
    if claimed > quota.requests_storage:
        yield Problem(
            "kubernetes.quota.requests_storage",
            f"{format_size(quota.requests_storage)} is less than the {format_size(claimed)} "
            "of storage.pvcs",
        )
    if len(storage.pvcs) > quota.persistent_volume_claims:
        yield Problem(
            "kubernetes.quota.persistent_volume_claims",
            f"{quota.persistent_volume_claims} is fewer than the {len(storage.pvcs)} storage.pvcs",
        )
    if quota.requests_memory > quota.limits_memory:
        yield Problem(
            "kubernetes.quota.requests_memory",
            f"{format_size(quota.requests_memory)} is above limits_memory "
            f"{format_size(quota.limits_memory)}",
        )
    request = spec.kubernetes.container_defaults.request
    limit = spec.kubernetes.container_defaults.limit
    where = "kubernetes.container_defaults"
    if request.cpu > limit.cpu:
        yield Problem(
            f"{where}.request.cpu",
            f"{format_cpu(request.cpu)} CPUs is above limit.cpu {format_cpu(limit.cpu)}",
        )
    if request.memory > limit.memory:
        yield Problem(
            f"{where}.request.memory",
            f"{format_size(request.memory)} is above limit.memory {format_size(limit.memory)}",
        )
    if request.cpu > quota.requests_cpu:
        yield Problem(
            f"{where}.request.cpu",
            f"{format_cpu(request.cpu)} CPUs is above the namespace quota requests_cpu "
            f"{format_cpu(quota.requests_cpu)}",
        )
    if limit.memory > quota.limits_memory:
        yield Problem(
            f"{where}.limit.memory",
            f"{format_size(limit.memory)} is above the namespace quota limits_memory "
            f"{format_size(quota.limits_memory)}",
        )


def _network_and_login(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    network = spec.network
    if network.isolation == "pkey" and network.pkey is None:
        yield Problem("network.pkey", "pkey isolation needs the partition key, such as 0x0102")
    if network.isolation != "pkey" and network.pkey is not None:
        yield Problem("network.pkey", "a partition key is used only with isolation pkey; remove it")
    if network.isolation == "pkey" and platform.infiniband is None:
        yield Problem(
            "network.isolation",
            "pkey needs the platform's InfiniBand network for pods (Pulumi.prod.yaml "
            "infiniband), which this platform does not declare: use networkpolicy",
        )
    hostname, domain = spec.login.hostname, platform.dns_domain
    if not hostname.endswith(f".{domain}") or spec.slug not in hostname.split("."):
        yield Problem(
            "login.hostname",
            f"{hostname!r} must be under the platform's domain {domain} and name the tenant, "
            f"such as 'login.{spec.slug}.{domain}'",
        )


def _contact(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    if platform.notices and spec.lifecycle.reached("frozen") and spec.contract.contact is None:
        yield Problem(
            "contract.contact",
            f"stage {spec.lifecycle.stage} sends the customer the offboarding notice (runbook "
            "step 0): name who receives it, contract.contact {name, email}",
        )


def _lifecycle(spec: TenantSpec) -> Iterator[Problem]:
    imported = spec.imported
    if imported is not None and imported.adopt and imported.found is None:
        yield Problem(
            "imported.found",
            "required with imported.adopt: adoption takes over only the objects `import` "
            f"found and recorded; run `gpu-tenants import {spec.slug}` again",
        )
    lifecycle = spec.lifecycle
    signed_off = lifecycle.stage in SIGNED_OFF
    if signed_off and lifecycle.sign_off is None:
        yield Problem(
            "lifecycle.sign_off",
            f"stage {lifecycle.stage} needs a sign-off {{by, date, ticket, confirmation}}: "
            "nothing is deleted on a reviewer's approval alone, nor without the customer's "
            "confirmation or an internal escalation sign-off (confirmation: {kind: customer or "
            "escalation, by})",
        )
    sign_off = lifecycle.sign_off
    if (
        sign_off is not None
        and sign_off.confirmation.kind == "escalation"
        and sign_off.confirmation.by.casefold() == sign_off.by.casefold()
    ):
        yield Problem(
            "lifecycle.sign_off.confirmation.by",
            "the escalation sign-off in place of the customer's confirmation is a second "
            f"person's, not {sign_off.by}'s own (who signs off the stage): name who approved it",
        )
    if not signed_off and lifecycle.sign_off is not None:
        yield Problem(
            "lifecycle.sign_off",
            f"a sign-off authorises stage {' or '.join(SIGNED_OFF)} only; at stage "
            f"{lifecycle.stage} remove it, so an old sign-off cannot authorise a later destroy",
        )
    if lifecycle.abandoned and (lifecycle.stage != "active" or lifecycle.legal_hold):
        yield Problem(
            "lifecycle.abandoned",
            "rolls back an onboarding, at stage active and under no legal hold: a tenant whose "
            "offboarding began is taken down by its stages",
        )
    if lifecycle.abandoned and imported is not None:
        yield Problem(
            "lifecycle.abandoned",
            "an imported tenant was not onboarded by its stack, and abandoning it would delete "
            "what existed before (its users): offboard it by its stages",
        )
    if lifecycle.restore and lifecycle.stage == "destroy":
        yield Problem(
            "lifecycle.restore",
            "a restore brings an offboarded tenant back: set lifecycle.stage to the stage it "
            "returns to (active, say)",
        )
    timeout = lifecycle.drain_timeout.seconds or 0
    low, high = (60, 3600) if lifecycle.drain_mode == "hard" else (60, 14 * 86400)
    if not low <= timeout <= high:
        meaning = (
            "the grace between TERM and KILL"
            if lifecycle.drain_mode == "hard"
            else "the wait for the queue to empty"
        )
        yield Problem(
            "lifecycle.drain_timeout",
            f"{lifecycle.drain_timeout} is outside {Duration(low)}..{Duration(high)} for a "
            f"{lifecycle.drain_mode} drain ({meaning})",
        )
