"""A new tenant's spec document: the contract's terms as given, the nodes and numbers chosen for
it, and every other value set as the runbook and the spec's rules say, each chosen value with
the reason that becomes its comment in the file.

- The GPU-minute budget: the contract's total, GPUs x the term's minutes (both ends included)
  unless it states one, split evenly between the users (runbook 4b: GrpTRESMins per user =
  total / users), rounded down to a multiple of the users so the split is exact.
- QoS caps: `normal` has the contract's GPUs (runbook 4c mirrors GrpTRES of the account);
  `interactive` one node's GPUs of the SKU, never more than the contract's.
- The rest: the runbook's worked values (4a-4d, 3b per GPU, 5a, 6) and the platform's
  (`Pulumi.prod.yaml`: the DNS domain, the retention of copies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from tenant_stack.authoring.users_file import UserEntry
from tenant_stack.importing.inferred_spec import DRAIN_DEFAULTS, PARTITION_DEFAULTS
from tenant_stack.platform import Platform
from tenant_stack.spec.quantities import format_size, parse_duration, parse_size

__all__ = ["Choice", "Resolved", "SpecDraft"]

MINUTES_PER_DAY = 24 * 60
# Runbook 3b's ResourceQuota is for its 64 GPUs; a tenant gets the same per GPU.
CPUS_PER_GPU = 1024 // 64
MEMORY_REQUEST_PER_GPU = 8 * 1024**4 // 64
MEMORY_LIMIT_PER_GPU = 10 * 1024**4 // 64
SOFT_PERCENT = 90  # runbook 4e: soft 90GB of hard 100GB, 45TB of 50TB


@dataclass(frozen=True)
class Choice:
    """A value the command chose, at its spec field, and why."""

    location: str
    value: Any
    why: str

    def as_json(self) -> dict[str, Any]:
        value = self.value if isinstance(self.value, int | str | list | dict) else str(self.value)
        return {"field": self.location, "value": value, "why": self.why}


@dataclass(frozen=True)
class Resolved:
    """The terms, checked: what the options said, parsed, and the pool they lead to."""

    slug: str
    display_name: str
    display_given: bool
    gpu_sku: str
    gpus: int
    partition_type: str
    term: tuple[date, date]
    wall_limit: str
    interactive_wall_limit: str | None
    gpu_minutes: int | None
    pool: str
    pool_given: bool
    home: int
    home_per_user: int | None
    scratch: int
    storage_isolation: str
    admins: tuple[str, ...]
    contact: tuple[str, str] | None  # name, email
    rehearsal: bool


@dataclass
class SpecDraft:
    """The spec of `terms` for `users`, on `nodes` with `uids` and `gids` (the tenant's group's,
    then its admins group's when it has admins); `document` builds it, recording each value it
    chose in `choices`."""

    terms: Resolved
    platform: Platform
    users: Sequence[UserEntry]
    nodes: list[str]
    uids: list[int]
    gids: list[int]
    choices: list[Choice] = field(default_factory=list)

    @property
    def comments(self) -> dict[str, str]:
        return {choice.location: choice.why for choice in self.choices}

    def chose(self, location: str, value: Any, why: str) -> Any:
        self.choices.append(Choice(location, value, why))
        return value

    def document(self, today: date) -> dict[str, Any]:
        terms, platform = self.terms, self.platform
        sku = platform.skus[terms.gpu_sku]
        numbers_from = "every spec in the tenants directory and Authentik's outpost"
        document: dict[str, Any] = {
            "slug": terms.slug,
            "display_name": terms.display_name
            if terms.display_given
            else self.chose(
                "display_name",
                terms.display_name,
                "from the slug (the Slurm account's Description): write the customer's name",
            ),
            "contract": self._contract(),
            "reservation": {
                "hardware_pool": terms.pool
                if terms.pool_given
                else self.chose(
                    "reservation.hardware_pool",
                    terms.pool,
                    f"the platform's one pool of {terms.gpu_sku} nodes",
                ),
                "nodes": self.chose(
                    "reservation.nodes",
                    self.nodes,
                    f"runbook step 1 on {today.isoformat()}: the first {len(self.nodes)} nodes of "
                    f"the pool that are Ready, schedulable, untainted, in no Reservation and in "
                    f"no other spec ({terms.gpus} GPUs / {sku.gpus_per_node} per node)",
                )
                if terms.partition_type == "reserved"
                else self.chose(
                    "reservation.nodes", [], f"a {terms.partition_type} tenant reserves no node"
                ),
                "evict_on_release": self.chose(
                    "reservation.evict_on_release",
                    False,
                    "the runbook's: an RMA drains the node instead of killing the tenant's jobs",
                ),
            },
            "identity": {
                "gid": self.chose(
                    "identity.gid",
                    self.gids[0],
                    f"the next gid above every one pinned or handed out ({numbers_from}), pinned "
                    "because the outpost's own gidNumber is a hash prefix that collides",
                ),
                "admins": list(terms.admins),
            },
            "users": [self._user(index, user) for index, user in enumerate(self.users)],
            "slurm": self._slurm(),
            "storage": self._storage(),
            "kubernetes": self._kubernetes(),
            "network": {
                "isolation": self.chose(
                    "network.isolation",
                    "networkpolicy",
                    "runbook 3d: deny-by-default NetworkPolicies; set pkey (and network.pkey) "
                    "if the contract buys an InfiniBand partition",
                )
            },
            "login": {
                "hostname": self.chose(
                    "login.hostname",
                    f"login.{terms.slug}.{platform.dns_domain}",
                    "runbook 5a, under the platform's dns_domain",
                ),
                "replicas": self.chose("login.replicas", 2, "runbook 5a's replicas"),
            },
            "lifecycle": self._lifecycle(),
        }
        if terms.admins:
            document["identity"]["admins_gid"] = self.chose(
                "identity.admins_gid",
                self.gids[1],
                f"the next gid after identity.gid that is free ({numbers_from}), for "
                f"{terms.slug}-admins",
            )
        return document

    def _contract(self) -> dict[str, Any]:
        terms = self.terms
        start, end = terms.term
        days = (end - start).days + 1
        users = len(self.users)
        if terms.gpu_minutes is not None:
            minutes = terms.gpu_minutes
        else:
            whole = terms.gpus * days * MINUTES_PER_DAY
            minutes = self.chose(
                "contract.gpu_minutes",
                whole // users * users,
                f"{terms.gpus} GPUs x the term's {days} days x {MINUTES_PER_DAY} minutes, "
                f"split evenly: {whole // users} per user (runbook 4b: GrpTRESMins per user = "
                "total / users); give --gpu-minutes if the contract states a budget",
            )
        interactive = terms.interactive_wall_limit or self.chose(
            "contract.interactive_wall_limit",
            str(min(parse_duration("4h"), parse_duration(self.terms.wall_limit))),
            "runbook 4c's interactive MaxWall (4h), at most the wall limit",
        )
        contract: dict[str, Any] = {
            "gpu_sku": terms.gpu_sku,
            "gpus": terms.gpus,
            "partition_type": terms.partition_type,
            "term": {"start": start, "end": end},
            "wall_limit": self.terms.wall_limit,
            "interactive_wall_limit": interactive,
            "gpu_minutes": minutes,
        }
        if terms.contact is not None:
            contract["contact"] = dict(zip(("name", "email"), terms.contact, strict=True))
        return contract

    def _user(self, index: int, user: UserEntry) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "username": user.username,
            "name": user.name,
            "email": user.email,
            "uid": self.chose(
                f"users.{index}.uid",
                self.uids[index],
                "the next uid above every one pinned or handed out (every spec in the tenants "
                "directory and Authentik's outpost)",
            ),
        }
        if user.team:
            entry["team"] = user.team
        entry["ssh_keys"] = list(user.ssh_keys)
        return entry

    def _slurm(self) -> dict[str, Any]:
        terms, sku = self.terms, self.platform.skus[self.terms.gpu_sku]
        teams = list(dict.fromkeys(user.team for user in self.users if user.team))
        slurm: dict[str, Any] = {
            "fairshare": self.chose("slurm.fairshare", 300, "runbook 4a's Fairshare"),
            "grp_jobs": self.chose("slurm.grp_jobs", 200, "runbook 4a's GrpJobs"),
            "max_jobs_per_user": self.chose(
                "slurm.max_jobs_per_user", 20, "runbook 4b's MaxJobs per user"
            ),
        }
        if teams:
            slurm["teams"] = [
                {
                    "name": team,
                    "description": self.chose(
                        f"slurm.teams.{index}.description",
                        f"{terms.display_name} {team}",
                        "the display name and the team's: write what the customer calls it",
                    ),
                    "fairshare": self.chose(
                        f"slurm.teams.{index}.fairshare", 200, "runbook 4a's team Fairshare"
                    ),
                }
                for index, team in enumerate(teams)
            ]
        interactive = min(sku.gpus_per_node, terms.gpus)
        slurm["qos"] = {
            "normal": {
                "priority": self.chose("slurm.qos.normal.priority", 100, "runbook 4c"),
                "gpus": self.chose(
                    "slurm.qos.normal.gpus",
                    terms.gpus,
                    "the contract's GPUs: runbook 4c's GrpTRES mirrors the account's",
                ),
                "flags": self.chose("slurm.qos.normal.flags", ["DenyOnLimit"], "runbook 4c"),
            },
            "interactive": {
                "priority": self.chose("slurm.qos.interactive.priority", 200, "runbook 4c"),
                "gpus": self.chose(
                    "slurm.qos.interactive.gpus",
                    interactive,
                    f"runbook 4c: one {terms.gpu_sku} node's GPUs ({sku.gpus_per_node}), at most "
                    "the contract's",
                ),
                "preempt_mode": self.chose(
                    "slurm.qos.interactive.preempt_mode", "off", "runbook 4c: never preempted"
                ),
            },
        }
        partition = dict(PARTITION_DEFAULTS)
        wall = parse_duration(self.terms.wall_limit)
        if parse_duration(partition["default_time"]) > wall:
            partition["default_time"] = str(wall)
        slurm["partition"] = self.chose(
            "slurm.partition",
            partition,
            "runbook 4d: DefaultTime 1h (at most the wall limit), OverSubscribe=EXCLUSIVE for "
            "whole-node training (NO for partial-node work), PreemptMode=OFF",
        )
        return slurm

    def _storage(self) -> dict[str, Any]:
        terms = self.terms
        per_user = terms.home_per_user
        if per_user is None:
            per_user = self.chose(
                "storage.home_per_user.hard", parse_size("100GB"), "runbook 4e's /home per user"
            )
        scratch = terms.scratch
        soft = f"{SOFT_PERCENT}% of the hard limit, as runbook 4e's (90GB of 100GB)"
        return {
            "isolation": terms.storage_isolation,
            "home_capacity": format_size(terms.home),
            "home_per_user": {
                "soft": format_size(
                    self.chose("storage.home_per_user.soft", per_user * SOFT_PERCENT // 100, soft)
                ),
                "hard": format_size(per_user),
            },
            "scratch": {
                "soft": format_size(
                    self.chose("storage.scratch.soft", scratch * SOFT_PERCENT // 100, soft)
                ),
                "hard": format_size(scratch),
            },
        }

    def _kubernetes(self) -> dict[str, Any]:
        gpus = self.terms.gpus
        per_gpu = "runbook 3b's quota for its 64 GPUs, per GPU"
        return {
            "quota": {
                "requests_cpu": self.chose(
                    "kubernetes.quota.requests_cpu", CPUS_PER_GPU * gpus, per_gpu
                ),
                "requests_memory": format_size(
                    self.chose(
                        "kubernetes.quota.requests_memory", MEMORY_REQUEST_PER_GPU * gpus, per_gpu
                    )
                ),
                "limits_memory": format_size(
                    self.chose(
                        "kubernetes.quota.limits_memory", MEMORY_LIMIT_PER_GPU * gpus, per_gpu
                    )
                ),
                "persistent_volume_claims": self.chose(
                    "kubernetes.quota.persistent_volume_claims", 50, "runbook 3b"
                ),
                "requests_storage": format_size(
                    self.chose(
                        "kubernetes.quota.requests_storage",
                        self.terms.scratch,
                        "the scratch hard limit, which the tenant's claims are carved from",
                    )
                ),
            },
            "container_defaults": self.chose(
                "kubernetes.container_defaults",
                {"limit": {"cpu": 4, "memory": "16Gi"}, "request": {"cpu": 1, "memory": "4Gi"}},
                "runbook 3b's LimitRange",
            ),
        }

    def _lifecycle(self) -> dict[str, Any]:
        lifecycle: dict[str, Any] = {
            "stage": self.chose("lifecycle.stage", "active", "a new tenant"),
        }
        for key, value in DRAIN_DEFAULTS.items():
            if key != "retention_days":
                lifecycle[key] = self.chose(f"lifecycle.{key}", value, "the runbook's default")
        days = self.platform.retention.copies_days
        lifecycle["retention_days"] = self.chose(
            "lifecycle.retention_days",
            days,
            "the platform's retention of copies (Pulumi.prod.yaml retention.copies_days)",
        )
        lifecycle["legal_hold"] = self.chose("lifecycle.legal_hold", False, "none asked")
        if self.terms.rehearsal:
            lifecycle["rehearsal"] = self.chose(
                "lifecycle.rehearsal",
                True,
                "--rehearsal: its destroy deletes everything with no archive; never for a "
                "tenant that will hold data",
            )
        return lifecycle
