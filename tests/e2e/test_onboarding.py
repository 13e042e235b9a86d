"""Onboarding end to end, beyond the happy path (which test_onboarding_layers.py reads back layer
by layer): a node another tenant holds, drift in the backends, a killed `up`, and a tenant on the
shared Weka filesystems."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pulumi import automation as auto

from sandbox.layout import SandboxLayout
from sandbox.project import ROOT
from tests.backends import (
    authentik,
    authentik_user,
    killed_on_leaving,
    kubectl_json,
    labelled,
    mounted,
    owner_and_mode,
    run,
    run_pulumi,
    sacctmgr,
    weka,
    weka_org,
    weka_quotas,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def test_a_node_of_another_tenant_fails_preview_and_changes_nothing(
    stacks: Callable[[str], auto.Stack], project: Path
) -> None:
    stacks("tenant-foo").up()
    spec = project / "tenants" / "tenant-bar.yaml"
    spec.write_text(spec.read_text().replace("gpu-09", "gpu-07"))
    bar = stacks("tenant-bar")
    reservations_before = kubectl_json("get", "reservations")["items"]

    with pytest.raises(auto.errors.CommandError) as failed:
        bar.preview()
    message = str(failed.value)
    assert "reservation.nodes.0: node gpu-07 is already reserved by tenant tenant-foo" in message
    assert "(Reservation tenant-foo-reservation)" in message

    assert kubectl_json("get", "reservations")["items"] == reservations_before
    assert labelled("tenant-bar") == []
    assert (bar.export_stack().deployment or {}).get("resources", []) == []


def test_changes_behind_pulumis_back_are_drift_and_up_restores_them(
    stacks: Callable[[str], auto.Stack], project: Path
) -> None:
    foo = stacks("tenant-foo")
    foo.up()
    bob = authentik_user("bob")
    with authentik() as api:
        api.patch(f"/core/users/{bob['pk']}/", json={"email": "bob@elsewhere.example"})
    run("sacctmgr", "-i", "modify", "account", "tenant-foo", "set", "GrpJobs=5")
    org = weka_org("tenant-foo")
    assert org is not None
    with weka() as api:
        limits = {"ssd_quota": 0, "total_quota": 60 * 10**12}
        assert api.put(f"/organizations/{org['uid']}/limits", json=limits).status_code == 200

    with pytest.raises(auto.errors.CommandError, match="no changes were expected") as drifted:
        foo.preview(refresh=True, expect_no_changes=True)
    # The failed preview names each resource that drifted, as one up would update.
    for drifted_resource in ("tenant-foo-user-bob", "tenant-foo-account", "tenant-foo-org"):
        assert re.search(rf"~ +\S+ {drifted_resource} update", str(drifted.value))
    drift = foo.preview(refresh=True)
    assert drift.change_summary.get(auto.OpType.UPDATE) == 3, drift.stdout

    foo.up(refresh=True)
    assert authentik_user("bob")["email"] == "bob@tenant-foo.example"
    assert sacctmgr("show", "assoc", "account=tenant-foo", "format=GrpJobs") == ["200"]
    assert (weka_org("tenant-foo") or {})["total_quota"] == 55 * 10**12
    foo.preview(refresh=True, expect_no_changes=True)

    # Refresh and destroy work from the state alone: the program is gone and the providers'
    # code has changed since `up` (dynamic providers are pickled by reference to their module).
    (project / "__main__.py").unlink()
    (project / "__main__.py").write_text("raise SystemExit('this program must not run')\n")
    (project / "providers").unlink()
    shutil.copytree(ROOT / "providers", project / "providers")
    for module in (project / "providers").glob("*/provider.py"):
        module.write_text(module.read_text() + "\n\nCHANGED_AFTER_UP = True\n")
    assert foo.refresh().summary.result == "succeeded"
    assert foo.destroy().summary.result == "succeeded"
    assert sacctmgr("show", "assoc", "account=tenant-foo", "format=Account") == []
    assert authentik_user("bob")["is_active"] is False


def _slurm_has_the_account() -> bool:
    return bool(sacctmgr("show", "account", "tenant-foo", "format=Account"))


def _weka_has_the_org() -> bool:
    return weka_org("tenant-foo") is not None


@pytest.mark.parametrize(
    "kill_once",
    [_slurm_has_the_account, _weka_has_the_org],
    ids=["after-slurm-account", "after-weka-org"],
)
def test_an_up_killed_midway_converges_on_the_next_up_without_duplicates(
    project: Path,
    pulumi_backend: dict[str, str],
    sandbox: SandboxLayout,
    kill_once: Callable[[], bool],
) -> None:
    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-foo")
    argv = ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", "tenant-foo"]
    try:
        # Kill the engine and its plugins mid-way through the layers: once Slurm has the
        # account, or once Weka has the organization (whose only mark is its admin's password).
        with killed_on_leaving(argv, project, pulumi_backend, project) as up:
            deadline = time.monotonic() + 120
            while not kill_once():
                assert up.poll() is None, "up finished before it could be killed"
                assert time.monotonic() < deadline, f"{kill_once.__name__} never came true"
                time.sleep(0.1)

        # The operator's recovery: release the dead update's lock; drop the creates it started
        # but never recorded; the next up finds those objects in the backends and adopts them
        # by their ownership marks instead of making them twice.
        run_pulumi(pulumi_backend, project, "cancel", "--yes")
        run_pulumi(pulumi_backend, project, "refresh", "--yes", "--clear-pending-creates")
        run_pulumi(pulumi_backend, project, "up", "--yes", "--skip-preview")
        run_pulumi(pulumi_backend, project, "preview", "--expect-no-changes")

        assert sacctmgr("show", "account", "tenant-foo,ml-team-foo", "format=Account") == [
            "ml-team-foo",
            "tenant-foo",
        ]
        users = sacctmgr("show", "assoc", "account=ml-team-foo", "format=User")
        assert sorted(u for u in users if u) == ["alice", "bob", "carol"]
        with authentik() as api:
            groups = api.get("/core/groups/", params={"name": "tenant-foo"}).json()["results"]
        assert len(groups) == 1
        assert sorted(u["username"] for u in groups[0]["users_obj"]) == ["alice", "bob", "carol"]
        assert labelled("tenant-foo") == [f"gpu-0{i}" for i in range(1, 9)]
        assert len(kubectl_json("get", "reservations")["items"]) == 1
        with weka() as api:
            orgs = [o["name"] for o in api.get("/organizations").json()["data"]]
        assert orgs.count("tenant-foo") == 1
        homes = sorted(p.name for p in mounted("tenant-foo", "tenant-foo-home").iterdir())
        assert homes == ["alice", "bob", "carol"]
    finally:
        run_pulumi(pulumi_backend, project, "destroy", "--yes", "--skip-preview")


def test_tenant_bar_gets_directories_on_the_shared_filesystems(
    stacks: Callable[[str], auto.Stack],
) -> None:
    bar = stacks("tenant-bar")
    assert bar.up().summary.result == "succeeded"

    # pkey isolation (runbook 3d's option): the tenant's partition as its pods' InfiniBand
    # network, which ib-kubernetes joins each pod that names it to.
    network = kubectl_json(
        "-n", "tenant-bar", "get", "network-attachment-definitions", "tenant-bar-ib"
    )
    assert network["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == (
        "nvidia.com/mlnxnics"
    )
    config = json.loads(network["spec"]["config"])
    assert (config["type"], config["pkey"], config["ibKubernetesEnabled"]) == (
        "ib-sriov",
        "0x0102",
        True,
    )

    # Directory isolation (runbook 6b): no organization, the tenant's directories on the
    # platform's shared filesystems, owned by its group, with the home and scratch quotas.
    assert weka_org("tenant-bar") is None
    users = {"dave": 2201, "erin": 2202}
    assert owner_and_mode(mounted("Root", "cluster-home", "tenant-bar")) == (0, 4102, "0750")
    for user, uid in users.items():
        home = mounted("Root", "cluster-home", f"tenant-bar/{user}")
        assert owner_and_mode(home) == (uid, 4102, "0700")
    assert owner_and_mode(mounted("Root", "cluster-scratch", "tenant-bar")) == (0, 4102, "2770")
    with weka() as api:
        home_quotas = weka_quotas(api, "cluster-home")
        scratch_quotas = weka_quotas(api, "cluster-scratch")
    assert {p: q for p, q in home_quotas.items() if p.startswith("/tenant-bar")} == {
        "/tenant-bar": (0, 400 * 10**9, "tenant-bar"),
        **{f"/tenant-bar/{u}": (180 * 10**9, 200 * 10**9, "tenant-bar") for u in users},
    }
    assert scratch_quotas["/tenant-bar"] == (18 * 10**12, 20 * 10**12, "tenant-bar")
    bar.preview(expect_no_changes=True)

    # A rehearsal's destroy takes everything down, data included (a live tenant's directories
    # go only once offboarding has copied them: tests/e2e/test_offboarding.py).
    mounted("Root", "cluster-home", "tenant-bar/erin/notes.txt").write_text("results")
    assert bar.destroy().summary.result == "succeeded"
    assert not mounted("Root", "cluster-home", "tenant-bar").exists()
    assert not mounted("Root", "cluster-scratch", "tenant-bar").exists()
    with weka() as api:
        assert not [p for p in weka_quotas(api, "cluster-home") if p.startswith("/tenant-bar")]
        assert "/tenant-bar" not in weka_quotas(api, "cluster-scratch")
