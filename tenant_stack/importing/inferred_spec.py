"""A hand-built tenant's spec, inferred from what its backends hold, with a note for every field
saying where its value came from: found (read as it is), inferred (derived, with the rule), or
todo (no backend holds it: the value is the operator's, or the runbook's default, for review).

Where the runbook left a number to the directory (a user's uid, a group's gid), the spec pins
what Authentik's LDAP outpost hands out today, so that nothing a file carries changes owner.
Where the spec's naming rules are this project's own (a team ending in the tenant's short name,
the Weka organization's admin), the live names stay, and `imported` says so.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from tenant_stack.errors import Problem
from tenant_stack.importing.live_tenant import LiveTenant
from tenant_stack.live import quantity_bytes
from tenant_stack.partition_types import NodelessPartitionType
from tenant_stack.platform import Platform
from tenant_stack.spec.models import STAGES
from tenant_stack.spec.quantities import format_size, parse_duration

__all__ = ["Contract", "Inferred", "Note", "infer_spec"]

# What no backend holds and the runbook's change ticket carries: the operator gives it.
PARTITION_DEFAULTS = {"default_time": "1h", "oversubscribe": "exclusive", "preempt_mode": "off"}
DRAIN_DEFAULTS = {"drain_mode": "graceful", "drain_timeout": "48h", "retention_days": 30}


@dataclass(frozen=True)
class Contract:
    """The contract's facts no backend holds, from the change ticket."""

    term_start: date
    term_end: date
    partition_type: NodelessPartitionType | None = None  # for a tenant with no nodes
    gpu_sku: str | None = None  # for a tenant with no nodes
    contact: tuple[str, str] | None = None  # name, email: who receives the notices


@dataclass(frozen=True)
class Note:
    location: str  # the spec field
    kind: Literal["found", "inferred", "todo"]
    text: str

    def as_json(self) -> dict[str, str]:
        return {"field": self.location, "kind": self.kind, "from": self.text}


@dataclass(frozen=True)
class Inferred:
    document: dict[str, Any]
    notes: list[Note]
    missing: list[Problem]  # what the spec needs and no backend (or option) gave


class _Builder:
    def __init__(self) -> None:
        self.notes: list[Note] = []
        self.missing: list[Problem] = []

    def found(self, location: str, value: Any, where: str) -> Any:
        self.notes.append(Note(location, "found", where))
        return value

    def inferred(self, location: str, value: Any, how: str) -> Any:
        self.notes.append(Note(location, "inferred", how))
        return value

    def todo(self, location: str, value: Any, why: str) -> Any:
        self.notes.append(Note(location, "todo", why))
        return value

    def lacking(self, location: str, what: str) -> None:
        self.missing.append(Problem(location, what))


def _wall(value: str | None) -> str:
    return str(parse_duration(value or "UNLIMITED"))


def _qos(b: _Builder, live: LiveTenant, which: str) -> dict[str, Any] | None:
    record = getattr(live.slurm, which)
    name = f"{which}-{live.slug.removeprefix('tenant-')}"
    where = f"Slurm QoS '{name}'"
    if record is None:
        b.lacking(f"slurm.qos.{which}", f"{where} does not exist (runbook step 4c makes it)")
        return None
    if record.grp_tres_gpus is None:
        b.lacking(f"slurm.qos.{which}.gpus", f"{where} has no GrpTRES=gres/gpu")
    qos: dict[str, Any] = {
        "priority": b.found(f"slurm.qos.{which}.priority", record.priority, f"{where} Priority"),
        "gpus": b.found(f"slurm.qos.{which}.gpus", record.grp_tres_gpus, f"{where} GrpTRES"),
    }
    if record.flags:
        qos["flags"] = b.found(f"slurm.qos.{which}.flags", list(record.flags), f"{where} Flags")
    mode = record.preempt_mode.lower()
    if record.max_wall is not None and record.preempt_exempt_time == record.max_wall:
        qos["preempt_mode"] = b.found(
            f"slurm.qos.{which}.preempt_mode",
            "off",
            f"{where} PreemptExemptTime, its MaxWall: its jobs are never preempted",
        )
    elif mode not in ("", "cluster"):
        qos["preempt_mode"] = b.found(
            f"slurm.qos.{which}.preempt_mode", mode, f"{where} PreemptMode"
        )
    else:
        b.inferred(
            f"slurm.qos.{which}",
            None,
            f"{where} PreemptMode is the cluster's and no PreemptExemptTime covers its MaxWall, "
            "so its jobs can be preempted: preempt_mode left out (runbook 4c's PreemptMode=OFF "
            "is stored as the cluster's mode; 'off' exempts the jobs for their wall limit)",
        )
    return qos


def _contract(b: _Builder, live: LiveTenant, platform: Platform, given: Contract) -> dict[str, Any]:
    slurm, kubernetes = live.slurm, live.kubernetes
    hard = (kubernetes.quota or {}).get("spec", {}).get("hard", {})
    gpus = hard.get("requests.nvidia.com/gpu")
    assoc = slurm.account.association(slurm.cluster) if slurm.account else None
    account_gpus = assoc.grp_tres_gpus if assoc else None
    if gpus is None and account_gpus is None:
        b.lacking("contract.gpus", "neither the ResourceQuota nor the Slurm account caps GPUs")
    contract: dict[str, Any] = {}
    reservation = (kubernetes.reservation or {}).get("spec", {})
    pool = (reservation.get("nodeSelector") or {}).get("matchLabels", {}).get("hardware-pool")
    if reservation.get("reservedNodes"):
        sku = platform.node_pools[pool].sku if pool in platform.node_pools else None
        if sku is None:
            b.lacking("contract.gpu_sku", f"hardware pool {pool!r} is not in the platform's pools")
        contract["gpu_sku"] = b.inferred(
            "contract.gpu_sku", sku, f"the SKU of the Reservation's hardware pool {pool!r}"
        )
        contract["partition_type"] = b.inferred(
            "contract.partition_type", "reserved", "the Reservation names nodes"
        )
    else:
        if given.gpu_sku is None or given.partition_type is None:
            b.lacking(
                "contract",
                "a tenant without reserved nodes: give the contract's --gpu-sku and "
                "--partition-type (no backend holds them)",
            )
        contract["gpu_sku"] = b.todo("contract.gpu_sku", given.gpu_sku, "given to import")
        contract["partition_type"] = b.todo(
            "contract.partition_type", given.partition_type, "given to import"
        )
    contract["gpus"] = (
        b.found(
            "contract.gpus",
            int(gpus),
            f"ResourceQuota '{live.slug}-quota' requests.nvidia.com/gpu (Slurm account "
            f"GrpTRES gres/gpu={account_gpus})",
        )
        if gpus is not None
        else b.found("contract.gpus", account_gpus, f"Slurm account '{live.slug}' GrpTRES")
    )
    contract["term"] = b.todo(
        "contract.term",
        {"start": given.term_start, "end": given.term_end},
        "given to import (--term): the change ticket's contract; no backend holds it",
    )
    if given.contact is not None:
        contract["contact"] = b.todo(
            "contract.contact",
            dict(zip(("name", "email"), given.contact, strict=True)),
            "given to import (--contact): the change ticket's; no backend holds it",
        )
    normal, interactive = slurm.normal, slurm.interactive
    contract["wall_limit"] = b.found(
        "contract.wall_limit",
        _wall(normal.max_wall if normal else slurm.partition.max_time if slurm.partition else None),
        "QoS normal MaxWall (the partition's MaxTime agrees or the check refused it)",
    )
    contract["interactive_wall_limit"] = b.found(
        "contract.interactive_wall_limit",
        _wall(interactive.max_wall if interactive else None),
        "QoS interactive MaxWall",
    )
    budgets = {a.grp_tres_mins_gpus for a in slurm.users}
    budget = next(iter(budgets), None)
    if budget is None:
        b.lacking("contract.gpu_minutes", "no user association carries GrpTRESMins=gres/gpu")
    contract["gpu_minutes"] = b.inferred(
        "contract.gpu_minutes",
        (budget or 0) * len(slurm.users),
        f"each user's GrpTRESMins=gres/gpu={budget} times {len(slurm.users)} users",
    )
    return contract


def _reservation(
    b: _Builder, live: LiveTenant, platform: Platform, given: Contract
) -> dict[str, Any]:
    if live.kubernetes.reservation is None:
        pools = [name for name, p in platform.node_pools.items() if p.sku == given.gpu_sku]
        return {
            "hardware_pool": b.inferred(
                "reservation.hardware_pool",
                pools[0] if pools else None,
                f"the platform's pool of SKU {given.gpu_sku!r}: no Reservation, no node held",
            ),
            "nodes": [],
            "evict_on_release": False,
        }
    spec = live.kubernetes.reservation.get("spec", {})
    pool = (spec.get("nodeSelector") or {}).get("matchLabels", {}).get("hardware-pool")
    where = f"Reservation '{live.slug}-reservation'"
    return {
        "hardware_pool": b.found("reservation.hardware_pool", pool, f"{where} nodeSelector"),
        "nodes": b.found("reservation.nodes", list(spec.get("reservedNodes") or []), where),
        "evict_on_release": b.found(
            "reservation.evict_on_release", bool(spec.get("evictOnRelease")), where
        ),
    }


def _gid(b: _Builder, live: LiveTenant, location: str, admins: bool) -> int | None:
    identity = live.identity
    group = identity.admins if admins else identity.group
    if group is None:
        return None
    number = identity.gid(group)
    if "gidNumber" in group.attributes:
        return int(b.found(location, number, f"Authentik group '{group.name}' gidNumber"))
    return int(
        b.inferred(
            location,
            number,
            f"pinned to what the LDAP outpost hands Authentik group '{group.name}' today "
            f"(gid_start {identity.gid_start} + its number {group.num_pk})",
        )
    )


def _identity(b: _Builder, live: LiveTenant) -> dict[str, Any]:
    identity = live.identity
    if identity.group is None:
        b.lacking("identity", f"Authentik group '{live.slug}' does not exist (runbook step 2a)")
    admins = sorted(m.username for m in (identity.admins.members or ())) if identity.admins else []
    found: dict[str, Any] = {
        "gid": _gid(b, live, "identity.gid", admins=False),
        "admins": b.found("identity.admins", admins, f"members of '{live.slug}-admins'"),
    }
    if identity.admins is not None:
        found["admins_gid"] = _gid(b, live, "identity.admins_gid", admins=True)
    return found


def _users(b: _Builder, live: LiveTenant) -> list[dict[str, Any]]:
    identity, slug = live.identity, live.slug
    teams = {a.user: a.account for a in live.slurm.users}
    members = {m.username for m in (identity.group.members or ())} if identity.group else set()
    keys = (live.kubernetes.authorized_keys or {}).get("data") or {}
    users = []
    for index, user in enumerate(u for u in identity.users if u.username in members):
        at = f"users.{index}"
        uid = identity.uid(user)
        entry: dict[str, Any] = {
            "username": b.found(f"{at}.username", user.username, "Authentik group member"),
            "name": b.found(f"{at}.name", user.name, "Authentik user name"),
            "email": b.found(f"{at}.email", user.email, "Authentik user email"),
        }
        if "uidNumber" in user.attributes:
            entry["uid"] = b.found(f"{at}.uid", uid, "Authentik uidNumber")
        else:
            entry["uid"] = b.inferred(
                f"{at}.uid",
                uid,
                f"pinned to what the LDAP outpost hands out today (uid_start "
                f"{identity.uid_start} + pk {user.pk}), the owner of the files",
            )
        team = teams.get(user.username)
        if team is not None and team != slug:
            entry["team"] = b.found(f"{at}.team", team, "the account of their Slurm association")
        ssh = str(user.attributes.get("ssh_keys") or "").split("\n")
        entry["ssh_keys"] = [k.strip() for k in ssh if k.strip()]
        if entry["ssh_keys"]:
            b.found(f"{at}.ssh_keys", None, "Authentik attribute ssh_keys")
        elif user.username in keys:
            text = base64.b64decode(keys[user.username]).decode()
            entry["ssh_keys"] = [k.strip() for k in text.splitlines() if k.strip()]
            b.found(f"{at}.ssh_keys", None, f"Secret '{slug}-authorized-keys'")
        else:
            b.lacking(f"{at}.ssh_keys", f"no SSH key for {user.username} in Authentik or Secret")
        users.append(entry)
    return users


def _slurm(b: _Builder, live: LiveTenant) -> dict[str, Any]:
    slurm, slug = live.slurm, live.slug
    if slurm.account is None:
        b.lacking("slurm", f"Slurm account '{slug}' does not exist (runbook step 4a)")
        return {}
    assoc = slurm.account.association(slurm.cluster)
    where = f"Slurm account '{slug}'"
    jobs = {a.max_jobs for a in slurm.users}
    found: dict[str, Any] = {
        "fairshare": b.found("slurm.fairshare", int(assoc.fairshare) if assoc else None, where),
        "grp_jobs": b.found("slurm.grp_jobs", assoc.grp_jobs if assoc else None, where),
        "max_jobs_per_user": b.found(
            "slurm.max_jobs_per_user", next(iter(jobs), None), "the users' MaxJobs"
        ),
    }
    teams = []
    for index, team in enumerate(slurm.teams):
        team_assoc = team.association(slurm.cluster)
        entry: dict[str, Any] = {
            "name": b.found(f"slurm.teams.{index}.name", team.name, f"sub-account of '{slug}'"),
            "description": b.inferred(
                f"slurm.teams.{index}.description",
                team.description,
                "the sub-account's Description, which slurmdbd keeps lowercased",
            ),
            "fairshare": int(team_assoc.fairshare) if team_assoc else None,
        }
        if team_assoc and team_assoc.grp_tres_gpus is not None:
            entry["gpus"] = team_assoc.grp_tres_gpus
        teams.append(entry)
    if teams:
        found["teams"] = teams
    found["qos"] = {"normal": _qos(b, live, "normal"), "interactive": _qos(b, live, "interactive")}
    partition = slurm.partition
    if partition is not None:
        found["partition"] = {
            "default_time": b.found(
                "slurm.partition.default_time", _wall(partition.default_time), "DefaultTime"
            ),
            "oversubscribe": b.found(
                "slurm.partition.oversubscribe",
                partition.oversubscribe.split(":")[0].lower(),
                f"partition '{slug}' OverSubscribe",
            ),
            "preempt_mode": b.found(
                "slurm.partition.preempt_mode",
                partition.preempt_mode.lower(),
                f"partition '{slug}' PreemptMode",
            ),
        }
    elif live.kubernetes.reservation is not None:
        b.lacking("slurm.partition", f"Slurm partition '{slug}' does not exist (step 4d)")
    else:
        found["partition"] = b.todo(
            "slurm.partition",
            dict(PARTITION_DEFAULTS),
            "the runbook's 4d values: a tenant without reserved nodes has no partition of its "
            "own, so no backend holds them until it gets one",
        )
    return found


def _storage(b: _Builder, live: LiveTenant) -> dict[str, Any]:
    storage, slug = live.storage, live.slug
    if storage.isolation is None:
        b.lacking("storage", f"neither a Weka organization '{slug}' nor directories for it")
        return {}
    homes = [h.quota for h in storage.homes.values() if h.quota is not None]
    if not homes:
        b.lacking("storage.home_per_user", "no home directory carries a quota (step 4e)")
    if storage.isolation == "org":
        capacity = storage.home_filesystem.total_capacity if storage.home_filesystem else None
        capacity_from = f"Weka filesystem '{slug}-home' capacity"
    else:
        capacity = storage.home_quota.hard_limit_bytes if storage.home_quota else None
        capacity_from = f"the quota on the shared home's /{slug}"
    if capacity is None:
        b.lacking("storage.home_capacity", f"no {capacity_from}")
    scratch = storage.scratch_quota
    if scratch is None:
        b.lacking("storage.scratch", f"no quota on /{slug} of the scratch filesystem")
    claims = [
        {
            "name": c["metadata"]["name"],
            "size": format_size(quantity_bytes(c["spec"]["resources"]["requests"]["storage"])),
        }
        for c in live.kubernetes.claims
        if c["spec"].get("storageClassName") == f"weka-{slug}"
    ]
    found: dict[str, Any] = {
        "isolation": b.inferred(
            "storage.isolation",
            storage.isolation,
            f"Weka organization '{slug}' exists"
            if storage.isolation == "org"
            else "the tenant's directories on the shared filesystems",
        ),
        "home_capacity": b.found(
            "storage.home_capacity", format_size(capacity or 0), capacity_from
        ),
        "home_per_user": b.found(
            "storage.home_per_user",
            {
                "soft": format_size(homes[0].soft_limit_bytes) if homes else None,
                "hard": format_size(homes[0].hard_limit_bytes) if homes else None,
            },
            "the quotas on the users' home directories",
        ),
        "scratch": b.found(
            "storage.scratch",
            {
                "soft": format_size(scratch.soft_limit_bytes) if scratch else None,
                "hard": format_size(scratch.hard_limit_bytes) if scratch else None,
            },
            f"the quota on /{slug} of the scratch filesystem",
        ),
    }
    if claims:
        found["pvcs"] = b.found("storage.pvcs", claims, f"PVCs of StorageClass weka-{slug}")
    return found


def _kubernetes(b: _Builder, live: LiveTenant) -> dict[str, Any]:
    slug = live.slug
    hard = (live.kubernetes.quota or {}).get("spec", {}).get("hard")
    limits = (live.kubernetes.limit_range or {}).get("spec", {}).get("limits") or []
    container = next((x for x in limits if x.get("type") == "Container"), None)
    if hard is None:
        b.lacking("kubernetes.quota", f"ResourceQuota '{slug}-quota' does not exist (step 3b)")
        hard = {}
    if container is None:
        b.lacking("kubernetes.container_defaults", f"LimitRange '{slug}-defaults' (step 3b)")
        container = {}
    b.found("kubernetes.quota", None, f"ResourceQuota '{slug}-quota'")
    b.found("kubernetes.container_defaults", None, f"LimitRange '{slug}-defaults'")

    def size(text: str | None) -> str | None:
        return format_size(quantity_bytes(text)) if text else None

    default, request = container.get("default") or {}, container.get("defaultRequest") or {}
    return {
        "quota": {
            "requests_cpu": hard.get("requests.cpu"),
            "requests_memory": size(hard.get("requests.memory")),
            "limits_memory": size(hard.get("limits.memory")),
            "persistent_volume_claims": int(hard.get("persistentvolumeclaims", 0)),
            "requests_storage": size(hard.get("requests.storage")),
        },
        "container_defaults": {
            "limit": {"cpu": default.get("cpu"), "memory": size(default.get("memory"))},
            "request": {"cpu": request.get("cpu"), "memory": size(request.get("memory"))},
        },
    }


def _login(b: _Builder, live: LiveTenant) -> dict[str, Any]:
    release = live.kubernetes.release
    where = f"HelmRelease 'login-{live.slug}'"
    if release is None:
        b.lacking("login", f"{where} does not exist (runbook step 5a)")
        return {}
    values = release.get("spec", {}).get("values", {})
    annotations = (values.get("service") or {}).get("annotations") or {}
    return {
        "hostname": b.found(
            "login.hostname", annotations.get("external-dns.alpha.kubernetes.io/hostname"), where
        ),
        "replicas": b.found("login.replicas", values.get("replicas"), where),
    }


def _lifecycle(b: _Builder, live: LiveTenant) -> dict[str, Any]:
    annotations = (live.kubernetes.namespace or {}).get("metadata", {}).get("annotations") or {}
    stage = annotations.get("gpu-tenants.example.io/lifecycle-stage")
    found: dict[str, Any] = {
        "stage": (
            b.found("lifecycle.stage", stage, "the namespace's stage annotation")
            if stage in STAGES
            else b.inferred("lifecycle.stage", "active", "a tenant onboarded and not offboarded")
        )
    }
    for key, value in DRAIN_DEFAULTS.items():
        found[key] = b.todo(
            f"lifecycle.{key}", value, "the runbook's default; no backend holds it: review"
        )
    found["legal_hold"] = b.todo(
        "lifecycle.legal_hold", False, "no backend holds it: set true if Legal asked for a hold"
    )
    return found


def infer_spec(live: LiveTenant, platform: Platform, given: Contract, today: date) -> Inferred:
    """The spec of the hand-built tenant `live`, with a note per field and what is missing."""
    b = _Builder()
    document: dict[str, Any] = {
        "slug": live.slug,
        "display_name": b.inferred(
            "display_name",
            live.slurm.account.description if live.slurm.account else live.slug,
            "the Slurm account's Description (slurmdbd keeps it lowercased: recapitalize it)",
        ),
        "contract": _contract(b, live, platform, given),
        "reservation": _reservation(b, live, platform, given),
        "identity": _identity(b, live),
        "users": _users(b, live),
        "slurm": _slurm(b, live),
        "storage": _storage(b, live),
        "kubernetes": _kubernetes(b, live),
        "network": {
            "isolation": b.todo(
                "network.isolation",
                "networkpolicy",
                f"NetworkPolicies {', '.join(live.kubernetes.network_policies) or 'none'}; an "
                "InfiniBand partition key is not visible here: set pkey if the tenant has one",
            )
        },
        "login": _login(b, live),
        "lifecycle": _lifecycle(b, live),
        "imported": {
            "date": today,
            "adopt": b.todo(
                "imported.adopt",
                True,
                "the first `up` adopts what was made by hand and adds the ownership marks the "
                "import report lists; set it false in the pull request after that `up`",
            ),
        },
    }
    identity = live.identity
    document["imported"]["found"] = b.found(
        "imported.found",
        {
            "authentik_users": {user.username: user.pk for user in identity.users},
            "authentik_groups": {
                group.name: group.pk for group in (identity.group, identity.admins) if group
            },
            "kubernetes": live.kubernetes.objects,
            "slurm": sorted(
                [
                    *(f"Qos/{q.name}" for q in (live.slurm.normal, live.slurm.interactive) if q),
                    *(f"Account/{a.name}" for a in (live.slurm.account, *live.slurm.teams) if a),
                    *([f"Partition/{live.slurm.partition.name}"] if live.slurm.partition else []),
                ]
            ),
        },
        "what import read of the tenant made by hand: the first `up` adopts these only",
    )
    if live.storage.org_admin is not None:
        document["imported"]["weka_org_admin"] = b.found(
            "imported.weka_org_admin", live.storage.org_admin, "the admin import logged in as"
        )
    return Inferred(document, b.notes, b.missing)
