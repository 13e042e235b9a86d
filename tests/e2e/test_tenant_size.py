"""Tenants of several users on the tests' sandbox, at the sizes `make test` affords: 4 and 12 users
in 4 teams (benchmarks/tenant_size.py measures 3, 50 and 200), each user with 2 SSH keys, a home
with its quota and Slurm associations. Both are brought up at once, previewed and drift-checked
with nothing to change, read back from the backends, then destroyed. What a user more costs stays
within a budget of backend calls (the clients' call log), a no-op preview costs the same at both
sizes, and a user's resources depend on as many others at both: a login per call, a listing per
user or every child of a layer as each home's dependency (a state growing with the users' square)
fails here before the benchmark shows it."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.call_log import VARIABLE as CALL_LOG
from providers.call_log import read_log
from sandbox.generated_tenants import TEAMS, sized_tenant
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec
from tests.backends import (
    authentik_user,
    file_backend,
    labelled,
    live_numbers,
    run_pulumi,
    sacctmgr,
    weka,
    weka_quotas,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SMALL, LARGE = 4, 12
COMMANDS = {
    "up": ("up", "--yes", "--skip-preview"),
    "preview": ("preview", "--expect-no-changes"),
    "drift": ("preview", "--refresh", "--expect-no-changes"),
}
# What one user more may cost each backend, in calls: `up` makes the user, its home and quota and
# its associations, the drift check reads each back once (what benchmarks/tenant_size.py measured
# at 50 and 200 users once the per-call logins and per-user listings were gone). Half a call per
# user is slack for a retried request; a call more per user is over it. Weka's include the reads
# of the user's quota until the cluster reports it ACTIVE (two on the sandbox, whose cluster
# settles in 0.1 s).
PER_USER = {
    "up": {"authentik": 3, "slurm": 4, "weka": 11},
    "drift": {"authentik": 1, "slurm": 1, "weka": 2},
}
# Names of this run's own: a destroyed tenant's users stay in Authentik, deactivated.
SUFFIX = uuid.uuid4().hex[:5]


@dataclass
class Sized:
    users: int
    spec: dict[str, Any]
    calls: dict[str, Counter[str]] = field(default_factory=dict)  # command -> backend -> calls
    state: list[dict[str, Any]] = field(default_factory=list)  # the resources after `up`

    @property
    def slug(self) -> str:
        return str(self.spec["slug"])

    def user_dependencies(self) -> dict[str, int]:
        """For each kind of a user's resources (its type, and its name with the username and the
        slug taken out), the most dependencies the state records for one of them."""
        users = [str(user["username"]) for user in self.spec["users"]]
        found: dict[str, int] = {}
        for resource in self.state:
            name = str(resource["urn"]).rsplit("::", 1)[-1]
            user = next((u for u in users if u in name), None)
            if user is not None:
                kind = f"{resource['type']} {name.replace(user, '<user>')}"
                kind = kind.replace(self.slug, "<slug>")
                depends = len(resource.get("dependencies") or [])
                found[kind] = max(found.get(kind, 0), depends)
        return found


def _first_free_number() -> int:
    """Above every uid and gid Authentik holds (the sandbox keeps earlier runs' tenants' users)."""
    return max(live_numbers() | {46999}) + 1


def _run(project: Path, env: dict[str, str], tenant: Sized, command: str, log: Path) -> None:
    """`pulumi <command>` of `tenant`, its backend calls counted from a call log of its own."""
    log.write_text("")
    args = COMMANDS[command]
    run_pulumi({**env, CALL_LOG: str(log)}, project, *args, "--stack", tenant.slug, timeout=900)
    tenant.calls[command] = Counter(call.backend for call in read_log(log))


@pytest.fixture(scope="module")
def sized(
    tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout
) -> Iterator[dict[int, Sized]]:
    work = tmp_path_factory.mktemp("tenant-size")
    project = project_copy(work / "project")
    for example in (project / "tenants").glob("*.yaml"):
        example.unlink()
    env = file_backend(work / "state")
    number = _first_free_number()
    tenants: dict[int, Sized] = {}
    for users in (SMALL, LARGE):
        slug, short = f"grow{users}-{SUFFIX}", f"g{users}{SUFFIX}"
        spec = sized_tenant(slug, users, short=short, uid_start=number, gid=number + users)
        number += users + 2
        (project / "tenants" / f"{slug}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        load_spec(project / "tenants", slug, load_platform(project / "Pulumi.prod.yaml"))
        tenants[users] = Sized(users, spec)
    try:
        # Each command of both tenants at once, the next command once both are done: Authentik's
        # directory (which a preview lists, page by page) is the same for both previews and drifts.
        with ThreadPoolExecutor(len(tenants)) as pool:
            for tenant in tenants.values():
                run_pulumi(env, project, "stack", "init", tenant.slug)
            for command in COMMANDS:
                runs = [
                    pool.submit(_run, project, env, tenant, command, work / f"{tenant.slug}.log")
                    for tenant in tenants.values()
                ]
                for done in runs:
                    done.result()
        for tenant in tenants.values():
            exported = run_pulumi(env, project, "stack", "export", "--stack", tenant.slug)
            tenant.state = json.loads(exported)["deployment"]["resources"]
        yield tenants
    finally:
        with ThreadPoolExecutor(len(tenants)) as pool:
            list(
                pool.map(
                    lambda slug: run_pulumi(
                        env, project, "destroy", "--yes", "--stack", slug, timeout=900
                    ),
                    [tenant.slug for tenant in tenants.values()],
                )
            )
        for tenant in tenants.values():
            assert labelled(tenant.slug) == []


@pytest.mark.parametrize("users", [SMALL, LARGE])
def test_every_user_is_in_each_backend(sized: dict[int, Sized], users: int) -> None:
    tenant = sized[users]
    names = [user["username"] for user in tenant.spec["users"]]
    for name in names:
        assert authentik_user(name)["is_active"], name
    teams = {team["name"] for team in tenant.spec["slurm"]["teams"]}
    # One row per association, partition-specific ones included: each member counted once.
    associated = {
        tuple(line.split("|")) for line in sacctmgr("show", "assoc", "format=account,user")
    }
    members = Counter(account for account, user in associated if account in teams and user)
    assert members == {team: users // TEAMS for team in teams}
    with weka() as api:
        homes = weka_quotas(api, "cluster-home")
    assert {f"/{tenant.slug}/{name}" for name in names} <= set(homes)


def test_a_no_op_preview_asks_the_same_of_the_backends_whatever_the_users(
    sized: dict[int, Sized],
) -> None:
    assert sized[LARGE].calls["preview"] == sized[SMALL].calls["preview"]


@pytest.mark.parametrize("command", PER_USER)
def test_each_user_more_costs_each_backend_no_more_calls_than_its_budget(
    sized: dict[int, Sized], command: str
) -> None:
    small, large = sized[SMALL].calls[command], sized[LARGE].calls[command]
    for backend, budget in PER_USER[command].items():
        extra = (large[backend] - small[backend]) / (LARGE - SMALL)
        assert extra <= budget + 0.5, (backend, dict(small), dict(large))


def test_a_users_resources_depend_on_as_many_others_whatever_the_tenants_size(
    sized: dict[int, Sized],
) -> None:
    small, large = sized[SMALL].user_dependencies(), sized[LARGE].user_dependencies()
    assert small, "no resource of the state is a user's"
    assert large == small
