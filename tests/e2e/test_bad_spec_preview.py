"""A bad spec fails `pulumi preview` with the field path and no Python traceback, nothing
declared: one that YAML itself cannot build, and one that breaks a rule across tenants (which
`check` reports too, naming both specs and both fields)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.project import project_copy
from tests.backends import operator_command, pulumi, run_pulumi

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize(
    ("written", "reported"),
    [
        (
            "end: 2027-02-29",
            "contract.term.end: '2027-02-29' (line 11) is not a valid date: "
            "day is out of range for month",
        ),
        ("end: 2027-13-01", "contract.term.end: '2027-13-01' (line 11) is not a valid date"),
    ],
)
def test_preview_names_an_impossible_date_at_its_field(
    tmp_path: Path, pulumi_backend: dict[str, str], written: str, reported: str
) -> None:
    project = project_copy(tmp_path / "project")
    spec = project / "tenants" / "tenant-foo.yaml"
    spec.write_text(spec.read_text().replace("end: 2028-01-04", written))
    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-foo")
    preview = pulumi(pulumi_backend, project, "preview", "--stack", "tenant-foo")
    printed = preview.stdout + preview.stderr
    assert preview.returncode != 0
    assert f"{spec}: {reported}" in printed, printed
    assert "Traceback" not in printed
    assert "ValueError" not in printed


@pytest.mark.sandbox
@pytest.mark.usefixtures("sandbox")
def test_preview_refuses_a_collision_with_another_tenant_and_only_warns_of_a_broken_one(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    project = project_copy(tmp_path / "project")
    tenants = project / "tenants"
    (tenants / "tenant-baz.yaml").write_text("slug: tenant-baz\n")  # another tenant's bad file
    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-foo")
    warned = run_pulumi(pulumi_backend, project, "preview", "--stack", "tenant-foo")
    assert "the rules across tenants skip tenant-baz.yaml, which does not load" in warned

    bar = tenants / "tenant-bar.yaml"
    bar.write_text(bar.read_text().replace("uid: 2202", "uid: 2148"))  # bob's, in tenant-foo
    refused = pulumi(pulumi_backend, project, "preview", "--stack", "tenant-foo")
    printed = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert (
        f"{tenants / 'tenant-foo.yaml'}: users.1.uid: uid 2148 is claimed by both tenants; pin "
        "another in one of them (with tenant-bar.yaml users.1.uid)"
    ) in printed, printed
    assert "Traceback" not in printed


@pytest.mark.sandbox
@pytest.mark.usefixtures("sandbox")
def test_preview_refuses_a_new_tenant_whose_filesystems_weka_cannot_hold(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    """Onboarding's storage check: the sandbox's Weka has 2 PB in all, so an organization of
    3 PB of scratch is refused before anything is made, naming the figures."""
    project = project_copy(tmp_path / "project")
    tenants = project / "tenants"
    # tenant-foo's spec under another name (its teams and hostname follow the slug).
    spec = yaml.safe_load((tenants / "tenant-foo.yaml").read_text().replace("foo", "vast"))
    spec["storage"]["scratch"] = {"soft": "2900TB", "hard": "3PB"}
    (tenants / "tenant-vast.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (tenants / "tenant-foo.yaml").unlink()  # the same users: a collision beside the point here
    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-vast")
    refused = pulumi(pulumi_backend, project, "preview", "--stack", "tenant-vast")
    printed = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert (
        f"{tenants / 'tenant-vast.yaml'}: storage: the tenant's filesystems (5.0 TB home + "
        "3.0 PB scratch) with the platform's 20% headroom need 3.6 PB, and Weka has "
    ) in printed, printed
    assert "Free capacity on Weka first" in printed
    assert "Traceback" not in printed


def _usernames(spec: dict[str, Any]) -> None:
    spec["users"][1]["username"] = "alice"  # erin, renamed to tenant-foo's alice


def _uids(spec: dict[str, Any]) -> None:
    spec["users"][1]["uid"] = 2148  # bob's, in tenant-foo


def _gids(spec: dict[str, Any]) -> None:
    spec["identity"]["gid"] = 4099  # tenant-foo's group


def _uid_gid(spec: dict[str, Any]) -> None:
    spec["users"][0]["uid"] = 4099  # tenant-foo's group's gid


def _nodes(spec: dict[str, Any]) -> None:
    spec["reservation"]["nodes"] = ["gpu-09", "gpu-10", "gpu-11", "gpu-08"]  # gpu-08: foo's


def _gpus(spec: dict[str, Any]) -> None:
    # tenant-foo holds 64 of the pool's 144 GPUs; 96 more on demand oversell it.
    spec["reservation"]["nodes"] = []
    spec["contract"].update(gpus=96, partition_type="on-demand")


@pytest.mark.sandbox
@pytest.mark.usefixtures("sandbox")
@pytest.mark.parametrize(
    ("collide", "rule", "bar_field", "foo_field"),
    [
        (_usernames, "usernames", "users.1.username", "users.0.username"),
        (_uids, "uids", "users.1.uid", "users.1.uid"),
        (_gids, "gids", "identity.gid", "identity.gid"),
        (_uid_gid, "uid-gid", "users.0.uid", "identity.gid"),
        (_nodes, "nodes", "reservation.nodes.3", "reservation.nodes.7"),
        (_gpus, "gpus", "contract.gpus", "contract.gpus"),
    ],
)
def test_each_rule_across_tenants_is_reported_by_check_and_by_the_stacks_preview(
    tmp_path: Path,
    pulumi_backend: dict[str, str],
    collide: Callable[[dict[str, Any]], None],
    rule: str,
    bar_field: str,
    foo_field: str,
) -> None:
    project = project_copy(tmp_path / "project")
    bar = project / "tenants" / "tenant-bar.yaml"
    spec = yaml.safe_load(bar.read_text())
    collide(spec)
    bar.write_text(yaml.safe_dump(spec, sort_keys=False))

    checked = operator_command("check", "--json", "--tenants", project / "tenants")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    [collision] = json.loads(checked.stdout)["collisions"]
    assert collision["rule"] == rule
    places = {(place["spec"], place["field"]) for place in collision["places"]}
    assert places == {("tenant-bar.yaml", bar_field), ("tenant-foo.yaml", foo_field)}

    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-bar")
    refused = pulumi(pulumi_backend, project, "preview", "--stack", "tenant-bar")
    printed = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert f"{bar}: {bar_field}: " in printed, printed
    assert f"(with tenant-foo.yaml {foo_field})" in printed, printed
