"""A new tenant's spec from its contract's terms and its users file: the values the contract
gives, and the ones the runbook leaves to the operator chosen as the runbook and the spec's rules
say, each with a comment saying why.

- Nodes (reserved tenants): runbook step 1's query, `preflight.free_nodes` over the live
  cluster, less the nodes another spec in the tenants directory names (a spec not yet applied
  holds them as surely as a Reservation; one at stage destroy has released them, as the
  fleet's rule says), in the platform's order of the pool.
- uids and gids: the next numbers above every one that a spec in the tenants directory pins
  (offboarded tenants' included: their accounting names them) and that Authentik's LDAP outpost
  hands out now, none equal to another's uid or gid (each user's own group has its uid as gid).
  Gaps are not reused: a number freed by a spec deleted since may still own files somewhere.
- The GPU-minute budget: the contract's total, GPUs x the term's minutes (both ends included)
  unless it states one, split evenly between the users (runbook 4b: GrpTRESMins per user =
  total / users), rounded down to a multiple of the users so the split is exact.
- QoS caps: `normal` has the contract's GPUs (runbook 4c mirrors GrpTRES of the account);
  `interactive` one node's GPUs of the SKU, never more than the contract's.
- The rest: the runbook's worked values (4a-4d, 3b per GPU, 5a, 6) and the platform's
  (`Pulumi.prod.yaml`: the DNS domain, the retention of copies).

Nothing is written unless every value passes the spec's field rules, its rules across fields,
the rules across tenants beside the other specs, and the directory check the program's preflight
makes; the spec is written atomically, and never over one that exists.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from pydantic import TypeAdapter, ValidationError

from tenant_stack.authoring.users_file import UserEntry, read_users
from tenant_stack.errors import Problem, TenantError
from tenant_stack.fleet.live_numbers import Holder, handed_out
from tenant_stack.importing.inferred_spec import DRAIN_DEFAULTS, PARTITION_DEFAULTS
from tenant_stack.importing.spec_file import render_commented
from tenant_stack.live import NodeState
from tenant_stack.platform import MAX_ID, Platform, parse_yaml, problems_from
from tenant_stack.preflight import check_directory, free_nodes
from tenant_stack.spec.fleet import load_fleet, refusals_beside
from tenant_stack.spec.models import TenantSpec, hostlist
from tenant_stack.spec.names import Slug
from tenant_stack.spec.quantities import format_size, parse_duration, parse_size
from tenant_stack.spec.rules import check_spec

if TYPE_CHECKING:
    from providers.authentik.client import Group, User

__all__ = ["Choice", "Live", "NewTenantReport", "Terms", "new_tenant", "read_live"]

MINUTES_PER_DAY = 24 * 60
# Runbook 3b's ResourceQuota is for its 64 GPUs; a tenant gets the same per GPU.
CPUS_PER_GPU = 1024 // 64
MEMORY_REQUEST_PER_GPU = 8 * 1024**4 // 64
MEMORY_LIMIT_PER_GPU = 10 * 1024**4 // 64
SOFT_PERCENT = 90  # runbook 4e: soft 90GB of hard 100GB, 45TB of 50TB


@dataclass(frozen=True)
class Terms:
    """The contract's terms and the operator's choices, as the command's options give them
    (durations and sizes as text, checked here with the spec's own rules)."""

    slug: str
    gpu_sku: str
    gpus: int
    partition_type: str
    term: tuple[date, date]
    wall_limit: str
    home: str
    scratch: str
    storage_isolation: str
    interactive_wall_limit: str | None = None
    home_per_user: str | None = None
    hardware_pool: str | None = None
    gpu_minutes: int | None = None
    admins: tuple[str, ...] = ()
    display_name: str | None = None
    rehearsal: bool = False


@dataclass(frozen=True)
class Live:
    """What the cluster, the directory and the state backend hold now."""

    nodes: Sequence[NodeState]
    namespace_exists: bool
    stacks: Sequence[str]  # the project's stacks
    directory_users: Sequence[User]
    directory_groups: Sequence[Group]


def read_live(slug: str, project: Path) -> Live:
    """Reads the live cluster's nodes and the namespace `slug`, Authentik's users and groups
    (AUTHENTIK_URL and its token, as the program reads them) and the stacks of `project`."""
    from providers.authentik.client import AuthentikClient
    from providers.authentik.settings import Settings
    from tenant_stack.live import read_cluster
    from tenant_stack.stacks import Stacks

    cluster = read_cluster(slug)
    with AuthentikClient.from_settings(Settings.from_environment()) as directory:
        users, groups = directory.users(), directory.groups()
    return Live(cluster.nodes, cluster.namespace_exists, Stacks(project).tenants(), users, groups)


@dataclass(frozen=True)
class Choice:
    """A value the command chose, at its spec field, and why."""

    location: str
    value: Any
    why: str

    def as_json(self) -> dict[str, Any]:
        value = self.value if isinstance(self.value, int | str | list | dict) else str(self.value)
        return {"field": self.location, "value": value, "why": self.why}


@dataclass
class NewTenantReport:
    tenant: str
    spec: Path
    written: bool = False
    refusals: list[Problem] = field(default_factory=list)  # located at an option or a file line
    choices: list[Choice] = field(default_factory=list)

    def chosen(self, location: str) -> Any:
        return next((c.value for c in self.choices if c.location == location), None)

    def as_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "spec": str(self.spec),
            "written": self.written,
            "refused": [{"where": p.location, "reason": p.message} for p in self.refusals],
            "chosen": [choice.as_json() for choice in self.choices],
        }


def new_tenant(
    terms: Terms,
    users_file: Path,
    tenants: Path,
    platform: Platform,
    read: Callable[[str], Live],
    *,
    uid_start: int = 2000,
    gid_start: int = 4000,
    today: date | None = None,
) -> NewTenantReport:
    """Writes `<tenants>/<slug>.yaml` from `terms` and the users in `users_file`, or reports,
    each at the option or the file's line to change, why it cannot. `read` reads what is live
    for a slug (`read_live`); `uid_start` and `gid_start` are where the LDAP outpost numbers
    what has no number of its own."""
    path = tenants / f"{terms.slug}.yaml"
    report = NewTenantReport(terms.slug, path)
    try:
        TypeAdapter(Slug).validate_python(terms.slug)
    except ValidationError as error:
        report.refusals = [Problem("SLUG", p.message) for p in problems_from(error)]
        return report
    if path.exists():
        report.refusals.append(Problem("SLUG", f"{path} exists: {terms.slug} is a tenant already"))
    if not tenants.is_dir():
        raise TenantError(f"--tenants {tenants}: no such directory")
    try:
        users = read_users(users_file)
    except OSError as error:
        raise TenantError(f"--users {users_file}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise TenantError(f"--users {users_file}: not UTF-8 text ({error.reason})") from None
    report.refusals += users.refusals
    draft = _Draft(terms, platform, users.users, users.where, report)
    draft.check_terms()
    taken = _Taken.beside(tenants, path, platform, report)
    if report.refusals:
        return report
    live = read(terms.slug)
    if live.namespace_exists:
        report.refusals.append(
            Problem("SLUG", f"namespace {terms.slug} exists in the cluster; choose another slug")
        )
    if terms.slug in live.stacks:
        report.refusals.append(
            Problem("SLUG", f"stack {terms.slug} exists in the project; choose another slug")
        )
    taken.add_live(handed_out(live.directory_users, live.directory_groups, uid_start, gid_start))
    draft.choose_nodes(live.nodes, taken.nodes)
    draft.choose_numbers(taken)
    if report.refusals:
        return report
    document = draft.document(today or date.today())
    text = render_commented(document, draft.comments, _header(terms.slug, today or date.today()))
    report.refusals += draft.validated(text, path, live)
    if not report.refusals:
        _write_new(path, text, report)
    return report


def _header(slug: str, today: date) -> list[str]:
    return [
        f"{slug}: written by `gpu-tenants new` on {today.isoformat()} from the contract's terms",
        "and the users file. A value without a comment is the contract's, as given; a comment",
        "says why every other value was chosen. Review them in the pull request.",
        "",
    ]


@dataclass
class _Taken:
    """Numbers and nodes no new tenant may have."""

    uids: set[int] = field(default_factory=set)
    gids: set[int] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)

    @classmethod
    def beside(
        cls, tenants: Path, path: Path, platform: Platform, report: NewTenantReport
    ) -> _Taken:
        """What every spec in `tenants` pins, those that do not load included (read as plain
        YAML), so that one broken file never hides its numbers."""
        taken = cls()
        specs, broken = load_fleet(tenants, platform)
        for spec in specs.values():
            taken.uids.update(user.uid for user in spec.users)
            taken.gids.add(spec.identity.gid)
            if spec.identity.admins_gid is not None:
                taken.gids.add(spec.identity.admins_gid)
            # A tenant at stage destroy has released its nodes (the fleet's rule).
            if spec.lifecycle.stage != "destroy":
                taken.nodes.update(spec.reservation.nodes)
        for other in broken:
            try:
                data = parse_yaml(other.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                report.refusals.append(
                    Problem(
                        "--tenants",
                        f"{other} is not readable YAML, so the numbers and nodes it pins are "
                        "unknown and none can be chosen safely; fix it first",
                    )
                )
                continue
            taken.add_raw(data)
        return taken

    def add_raw(self, data: Any) -> None:
        spec = _of(dict, data)
        identity, reservation = _of(dict, spec.get("identity")), _of(dict, spec.get("reservation"))
        users = [user for user in _of(list, spec.get("users")) if isinstance(user, dict)]
        self.uids.update(_ints(user.get("uid") for user in users))
        self.gids.update(_ints((identity.get("gid"), identity.get("admins_gid"))))
        self.nodes.update(str(node) for node in _of(list, reservation.get("nodes")))

    def add_live(self, held: Iterable[Holder]) -> None:
        for holder in held:
            (self.gids if holder.kind == "group" else self.uids).add(holder.number)

    def every_number(self) -> set[int]:
        return self.uids | self.gids


_Container = TypeVar("_Container", dict[str, Any], list[Any])


def _of(kind: type[_Container], value: Any) -> _Container:
    """`value` if it is of `kind`, else an empty one: a broken spec may hold anything."""
    return value if isinstance(value, kind) else kind()


def _ints(values: Iterable[Any]) -> list[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


# Where a spec field's problem is fixed: the option that gives its value (the longest prefix
# that matches); users.<n> and slurm.teams.<n> are lines of the users file.
_OPTIONS = (
    ("slug", "SLUG"),
    ("login.hostname", "SLUG"),
    ("display_name", "--display-name"),
    ("contract.gpu_sku", "--gpu-sku"),
    ("contract.gpus", "--gpus"),
    ("contract.partition_type", "--partition-type"),
    ("contract.term", "--term"),
    ("contract.wall_limit", "--wall-limit"),
    ("contract.interactive_wall_limit", "--interactive-wall-limit"),
    ("contract.gpu_minutes", "--gpu-minutes"),
    ("reservation.hardware_pool", "--hardware-pool"),
    ("reservation.nodes", "--gpus"),
    ("identity.admins", "--admin"),
    ("storage.isolation", "--storage-isolation"),
    ("storage.home_capacity", "--home"),
    ("storage.home_per_user", "--home-per-user"),
    ("storage.scratch", "--scratch"),
    ("kubernetes.quota.requests_storage", "--scratch"),
    ("slurm.qos", "--gpus"),
    ("slurm.partition.default_time", "--wall-limit"),
    ("lifecycle.rehearsal", "--rehearsal"),
)


class _Draft:
    """The spec being drafted: the values, a comment for each chosen one, and the refusals."""

    def __init__(
        self,
        terms: Terms,
        platform: Platform,
        users: Sequence[UserEntry],
        where: Callable[[int], str],
        report: NewTenantReport,
    ) -> None:
        self.terms, self.platform, self.users, self.where = terms, platform, users, where
        self.report = report
        self.comments: dict[str, str] = {}
        self.pool: str | None = None
        self.nodes: list[str] = []
        self.uids: list[int] = []
        self.gid = self.admins_gid = 0
        self.sizes: dict[str, int] = {}
        self.walls: dict[str, str] = {}
        self.display = terms.display_name or " ".join(
            word.capitalize() for word in terms.slug.split("-")
        )

    def refuse(self, where: str, message: str) -> None:
        self.report.refusals.append(Problem(where, message))

    def chose(self, location: str, value: Any, why: str) -> Any:
        self.comments[location] = why
        self.report.choices.append(Choice(location, value, why))
        return value

    # --- the terms on their own -----------------------------------------------------------

    def check_terms(self) -> None:
        terms, platform = self.terms, self.platform
        sku = platform.skus.get(terms.gpu_sku)
        if sku is None:
            self.refuse(
                "--gpu-sku",
                f"{terms.gpu_sku!r} is not in the platform's SKU catalogue; use one of "
                f"{', '.join(sorted(platform.skus))}",
            )
        pools = sorted(n for n, p in platform.node_pools.items() if p.sku == terms.gpu_sku)
        if terms.hardware_pool is not None:
            pool = platform.node_pools.get(terms.hardware_pool)
            if pool is None or pool.sku != terms.gpu_sku:
                what = "not a pool" if pool is None else f"a pool of {pool.sku} nodes"
                self.refuse(
                    "--hardware-pool",
                    f"{terms.hardware_pool!r} is {what}; the pools of {terms.gpu_sku} nodes: "
                    f"{', '.join(pools) or 'none'}",
                )
            else:
                self.pool = terms.hardware_pool
        elif len(pools) == 1:
            self.pool = pools[0]
        elif sku is not None:
            self.refuse(
                "--hardware-pool" if pools else "--gpu-sku",
                f"needed: {terms.gpu_sku} nodes are in pools {', '.join(pools)}"
                if pools
                else f"no hardware pool of the platform holds {terms.gpu_sku} nodes",
            )
        if (
            sku is not None
            and terms.partition_type == "reserved"
            and terms.gpus % sku.gpus_per_node
        ):
            self.refuse(
                "--gpus",
                f"{terms.gpus} GPUs are not whole {terms.gpu_sku} nodes of {sku.gpus_per_node} "
                f"GPUs: a reserved tenant has whole nodes, such as "
                f"{max(1, terms.gpus // sku.gpus_per_node) * sku.gpus_per_node}",
            )
        for option, text in (
            ("--wall-limit", terms.wall_limit),
            ("--interactive-wall-limit", terms.interactive_wall_limit),
        ):
            if text is not None:
                try:
                    parse_duration(text)
                    self.walls[option] = text.strip()
                except ValueError as error:
                    self.refuse(option, str(error))
        for option, text in (
            ("--home", terms.home),
            ("--scratch", terms.scratch),
            ("--home-per-user", terms.home_per_user),
        ):
            if text is not None:
                try:
                    self.sizes[option] = parse_size(text)
                except ValueError as error:
                    self.refuse(option, str(error))
        names = [user.username for user in self.users]
        for admin in terms.admins:
            if admin not in names:
                self.refuse("--admin", f"{admin!r} is not a user of the users file")
        users = len(self.users)
        if terms.gpu_minutes is not None and users and terms.gpu_minutes % users:
            self.refuse(
                "--gpu-minutes",
                f"{terms.gpu_minutes} does not split evenly between {users} users; use "
                f"{terms.gpu_minutes // users * users}",
            )
        start, end = terms.term
        if end <= start:
            self.refuse("--term", f"the term ends ({end}) before it starts ({start})")
        teams = {user.team for user in self.users if user.team}
        short = terms.slug.removeprefix("tenant-")
        for user in self.users:
            if user.team and user.team in teams and not user.team.endswith(f"-{short}"):
                teams.discard(user.team)
                self.refuse(
                    self.where(user.line_of("team")),
                    f"team {user.team!r}: Slurm accounts are cluster-wide, so a team's name ends "
                    f"in '-{short}', such as '{user.team}-{short}'",
                )

    # --- nodes and numbers ----------------------------------------------------------------

    def choose_nodes(self, live: Sequence[NodeState], named: set[str]) -> None:
        terms, pool = self.terms, self.pool
        if terms.partition_type != "reserved" or pool is None:
            return
        per_node = self.platform.skus[terms.gpu_sku].gpus_per_node
        wanted = terms.gpus // per_node
        free = {node.name for node in free_nodes(terms.gpu_sku, pool, live)} - named
        # The platform's order of the pool: the runbook's operator picks gpu-01 before gpu-02.
        ordered = [name for name in self.platform.node_pools[pool].nodes if name in free]
        if len(ordered) < wanted:
            said = hostlist(ordered) if ordered else "none"
            self.refuse(
                "--gpus",
                f"{terms.gpus} GPUs need {wanted} {terms.gpu_sku} nodes of pool {pool}, and "
                f"{len(ordered)} are free: {said} (Ready, schedulable, untainted, in no "
                "Reservation and named by no other spec)",
            )
            return
        self.nodes = ordered[:wanted]

    def choose_numbers(self, taken: _Taken) -> None:
        ldap = self.platform.ldap
        every = taken.every_number()
        number = max([ldap.uid_start_number - 1, *taken.uids]) + 1
        for _ in self.users:
            while number in every:
                number += 1
            self.uids.append(number)
            every.add(number)
            number += 1
        number = max([ldap.gid_start_number - 1, *taken.gids]) + 1
        gids = []
        for _ in range(2 if self.terms.admins else 1):
            while number in every:
                number += 1
            gids.append(number)
            every.add(number)
            number += 1
        if max([*self.uids, *gids]) > MAX_ID:
            self.refuse("--uid-start", f"no free number is left below {MAX_ID}")
        self.gid = gids[0]
        self.admins_gid = gids[-1]

    # --- the document ---------------------------------------------------------------------

    def document(self, today: date) -> dict[str, Any]:
        terms, platform = self.terms, self.platform
        sku = platform.skus[terms.gpu_sku]
        per_user = "every spec in the tenants directory and Authentik's outpost"
        document: dict[str, Any] = {
            "slug": terms.slug,
            "display_name": terms.display_name
            or self.chose(
                "display_name",
                self.display,
                "from the slug (the Slurm account's Description): write the customer's name",
            ),
            "contract": self._contract(),
            "reservation": {
                "hardware_pool": self.pool
                if terms.hardware_pool
                else self.chose(
                    "reservation.hardware_pool",
                    self.pool,
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
                    self.gid,
                    f"the next gid above every one pinned or handed out ({per_user}), pinned "
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
                self.admins_gid,
                f"the next gid after identity.gid that is free ({per_user}), for "
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
        interactive = self.walls.get("--interactive-wall-limit") or self.chose(
            "contract.interactive_wall_limit",
            str(min(parse_duration("4h"), parse_duration(self.walls["--wall-limit"]))),
            "runbook 4c's interactive MaxWall (4h), at most the wall limit",
        )
        return {
            "gpu_sku": terms.gpu_sku,
            "gpus": terms.gpus,
            "partition_type": terms.partition_type,
            "term": {"start": start, "end": end},
            "wall_limit": self.walls["--wall-limit"],
            "interactive_wall_limit": interactive,
            "gpu_minutes": minutes,
        }

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
                        f"{self.display} {team}",
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
        wall = parse_duration(self.walls["--wall-limit"])
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
        per_user = self.sizes.get("--home-per-user")
        if per_user is None:
            per_user = self.chose(
                "storage.home_per_user.hard", parse_size("100GB"), "runbook 4e's /home per user"
            )
        scratch = self.sizes["--scratch"]
        soft = f"{SOFT_PERCENT}% of the hard limit, as runbook 4e's (90GB of 100GB)"
        return {
            "isolation": terms.storage_isolation,
            "home_capacity": format_size(self.sizes["--home"]),
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
                        self.sizes["--scratch"],
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

    # --- validation -----------------------------------------------------------------------

    def validated(self, text: str, path: Path, live: Live) -> list[Problem]:
        """The problems of the spec `text` as `load_spec`, `check` and the preflight's directory
        check would find them, each at the option or the users file's line to change."""
        try:
            spec = TenantSpec.model_validate(parse_yaml(text))
        except ValidationError as error:
            return [self._located(p) for p in problems_from(error)]
        problems = check_spec(spec, self.platform) + refusals_beside(spec, path, self.platform)[0]
        problems += check_directory(
            spec, path, self.platform.ldap, live.directory_users, live.directory_groups, None
        )
        return [self._located(p) for p in problems]

    def _located(self, problem: Problem) -> Problem:
        parts = problem.location.split(".")
        if parts[0] == "users" and len(parts) > 1 and parts[1].isdigit():
            user = self.users[int(parts[1])]
            field_name = parts[2] if len(parts) > 2 else "username"
            return Problem(self.where(user.line_of(field_name)), problem.message)
        if parts[:2] == ["slurm", "teams"] and len(parts) > 2 and parts[2].isdigit():
            teams = list(dict.fromkeys(user.team for user in self.users if user.team))
            user = next(u for u in self.users if u.team == teams[int(parts[2])])
            return Problem(self.where(user.line_of("team")), problem.message)
        matches = [
            (key, option)
            for key, option in _OPTIONS
            if problem.location == key or problem.location.startswith(f"{key}.")
        ]
        if matches:
            return Problem(max(matches, key=lambda match: len(match[0]))[1], problem.message)
        return Problem(f"spec field {problem.location}", problem.message)


def _write_new(path: Path, text: str, report: NewTenantReport) -> None:
    """Writes `text` as `path` at once or not at all, and never over a spec that appeared since
    the checks (a hard link fails where the name exists; a rename would replace it)."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)
        os.link(temporary, path)
        report.written = True
    except FileExistsError:
        report.refusals.append(Problem("SLUG", f"{path} appeared meanwhile; nothing written"))
    finally:
        os.unlink(temporary)
