"""`new`: a new tenant's spec from its contract's terms and its users file. The terms are checked
first, each problem at the option that gave it, and the users file at its lines; then what is
live (nodes, the namespace and stack of the slug, Authentik's numbers) is read, the nodes and
numbers chosen (`taken`), and the spec drafted with a reason for each value chosen
(`spec_draft`).

Nothing is written unless the spec passes what `load_spec`, `check` and the program's preflight
would check of it (its field rules, the rules across fields, the rules across tenants beside the
other specs, the numbers and names Authentik holds); the spec is written atomically, and never
over one that exists.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from providers.identities import MAX_ID
from tenant_stack.authoring.spec_draft import Choice, Resolved, SpecDraft
from tenant_stack.authoring.taken import Taken, free_for, next_free
from tenant_stack.authoring.users_file import UsersFile, read_users
from tenant_stack.errors import Problem, TenantError
from tenant_stack.fleet.live_numbers import handed_out
from tenant_stack.importing.spec_file import render_commented
from tenant_stack.live import NodeState
from tenant_stack.platform import Platform
from tenant_stack.preflight import check_capacity, check_directory
from tenant_stack.spec.fleet import load_fleet, refusals_beside
from tenant_stack.spec.models import TenantSpec, hostlist
from tenant_stack.spec.names import Slug
from tenant_stack.spec.quantities import parse_duration, parse_size
from tenant_stack.spec.rules import check_spec
from tenant_stack.strict_models import problems_from
from tenant_stack.strict_yaml import parse_yaml

if TYPE_CHECKING:
    from providers.authentik.client import Group, User
    from providers.weka.records import Capacity

__all__ = ["Live", "NewTenantReport", "Terms", "new_tenant", "read_live"]


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
    contact: tuple[str, str] | None = None  # name, email
    rehearsal: bool = False


@dataclass(frozen=True)
class Live:
    """What the cluster, the directory and the state backend hold now."""

    nodes: Sequence[NodeState]
    namespace_exists: bool
    stacks: Sequence[str]  # the project's stacks
    directory_users: Sequence[User]
    directory_groups: Sequence[Group]
    storage: Capacity
    organizations: Collection[str]  # Weka's, by name


def read_live(slug: str, project: Path) -> Live:
    """Reads the live cluster's nodes and the namespace `slug`, Authentik's users and groups
    (AUTHENTIK_URL and its token, as the program reads them), Weka's capacity and organizations
    (WEKA_URL, as the program reads them) and the stacks of `project`."""
    from providers.authentik.client import AuthentikClient
    from providers.authentik.settings import Settings
    from providers.weka.props import weka_client
    from providers.weka.settings import Settings as WekaSettings
    from tenant_stack.live import read_cluster
    from tenant_stack.stacks import Stacks

    cluster = read_cluster(slug)
    with AuthentikClient.from_settings(Settings.from_environment()) as directory:
        users, groups = directory.users(), directory.groups()
    with weka_client(WekaSettings.from_environment()) as weka:
        capacity, organizations = weka.capacity(), weka.list_organizations()
    return Live(
        cluster.nodes,
        cluster.namespace_exists,
        Stacks(project).tenants(),
        users,
        groups,
        capacity,
        {org.name for org in organizations},
    )


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
    today: date | None = None,
) -> NewTenantReport:
    """Writes `<tenants>/<slug>.yaml` from `terms` and the users in `users_file`, or reports,
    each at the option or the file's line to change, why it cannot. `read` reads what is live
    for a slug (`read_live`), once the terms and the file pass."""
    today = today or date.today()
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
    resolved, problems = _resolved(terms, platform, users)
    report.refusals += problems
    taken, problems = Taken.beside(tenants, platform)
    report.refusals += problems
    if report.refusals or resolved is None:
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
    taken.add_live(
        handed_out(live.directory_users, live.directory_groups, *platform.ldap.start_numbers)
    )
    nodes, problems = _nodes(resolved, platform, live.nodes, taken.nodes)
    report.refusals += problems
    every = taken.every_number()
    uids = next_free(platform.ldap.uid_start_number, len(users.users), taken.uids, every)
    gids = next_free(
        platform.ldap.gid_start_number, 2 if terms.admins else 1, taken.gids, every | set(uids)
    )
    if max(uids + gids) > MAX_ID:
        report.refusals.append(
            Problem("SLUG", f"no free uid or gid is left below {MAX_ID}: the directory is full")
        )
    if report.refusals:
        return report
    draft = SpecDraft(resolved, platform, users.users, nodes, uids, gids)
    text = render_commented(draft.document(today), draft.comments, _header(terms.slug, today))
    report.choices = draft.choices
    locate = _Locations(users)
    report.refusals += [locate(p) for p in _problems(text, path, platform, live)]
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


def _resolved(
    terms: Terms, platform: Platform, users: UsersFile
) -> tuple[Resolved | None, list[Problem]]:
    """The terms parsed and checked on their own and against the platform and the users; the
    problems at the options (or lines) to change. None when they do not resolve."""
    problems: list[Problem] = []
    sku = platform.skus.get(terms.gpu_sku)
    if sku is None:
        problems.append(
            Problem(
                "--gpu-sku",
                f"{terms.gpu_sku!r} is not in the platform's SKU catalogue; use one of "
                f"{', '.join(sorted(platform.skus))}",
            )
        )
    pools = sorted(n for n, p in platform.node_pools.items() if p.sku == terms.gpu_sku)
    pool: str | None = None
    if terms.hardware_pool is not None:
        given = platform.node_pools.get(terms.hardware_pool)
        if given is None or given.sku != terms.gpu_sku:
            what = "not a pool" if given is None else f"a pool of {given.sku} nodes"
            problems.append(
                Problem(
                    "--hardware-pool",
                    f"{terms.hardware_pool!r} is {what}; the pools of {terms.gpu_sku} nodes: "
                    f"{', '.join(pools) or 'none'}",
                )
            )
        else:
            pool = terms.hardware_pool
    elif len(pools) == 1:
        pool = pools[0]
    elif sku is not None:
        in_pools = f"needed: {terms.gpu_sku} nodes are in pools {', '.join(pools)}"
        problems.append(
            Problem("--hardware-pool", in_pools)
            if pools
            else Problem("--gpu-sku", f"no hardware pool of the platform holds {terms.gpu_sku}")
        )
    if sku is not None and terms.partition_type == "reserved" and terms.gpus % sku.gpus_per_node:
        whole = max(1, terms.gpus // sku.gpus_per_node) * sku.gpus_per_node
        problems.append(
            Problem(
                "--gpus",
                f"{terms.gpus} GPUs are not whole {terms.gpu_sku} nodes of {sku.gpus_per_node} "
                f"GPUs: a reserved tenant has whole nodes, such as {whole}",
            )
        )
    for option, text in (
        ("--wall-limit", terms.wall_limit),
        ("--interactive-wall-limit", terms.interactive_wall_limit),
    ):
        if text is not None:
            try:
                parse_duration(text)
            except ValueError as error:
                problems.append(Problem(option, str(error)))
    sizes: dict[str, int] = {}
    for option, text in (
        ("--home", terms.home),
        ("--scratch", terms.scratch),
        ("--home-per-user", terms.home_per_user),
    ):
        if text is not None:
            try:
                sizes[option] = parse_size(text)
            except ValueError as error:
                problems.append(Problem(option, str(error)))
    names = [user.username for user in users.users]
    # An admin whose row is refused is not missing: its row's problem says what to fix.
    for admin in terms.admins if not users.refusals else ():
        if admin not in names:
            problems.append(Problem("--admin", f"{admin!r} is not a user of the users file"))
    count = len(users.users)
    if terms.gpu_minutes is not None and count and terms.gpu_minutes % count:
        problems.append(
            Problem(
                "--gpu-minutes",
                f"{terms.gpu_minutes} does not split evenly between {count} users; use "
                f"{terms.gpu_minutes // count * count}",
            )
        )
    start, end = terms.term
    if end <= start:
        problems.append(Problem("--term", f"the term ends ({end}) before it starts ({start})"))
    problems += _team_names(terms.slug, users)
    if problems or pool is None:
        return None, problems
    display = terms.display_name or " ".join(w.capitalize() for w in terms.slug.split("-"))
    return Resolved(
        slug=terms.slug,
        display_name=display,
        display_given=terms.display_name is not None,
        gpu_sku=terms.gpu_sku,
        gpus=terms.gpus,
        partition_type=terms.partition_type,
        term=terms.term,
        wall_limit=terms.wall_limit.strip(),
        interactive_wall_limit=terms.interactive_wall_limit,
        gpu_minutes=terms.gpu_minutes,
        pool=pool,
        pool_given=terms.hardware_pool is not None,
        home=sizes["--home"],
        home_per_user=sizes.get("--home-per-user"),
        scratch=sizes["--scratch"],
        storage_isolation=terms.storage_isolation,
        admins=terms.admins,
        contact=terms.contact,
        rehearsal=terms.rehearsal,
    ), []


def _team_names(slug: str, users: UsersFile) -> list[Problem]:
    """Slurm accounts are cluster-wide: each team's name ends in the tenant's short name (the
    spec's rule, said here at the line of the team's first user)."""
    short, seen, problems = slug.removeprefix("tenant-"), set(), []
    for user in users.users:
        if user.team and user.team not in seen and not user.team.endswith(f"-{short}"):
            seen.add(user.team)
            problems.append(
                Problem(
                    users.where(user.line_of("team")),
                    f"team {user.team!r}: Slurm accounts are cluster-wide, so a team's name ends "
                    f"in '-{short}', such as '{user.team}-{short}'",
                )
            )
    return problems


def _nodes(
    terms: Resolved, platform: Platform, live: Sequence[NodeState], named: set[str]
) -> tuple[list[str], list[Problem]]:
    """A reserved tenant's nodes, the first free ones; or why there are not enough."""
    if terms.partition_type != "reserved":
        return [], []
    wanted = terms.gpus // platform.skus[terms.gpu_sku].gpus_per_node
    order = platform.node_pools[terms.pool].nodes
    free = free_for(terms.gpu_sku, terms.pool, order, live, named)
    if len(free) < wanted:
        return [], [
            Problem(
                "--gpus",
                f"{terms.gpus} GPUs need {wanted} {terms.gpu_sku} nodes of pool {terms.pool}, "
                f"and {len(free)} are free: {hostlist(free) if free else 'none'} (Ready, "
                "schedulable, untainted, in no Reservation and named by no other spec)",
            )
        ]
    return free[:wanted], []


def _problems(text: str, path: Path, platform: Platform, live: Live) -> list[Problem]:
    """The problems of the spec `text` (to be `path`) that `load_spec`, `check` and the
    program's preflight would find in the directory, at their spec fields."""
    try:
        spec = TenantSpec.model_validate(parse_yaml(text))
    except ValidationError as error:
        return problems_from(error)
    beside = load_fleet(path.parent, platform)
    return [
        *check_spec(spec, platform),
        *refusals_beside(spec, path, platform, beside)[0],
        *check_directory(
            spec, path, platform.ldap, live.directory_users, live.directory_groups, None
        ),
        *check_capacity(
            spec,
            beside[0].values(),
            live.storage,
            live.organizations,
            platform.weka.capacity_headroom_percent,
        ),
    ]


# Where a spec field's problem is fixed: the option that gives its value (the longest prefix
# that matches); users.<n> and slurm.teams.<n> are lines of the users file.
_OPTIONS = (
    ("slug", "SLUG"),
    ("login.hostname", "SLUG"),
    ("display_name", "--display-name"),
    ("contract.contact", "--contact"),
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
    ("storage", "--home, --scratch"),
    ("storage.home_capacity", "--home"),
    ("storage.home_per_user", "--home-per-user"),
    ("storage.scratch", "--scratch"),
    ("kubernetes.quota.requests_storage", "--scratch"),
    ("slurm.qos", "--gpus"),
    ("slurm.partition.default_time", "--wall-limit"),
    ("lifecycle.rehearsal", "--rehearsal"),
)


class _Locations:
    """A problem at a spec field, moved to where the operator fixes it."""

    def __init__(self, users: UsersFile) -> None:
        self.users = users
        self.teams = list(dict.fromkeys(user.team for user in users.users if user.team))

    def __call__(self, problem: Problem) -> Problem:
        parts = problem.location.split(".")
        if parts[0] == "users" and len(parts) > 1 and parts[1].isdigit():
            user = self.users.users[int(parts[1])]
            line = user.line_of(parts[2] if len(parts) > 2 else "username")
            return Problem(self.users.where(line), problem.message)
        if parts[:2] == ["slurm", "teams"] and len(parts) > 2 and parts[2].isdigit():
            team = self.teams[int(parts[2])]
            user = next(u for u in self.users.users if u.team == team)
            return Problem(self.users.where(user.line_of("team")), problem.message)
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
