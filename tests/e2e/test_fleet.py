"""The fleet commands end to end on the tests' sandbox, over one project of three tenant stacks
brought up at once (tenant-foo and tenant-p7 with Weka organizations, tenant-bar on shared
directories), in a git repository of its own for `review`:

- `drift` with a value changed behind Pulumi's back in each backend, in different stacks, and one
  stack whose Weka credential no longer works; then with everything put back;
- `review` of a change that edits one spec, adds a tenant and deletes a user; of a change to
  provider code; of an invalid spec.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import (
    ROOT,
    all_at_once,
    authentik,
    authentik_user,
    file_backend,
    kubectl_json,
    one_node_tenant,
    operator_command,
    run,
    run_pulumi,
    sacctmgr,
    weka,
    weka_org,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

ROTATED = "Rotated-By-Hand-2026!"


@dataclass
class Fleet:
    project: Path
    env: dict[str, str]
    slugs: list[str]
    base: str  # the commit the stacks were brought up from
    # What a test changed by hand and must put back before the stacks are destroyed.
    undo: list[Callable[[], object]] = field(default_factory=list)

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m tenant_stack <args> --project <project>`, as an operator runs it."""
        return operator_command(*args, "--project", self.project, env=self.env)

    def git(self, *args: str) -> str:
        identity = ["-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.invalid"]
        result = subprocess.run(
            ["git", *identity, *args], cwd=self.project, capture_output=True, text=True, check=True
        )
        return result.stdout

    def spec(self, slug: str) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load(self._spec_file(slug).read_text())
        return loaded

    def write(self, slug: str, spec: dict[str, Any]) -> None:
        self._spec_file(slug).write_text(yaml.safe_dump(spec, sort_keys=False))

    def stacks(self) -> list[str]:
        listed = json.loads(run_pulumi(self.env, self.project, "stack", "ls", "--json"))
        return sorted(str(stack["name"]) for stack in listed)

    def org_admin(self, slug: str) -> tuple[str, str, str]:
        """The tenant's Weka organization admin, as its stack holds it."""
        exported = run_pulumi(
            self.env, self.project, "stack", "export", "--show-secrets", "--stack", slug
        )
        for resource in json.loads(exported)["deployment"]["resources"]:
            if resource["type"].endswith("weka:DirectoryQuota"):
                inputs = resource["inputs"]
                # A secret's plaintext in an export is its value as JSON.
                password = json.loads(inputs["org_admin_password"]["plaintext"])
                return slug, inputs["org_admin_username"], password
        raise AssertionError(f"{slug} holds no Weka quota")

    def _spec_file(self, slug: str) -> Path:
        return self.project / "tenants" / f"{slug}.yaml"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Fleet]:
    work = tmp_path_factory.mktemp("fleet")
    project = project_copy(work / "project", rehearsals=("tenant-foo", "tenant-bar"))
    # The providers are the repository's own files here, so that a change can edit them.
    (project / "providers").unlink()
    shutil.copytree(
        ROOT / "providers", project / "providers", ignore=shutil.ignore_patterns("__pycache__")
    )
    third = one_node_tenant(project, 7, "gpu-15")
    fleet = Fleet(project, file_backend(work / "backend"), ["tenant-foo", "tenant-bar", third], "")
    (project / ".gitignore").write_text("__pycache__/\nstacks/\n")
    fleet.git("init", "--quiet", "--initial-branch=main")
    fleet.git("add", "--all")
    fleet.git("commit", "--quiet", "--message", "the fleet as it is")
    fleet.base = fleet.git("rev-parse", "HEAD").strip()
    for slug in fleet.slugs:
        run_pulumi(fleet.env, project, "stack", "init", slug)
    all_at_once(project, fleet.env, fleet.slugs, "up", "--yes", "--skip-preview")
    yield fleet
    for undo in reversed(fleet.undo):
        undo()
    fleet.git("reset", "--quiet", "--hard", fleet.base)
    fleet.git("clean", "--quiet", "--force", "-d")
    all_at_once(project, fleet.env, fleet.slugs, "destroy", "--yes", "--skip-preview")


def test_drift_names_each_stack_layer_resource_and_property_and_goes_on_past_an_error(
    fleet: Fleet,
) -> None:
    foo, bar, p7 = fleet.slugs
    # Behind Pulumi's back: Slurm and Authentik in tenant-bar, Kubernetes and Weka in tenant-p7.
    run("sacctmgr", "-i", "modify", "account", bar, "set", "GrpJobs=5")
    dave = authentik_user("dave")
    with authentik() as api:
        api.patch(f"/core/users/{dave['pk']}/", json={"email": "dave@elsewhere.example"})
    cpus = kubectl_json("-n", p7, "get", "resourcequota", f"{p7}-quota")["spec"]["hard"][
        "requests.cpu"
    ]
    quota = {"spec": {"hard": {"requests.cpu": "2000"}}}
    run("kubectl", "-n", p7, "patch", "resourcequota", f"{p7}-quota", "--type", "merge", "-p",
        json.dumps(quota))  # fmt: skip
    org = weka_org(p7)
    assert org is not None
    contracted = org["total_quota"]
    with weka() as api:
        limits = {"ssd_quota": 0, "total_quota": 2 * contracted}
        assert api.put(f"/organizations/{org['uid']}/limits", json=limits).status_code == 200
    # tenant-foo's organization admin password is changed by hand: its stack cannot log in.
    admin = fleet.org_admin(foo)
    with weka(admin) as api:
        me = api.get("/users/whoami").json()["data"]
        changed = api.put(f"/users/{me['uid']}/password", json={"password": ROTATED})
        assert changed.status_code == 200, changed.text

    def put_back_the_password() -> None:
        with weka((foo, admin[1], ROTATED)) as api:
            assert api.put(f"/users/{me['uid']}/password", json={"password": admin[2]}).is_success

    fleet.undo.append(put_back_the_password)
    # tenant-bar is locked by another operation: the check takes no lock, so it still runs.
    lock = _lock(fleet, bar)
    fleet.undo.append(lambda: lock.unlink(missing_ok=True))

    checked = fleet.command("drift", "--json", "--workers", "2")
    assert checked.returncode == 2, checked.stderr
    report = {stack["stack"]: stack for stack in json.loads(checked.stdout)["stacks"]}
    assert list(report) == sorted(fleet.slugs)
    assert report[bar]["status"] == "drift"
    assert report[p7]["status"] == "drift"
    assert report[foo]["status"] == "error"
    # Each failing resource named, in the provider's own words (the first few).
    assert report[foo]["error"].startswith(f"{foo}-")
    assert "POST /api/v2/login answered 401: Invalid username or password" in report[foo]["error"]
    assert _drifted(report[bar]) == {
        ("SlurmAccounting", f"{bar}-account", "grp_jobs", 100, 5),
        ("IdentityGroup", f"{bar}-user-dave", "email", "dave@tenant-bar.example",
         "dave@elsewhere.example"),
    }  # fmt: skip
    assert _drifted(report[p7]) == {
        ("TenantNamespace", f"{p7}-quota", 'spec.hard["requests.cpu"]', cpus, "2k"),
        ("WekaStorage", f"{p7}-org", "total_quota", contracted, 2 * contracted),
    }
    # Progress on stderr, one line per stack; no secret anywhere.
    assert sorted(line.split()[1] for line in checked.stderr.splitlines()) == sorted(
        f"{slug}:" for slug in fleet.slugs
    )
    assert admin[2] not in checked.stdout + checked.stderr

    text = fleet.command("drift", bar, foo)
    assert text.returncode == 2
    assert f"{bar}: drift" in text.stdout
    assert f"{foo}: error" in text.stdout
    assert "    grp_jobs: recorded 100, live 5" in text.stdout
    assert "\033[" not in text.stdout + text.stderr  # colour only on a terminal
    assert text.stdout.rstrip().endswith("2 stacks: 0 clean, 1 drift, 1 error")

    # Put back: the password by hand, the rest by `up --refresh`; then every stack is clean.
    for undo in reversed(fleet.undo):
        undo()
    fleet.undo.clear()
    all_at_once(fleet.project, fleet.env, [bar, p7], "up", "--refresh", "--yes", "--skip-preview")
    assert sacctmgr("show", "assoc", f"account={bar}", "user=", "format=GrpJobs") == ["100"]
    clean = fleet.command("drift")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.rstrip().endswith("3 stacks: 3 clean, 0 drift, 0 error")
    quota = kubectl_json("-n", p7, "get", "resourcequota", f"{p7}-quota")
    assert quota["spec"]["hard"]["requests.cpu"] == cpus


def test_review_lists_exactly_the_changed_tenants_and_calls_out_the_disabled_user(
    fleet: Fleet, tmp_path: Path
) -> None:
    foo, bar, p7 = fleet.slugs
    spec = fleet.spec(bar)
    spec["slurm"]["grp_jobs"] = 120
    fleet.write(bar, spec)
    spec = fleet.spec(foo)
    spec["users"] = [user for user in spec["users"] if user["username"] != "carol"]
    fleet.write(foo, spec)
    new = one_node_tenant(fleet.project, 8, "gpu-16")
    fleet.git("add", "--all")
    fleet.git("commit", "--quiet", "--message", "a pull request's change")
    stacks_before = fleet.stacks()

    reviewed = fleet.command(
        "review", "--base", "main~1", "--markdown", str(tmp_path / "review.md"),
        "--json-file", str(tmp_path / "review.json"),
    )  # fmt: skip
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    comment = (tmp_path / "review.md").read_text()
    report = json.loads((tmp_path / "review.json").read_text())
    assert report["touched"] == {"specs": sorted([bar, foo, new]), "deleted": [], "program": []}
    tenants = {tenant["tenant"]: tenant for tenant in report["tenants"]}
    assert sorted(tenants) == sorted([bar, foo, new])
    assert tenants[new]["stack"] == "new"
    assert tenants[new]["counts"]["create"] > 20
    assert tenants[bar]["counts"] == {
        "create": 0,
        "import": 0,
        "update": 1,
        "replace": 0,
        "delete": 0,
    }
    assert "Slurm: update account `tenant-bar`: grp_jobs: 100 → 120" in comment
    assert (
        "**Authentik: disable user `carol` and take them out of the group (never deleted)**"
        ": no longer declared by tenants/tenant-foo.yaml"
    ) in comment
    # Her home directory holds data: called out above everything else.
    caution = comment.split("> [!CAUTION]", 1)[1].split("\n\n", 1)[0]
    assert "**tenant-foo**: Weka: delete directory `tenant-foo-home/carol`" in caution
    assert p7 not in comment
    assert "| tenant-p8 | new | " in comment
    assert len(comment) < 64_000
    # Nothing left behind: no stack, no stack config file, the working tree as it was.
    assert fleet.stacks() == stacks_before
    assert fleet.git("status", "--porcelain") == ""
    assert not list((fleet.project / "stacks").glob(f"*{new}*"))


def test_review_of_a_provider_change_previews_every_tenant(fleet: Fleet) -> None:
    client = fleet.project / "providers" / "slurm" / "client.py"
    client.write_text(client.read_text() + "\n# A change every stack runs.\n")
    fleet.git("commit", "--quiet", "--all", "--message", "a provider change")

    reviewed = fleet.command("review", "--base", "main~1", "--json")
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    report = json.loads(reviewed.stdout)
    assert report["touched"]["program"] == ["providers/slurm/client.py"]
    statuses = {tenant["tenant"]: tenant["status"] for tenant in report["tenants"]}
    # Every spec in tenants/, the new one from the previous test's commit included.
    assert statuses == {
        "tenant-bar": "changes",
        "tenant-foo": "changes",
        "tenant-p7": "no-changes",
        "tenant-p8": "changes",
    }


def test_review_of_specs_kept_in_a_repository_of_their_own(fleet: Fleet, tmp_path: Path) -> None:
    """--tenants: the change is read in the specs' own repository, and the engine previews the
    specs there, not the project's (which are left as they were)."""
    _, _, p7 = fleet.slugs
    specs = tmp_path / "specs-repo" / "cluster-a"
    shutil.copytree(fleet.project / "tenants", specs)
    repo = specs.parent
    identity = ["-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.invalid"]
    for args in (["init", "--quiet", "--initial-branch=main"], ["add", "--all"],
                 ["commit", "--quiet", "--message", "the specs"]):  # fmt: skip
        run("git", "-C", str(repo), *identity, *args)
    spec = yaml.safe_load((specs / f"{p7}.yaml").read_text())
    spec["slurm"]["grp_jobs"] = 77
    (specs / f"{p7}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    reviewed = fleet.command("review", "--base", "main", "--tenants", str(specs), "--json")
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    report = json.loads(reviewed.stdout)
    assert report["touched"] == {"specs": [p7], "deleted": [], "program": []}
    (preview,) = report["tenants"]
    assert (preview["tenant"], preview["status"]) == (p7, "changes")
    assert preview["counts"]["update"] == 1
    assert fleet.spec(p7)["slurm"].get("grp_jobs") != 77


def test_review_fails_on_an_invalid_spec_with_its_field_path(fleet: Fleet) -> None:
    _, bar, _ = fleet.slugs
    spec = fleet.spec(bar)
    spec["users"][1]["uid"] = "two thousand"
    fleet.write(bar, spec)

    reviewed = fleet.command("review", "--base", "main")
    assert reviewed.returncode == 1
    assert "## Tenant review against `main`: **failed**" in reviewed.stdout
    assert "tenants/tenant-bar.yaml: users.1.uid:" in reviewed.stdout
    fleet.git("checkout", "--", "tenants")


def _drifted(stack: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {
        (r["layer"], r["resource"], p["path"], p["recorded"], p["live"])
        for r in stack["resources"]
        for p in r["properties"]
    }


def _lock(fleet: Fleet, slug: str) -> Path:
    """A lock file as the file backend's `up` writes one while it runs."""
    backend = Path(fleet.env["PULUMI_BACKEND_URL"].removeprefix("file://"))
    lock = backend / ".pulumi" / "locks" / "organization" / "gpu-tenants" / slug / "held.json"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"pid": 1, "username": "operator", "hostname": "elsewhere"}))
    return lock
