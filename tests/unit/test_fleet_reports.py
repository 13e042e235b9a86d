"""The fleet commands' reading of the engine's output and of git, needing nothing running: the
drift of a refresh preview's events, a preview's steps in the runbooks' words, the review comment
within a pull-request comment's size, and which tenants a change touches."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tenant_stack.fleet.actions import actions_of
from tenant_stack.fleet.drift import drifted_resources, layer_of, property_drift
from tenant_stack.fleet.review import Review, TenantPreview, Touched, still_adopting, touched_by
from tenant_stack.fleet.review_report import LIMIT, markdown
from tenant_stack.spec.models import TenantSpec

ROOT = Path(__file__).resolve().parents[2]

STACK = "urn:pulumi:tenant-a::gpu-tenants::"
ACCOUNT = f"{STACK}gpu-tenants:slurm:SlurmAccounting$pulumi-python:dynamic/slurm:Account::a-acct"
QUOTA = f"{STACK}gpu-tenants:namespace:TenantNamespace$kubernetes:core/v1:ResourceQuota::a-quota"
SECRET = f"{STACK}gpu-tenants:namespace:TenantNamespace$kubernetes:core/v1:Secret::a-bind"
DIRECTORY = f"{STACK}gpu-tenants:storage:WekaStorage$pulumi-python:dynamic/weka:Directory::a-dir"


def outputs_event(op: str, urn: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    type_ = urn.split("::")[2].split("$")[-1]
    return {
        "resOutputsEvent": {
            "metadata": {
                "op": op,
                "urn": urn,
                "type": type_,
                "old": {"type": type_, "outputs": old},
                "new": {"type": type_, "outputs": new},
            }
        }
    }


def test_the_layer_is_the_component_a_resource_is_parented_under() -> None:
    assert layer_of(ACCOUNT) == "SlurmAccounting"
    assert layer_of(f"{STACK}pulumi:providers:kubernetes::default") == "stack"


def test_drift_names_each_changed_leaf_and_leaves_out_what_the_server_rewrites() -> None:
    recorded = {
        "spec": {"hard": {"requests.cpu": "1024", "pods": "10"}},
        "metadata": {"resourceVersion": "353", "labels": {"team": "a"}},
        "status": {"used": {"pods": "0"}},
        "__inputs": {"spec": {"hard": {"requests.cpu": "1024"}}},
    }
    live = {
        "spec": {"hard": {"requests.cpu": "2k", "pods": "10"}},
        "metadata": {"resourceVersion": "395", "labels": {}},
        "status": {"used": {"pods": "3"}},
        "__inputs": {"spec": {"hard": {"requests.cpu": "2k"}}},
    }
    found = [(p.path, p.recorded, p.live) for p in property_drift(recorded, live)]
    assert found == [
        ("metadata.labels", None, {}),
        ("metadata.labels.team", "a", None),
        ('spec.hard["requests.cpu"]', "1024", "2k"),
    ]


def test_drift_masks_secrets_by_the_engines_mark_by_name_and_by_type() -> None:
    events = [
        outputs_event(
            "update",
            ACCOUNT,
            {"admin_password": "old-pass", "token": "[secret]", "grp_jobs": 200},
            {"admin_password": "new-pass", "token": "[secret]", "grp_jobs": 5},
        ),
        outputs_event("update", SECRET, {"data": {"password": "a"}}, {"data": {"password": "b"}}),
        outputs_event("delete", DIRECTORY, {"path": "/a"}, {}),
        outputs_event("same", QUOTA, {}, {}),
    ]
    account, secret, directory = drifted_resources(events)
    assert [(p.path, p.recorded, p.live) for p in account.properties] == [
        ("admin_password", "[secret]", "[secret]"),
        ("grp_jobs", 200, 5),
    ]
    assert [(p.path, p.recorded, p.live) for p in secret.properties] == [
        ("data.password", "[secret]", "[secret]")
    ]
    assert (directory.layer, directory.name, directory.change) == ("WekaStorage", "a-dir", "gone")


def step(op: str, urn: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> Any:
    type_ = urn.split("::")[2].split("$")[-1]
    state = {"custom": True, "type": type_}
    return {
        "op": op,
        "urn": urn,
        "oldState": old and {**state, "inputs": old, "outputs": old},
        "newState": new and {**state, "inputs": new, "outputs": new},
    }


def test_a_preview_in_the_runbooks_words_with_reasons_and_data_flagged() -> None:
    user = (
        f"{STACK}gpu-tenants:identity:IdentityGroup$pulumi-python:dynamic/authentik:TenantUser::u"
    )
    before, after = {"name": "tenant-a", "grp_jobs": 100}, {"name": "tenant-a", "grp_jobs": 120}
    x, y = {"filesystem": "a-home", "path": "/x"}, {"filesystem": "a-home", "path": "/y"}
    steps = [
        step("same", QUOTA, {}, {}),
        step("update", ACCOUNT, before, after),
        step("delete", user, {"username": "carol"}, None),
        step("create-replacement", DIRECTORY, x, y),
        step("replace", DIRECTORY, x, y),
        step("delete-replaced", DIRECTORY, x, None),
    ]
    steps[4]["replaceReasons"] = ["path"]
    account, carol, directory = actions_of(steps, "tenants/tenant-a.yaml")
    assert (account.words, account.reasons) == (
        "Slurm: update account `tenant-a`",
        ("grp_jobs: 100 → 120",),
    )
    assert carol.words == (
        "Authentik: disable user `carol` and take them out of the group (never deleted)"
    )
    assert carol.reasons == ("no longer declared by tenants/tenant-a.yaml",)
    assert not carol.loud
    assert directory.op == "replace"
    assert directory.loud
    assert directory.reasons == (
        "replaced because path cannot change in place",
        "path: /x → /y",
    )


def test_an_imported_tenants_first_up_says_what_it_imports_and_adopts() -> None:
    """The engine's import of an object made by hand, then the update that marks it; and a
    dynamic resource created with the providers' adopt flag."""
    made_by_hand = {"metadata": {"name": "a-bind"}, "data": {"password": "[secret]"}}
    marked = {**made_by_hand, "metadata": {"name": "a-bind", "annotations": {"p": "true"}}}
    quota = f"{STACK}gpu-tenants:storage:WekaStorage$pulumi-python:dynamic/weka:DirectoryQuota::q"
    steps = [
        step("import", SECRET, None, made_by_hand),
        step("update", SECRET, made_by_hand, marked),
        step("create", quota, None, {"path": "/a", "adopt": True}),
    ]
    secret, adopted = actions_of(steps, "tenants/tenant-a.yaml")
    assert (secret.op, secret.words) == (
        "import",
        "Kubernetes: import Secret `a-bind` made by hand, as it is, then update it",
    )
    assert secret.reasons == ("metadata.annotations.p: (none) → true",)
    assert adopted.words == (
        "Weka: create quota `/a`, or adopt it if made by hand (marking it as the tenant's)"
    )


def test_review_warns_of_an_imported_spec_that_still_adopts_once_adopted() -> None:
    foo = yaml.safe_load((ROOT / "tenants" / "tenant-foo.yaml").read_text())
    imported = TenantSpec.model_validate({**foo, "imported": {"date": "2026-12-01", "adopt": True}})
    done = TenantSpec.model_validate({**foo, "imported": {"date": "2026-12-01"}})
    plain = TenantSpec.model_validate(foo)
    assert still_adopting([imported, done, plain], lambda slug: False) == []
    (warning,) = still_adopting([imported, done, plain], lambda slug: True)
    assert warning.startswith("tenants/tenant-foo.yaml: imported.adopt is still true")


def test_the_comment_fits_a_pull_request_comment_whatever_the_fleet() -> None:
    user = f"{STACK}gpu-tenants:slurm:SlurmAccounting$pulumi-python:dynamic/slurm:User::u"
    creates = [
        step("create", f"{user}{i}", None, {"user": f"u{i:04d}" + "x" * 40}) for i in range(120)
    ]
    actions = tuple(actions_of(creates, "tenants/t.yaml"))
    review = Review("main", Touched((), (), ("providers/slurm/client.py",)))
    review.previews = [
        TenantPreview(f"tenant-{i:03d}", "new", "changes", actions) for i in range(60)
    ]
    comment = markdown(review)
    assert len(comment) <= LIMIT
    assert "| tenant-059 | new | 120 | 0 | 0 | 0 |" in comment
    assert "see the review's JSON report" in comment
    small = Review("main", Touched(("tenant-000",), (), ()))
    small.previews = review.previews[:1]
    assert "<details><summary>108 more</summary>" in markdown(small)


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=T", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


def test_a_change_touches_its_specs_and_program_code_touches_every_tenant(tmp_path: Path) -> None:
    project = tmp_path / "repo" / "project"
    (project / "tenants").mkdir(parents=True)
    (project / "providers").mkdir()
    for name in ("tenant-a", "tenant-b", "tenant-c"):
        (project / "tenants" / f"{name}.yaml").write_text(f"slug: {name}\n")
    (project / "providers" / "client.py").write_text("\n")
    (tmp_path / "repo" / "elsewhere.txt").write_text("\n")
    git(tmp_path / "repo", "init", "--quiet", "--initial-branch=main")
    git(tmp_path / "repo", "add", "--all")
    git(tmp_path / "repo", "commit", "--quiet", "--message", "base")
    (project / "tenants" / "tenant-a.yaml").write_text("slug: tenant-a\nchanged: true\n")
    (project / "tenants" / "tenant-b.yaml").unlink()
    (project / "tenants" / "tenant-d.yaml").write_text("slug: tenant-d\n")  # not yet added
    (tmp_path / "repo" / "elsewhere.txt").write_text("changed\n")
    specs = project / "tenants"
    touched = touched_by(specs, project, "main")
    assert touched == Touched(("tenant-a", "tenant-d"), ("tenant-b",), ())
    (project / "providers" / "client.py").write_text("# changed\n")
    assert touched_by(specs, project, "main").program == ("providers/client.py",)


def test_specs_kept_apart_from_the_program_touch_only_themselves(tmp_path: Path) -> None:
    """A repository of specs alone (review --tenants): its specs are what a change touches,
    whatever its folder is called, and nothing in it is the program."""
    specs = tmp_path / "repo" / "clusters-a"
    specs.mkdir(parents=True)
    (specs / "tenant-a.yaml").write_text("slug: tenant-a\n")
    (tmp_path / "repo" / "providers").mkdir()
    (tmp_path / "repo" / "providers" / "notes.md").write_text("\n")
    git(tmp_path / "repo", "init", "--quiet", "--initial-branch=main")
    git(tmp_path / "repo", "add", "--all")
    git(tmp_path / "repo", "commit", "--quiet", "--message", "base")
    (specs / "tenant-a.yaml").write_text("slug: tenant-a\nchanged: true\n")
    (tmp_path / "repo" / "providers" / "notes.md").write_text("changed\n")
    project = tmp_path / "program"
    assert touched_by(specs, project, "main") == Touched(("tenant-a",), (), ())
