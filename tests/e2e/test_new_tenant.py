"""`gpu-tenants new` on the tests' sandbox: a reserved rehearsal tenant written from options and a
users file, against the live nodes, Authentik's numbers and the project's specs; its `up`
succeeds with the nodes, uids and gids chosen, which no other tenant has; then it is destroyed.

One stack for the module (the suite's time): the refusals that need the live cluster (a taken
slug, too few free nodes) run beside it."""

from __future__ import annotations

import base64
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec
from tenant_stack.spec.fleet import find_collisions, load_fleet
from tests.backends import (
    ROOT,
    authentik,
    file_backend,
    kubectl_json,
    labelled,
    live_numbers,
    operator_command,
    pulumi,
    run_pulumi,
    sacctmgr,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

# Names of this run's own: a destroyed tenant's users stay in Authentik, deactivated.
SUFFIX = uuid.uuid4().hex[:6]
SHORT = f"nw{SUFFIX}"
SLUG = f"tenant-{SHORT}"
USERS = [f"{SHORT}a", f"{SHORT}b"]
TEAM = f"ml-{SHORT}"
TERMS = (
    "--gpu-sku", "h100-8x", "--gpus", "8", "--partition-type", "reserved",
    "--term", "2026-01-01:2026-12-31", "--wall-limit", "24h", "--home", "200GB",
    "--scratch", "1TB", "--storage-isolation", "directory",
)  # fmt: skip


def ed25519_key(comment: str) -> str:
    """A well-formed public key of random bytes: no one holds its private half."""
    kind = b"ssh-ed25519"
    blob = len(kind).to_bytes(4, "big") + kind + (32).to_bytes(4, "big") + os.urandom(32)
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


def _users_file(directory: Path) -> Path:
    """The contract's users as a YAML file, the first in a team, the second on the account."""
    users = [
        {
            "username": name,
            "name": f"New User {name[-1].upper()}",
            "email": f"{name}@{SLUG}.example",
            "ssh_keys": [ed25519_key(f"{name}@laptop")],
            **({"team": TEAM} if index == 0 else {}),
        }
        for index, name in enumerate(USERS)
    ]
    path = directory / "users.yaml"
    path.write_text(yaml.safe_dump(users, sort_keys=False))
    return path


def _reserved_nodes() -> set[str]:
    nodes = kubectl_json("get", "nodes")["items"]
    return {n["metadata"]["name"] for n in nodes if "reserved.tenant" in n["metadata"]["labels"]}


@dataclass
class NewTenant:
    project: Path
    env: dict[str, str]
    users: Path
    report: dict[str, Any]
    numbers_before: set[int]  # what Authentik handed out before `new`
    reserved_before: set[str]  # the nodes in a Reservation before `new`
    up: str

    @property
    def spec(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"


@pytest.fixture(scope="module")
def new_tenant(
    tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout
) -> Iterator[NewTenant]:
    work = tmp_path_factory.mktemp("new-tenant")
    project = project_copy(work / "project")
    env = file_backend(work / "state")
    users = _users_file(work)
    numbers, reserved = live_numbers(), _reserved_nodes()
    done = operator_command(
        "new", SLUG, "--users", users, *TERMS, "--admin", USERS[0], "--rehearsal",
        "--project", project, "--json", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    run_pulumi(env, project, "stack", "init", SLUG)
    try:
        up = run_pulumi(env, project, "up", "--yes", "--stack", SLUG, timeout=900)
        yield NewTenant(project, env, users, json.loads(done.stdout), numbers, reserved, up)
    finally:
        destroyed = pulumi(env, project, "destroy", "--yes", "--stack", SLUG, timeout=900)
        assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
        run_pulumi(env, project, "stack", "rm", "--yes", SLUG)
        assert labelled(SLUG) == []


def test_the_written_spec_passes_the_loader_and_the_fleet_rules(new_tenant: NewTenant) -> None:
    assert new_tenant.report["written"], new_tenant.report
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    spec = load_spec(new_tenant.project / "tenants", SLUG, platform)
    specs, broken = load_fleet(new_tenant.project / "tenants", platform)
    assert not broken
    assert find_collisions(specs, platform) == []
    checked = operator_command("check", "--tenants", new_tenant.project / "tenants")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert spec.lifecycle.rehearsal
    assert (spec.contract.gpus, spec.contract.gpu_minutes) == (8, 8 * 365 * 1440)
    assert spec.gpu_minutes_per_user == 8 * 365 * 1440 // 2
    assert (spec.slurm.qos.normal.gpus, spec.slurm.qos.interactive.gpus) == (8, 8)
    assert spec.identity.admins == [USERS[0]]
    assert [u.team for u in spec.users] == [TEAM, None]
    text = new_tenant.spec.read_text()
    assert "# runbook step 1 on" in text
    assert "# the next uid above every one pinned or handed out" in text


def test_its_nodes_uids_and_gids_are_no_other_tenants(new_tenant: NewTenant) -> None:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    spec = load_spec(new_tenant.project / "tenants", SLUG, platform)
    others = [
        other
        for path, other in load_fleet(new_tenant.project / "tenants", platform)[0].items()
        if path.stem != SLUG
    ]
    assert others
    uids = [user.uid for user in spec.users]
    gids = [spec.identity.gid, spec.identity.admins_gid]
    their_numbers = {u.uid for o in others for u in o.users} | {
        g for o in others for g in (o.identity.gid, o.identity.admins_gid) if g is not None
    }
    assert min(uids) > max(u.uid for o in others for u in o.users)
    assert not (set(uids) | set(g for g in gids if g)) & (their_numbers | new_tenant.numbers_before)
    assert len(spec.reservation.nodes) == 1
    their_nodes = {node for o in others for node in o.reservation.nodes}
    assert not set(spec.reservation.nodes) & (their_nodes | new_tenant.reserved_before)


def test_up_planned_every_layer_of_the_runbook(new_tenant: NewTenant) -> None:
    for layer in (
        "gpu-tenants:reservation:CapacityReservation",  # step 1
        "gpu-tenants:identity:IdentityGroup",  # 2
        "gpu-tenants:namespace:TenantNamespace",  # 3
        "gpu-tenants:slurm:SlurmAccounting",  # 4
        "gpu-tenants:login:LoginPod",  # 5
        "gpu-tenants:storage:WekaStorage",  # 4e, 6
    ):
        assert layer in new_tenant.up, layer


def test_up_made_the_tenant_on_its_nodes_with_its_numbers(new_tenant: NewTenant) -> None:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    spec = load_spec(new_tenant.project / "tenants", SLUG, platform)
    assert labelled(SLUG) == spec.reservation.nodes
    with authentik() as api:
        for user in spec.users:
            found = api.get("/core/users/", params={"username": user.username}).json()
            assert found["results"][0]["attributes"]["uidNumber"] == str(user.uid)
        group = api.get("/core/groups/", params={"name": SLUG}).json()["results"][0]
        assert group["attributes"]["gidNumber"] == str(spec.identity.gid)
    budgets = sacctmgr("show", "assoc", f"account={TEAM}", "format=User,GrpTRESMins")
    assert f"{USERS[0]}|gres/gpu={spec.gpu_minutes_per_user}" in budgets, budgets


def test_a_taken_slug_and_too_few_nodes_are_refused_with_nothing_written(
    new_tenant: NewTenant, tmp_path: Path
) -> None:
    # The spec is elsewhere; the stack and the namespace still name the slug as taken.
    tenants = tmp_path / "tenants"
    shutil.copytree(ROOT / "tenants", tenants)
    taken = operator_command(
        "new", SLUG, "--users", new_tenant.users, *TERMS, "--tenants", tenants,
        "--project", new_tenant.project, env=new_tenant.env,
    )  # fmt: skip
    assert taken.returncode == 1, taken.stdout + taken.stderr
    assert f"SLUG: namespace {SLUG} exists in the cluster" in taken.stdout
    assert f"SLUG: stack {SLUG} exists in the project" in taken.stdout
    assert not (tenants / f"{SLUG}.yaml").exists()

    # Another slug, whose team would need a name of its own: its users in no team.
    teamless = tmp_path / "users.yaml"
    users = yaml.safe_load(new_tenant.users.read_text())
    teamless.write_text(
        yaml.safe_dump([{k: v for k, v in u.items() if k != "team"} for u in users])
    )
    too_many = [*TERMS, "--gpus", "128"]
    short = operator_command(
        "new", f"tenant-{SHORT}x", "--users", teamless, *too_many, "--tenants", tenants,
        "--project", new_tenant.project, env=new_tenant.env,
    )  # fmt: skip
    assert short.returncode == 1, short.stdout + short.stderr
    assert "--gpus: 128 GPUs need 16 h100-8x nodes of pool gpu-h100-rack-a" in short.stdout
    # An organization of its own larger than the sandbox's Weka (2 PB in all).
    vast = [*TERMS[:-4], "--scratch", "3PB", "--storage-isolation", "org"]
    refused = operator_command(
        "new", f"tenant-{SHORT}x", "--users", teamless, *vast, "--tenants", tenants,
        "--project", new_tenant.project, env=new_tenant.env,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert (
        "--home, --scratch: the tenant's filesystems (200.0 GB home + 3.0 PB scratch) with the "
        "platform's 20% headroom need 3.6 PB, and Weka has "
    ) in refused.stdout, refused.stdout
    assert sorted(p.name for p in tenants.iterdir()) == sorted(
        p.name for p in (ROOT / "tenants").iterdir()
    )
