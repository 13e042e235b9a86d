"""Onboarding part 1 end to end: the real engine drives tenant stacks against the sandbox's real
Kubernetes API, and kubectl reads back what the runbook's steps 1, 3 and 5 leave behind."""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
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
    kubectl_json,
    labelled,
    mounted,
    owner_and_mode,
    plugins_of_killed_engine,
    revealed,
    run,
    run_pulumi,
    sacctmgr,
    weka,
    weka_org,
    weka_quotas,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def test_tenant_foo_up_matches_the_runbook_and_destroy_undoes_it(
    stacks: Callable[[str], auto.Stack],
    pulumi_backend: dict[str, str],
    project: Path,
    sandbox: SandboxLayout,
) -> None:
    foo = stacks("tenant-foo")

    preview = foo.preview()
    assert preview.change_summary == {"create": 47}

    up = foo.up()
    assert up.summary.result == "succeeded"
    assert up.outputs["reserved_nodes"].value == [f"gpu-0{i}" for i in range(1, 9)]
    assert "User           alice" in up.outputs["ssh_config"].value["alice"]

    # Step 1: the operator labelled and tainted exactly the eight nodes before up returned.
    assert labelled("tenant-foo") == [f"gpu-0{i}" for i in range(1, 9)]
    taint = {"key": "reserved.tenant", "value": "tenant-foo", "effect": "NoSchedule"}
    assert taint in kubectl_json("get", "node", "gpu-05")["spec"]["taints"]
    reservation = kubectl_json("get", "reservation", "tenant-foo-reservation")
    assert reservation["spec"]["evictOnRelease"] is False

    # Step 3: the namespace and everything in it.
    labels = kubectl_json("get", "namespace", "tenant-foo")["metadata"]["labels"]
    assert labels["tenant"] == "tenant-foo"
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    quota = kubectl_json("-n", "tenant-foo", "get", "resourcequota", "tenant-foo-quota")
    assert quota["status"]["hard"]["requests.nvidia.com/gpu"] == "64"
    assert quota["status"]["hard"]["limits.memory"] == "10Ti"
    limits = kubectl_json("-n", "tenant-foo", "get", "limitrange", "tenant-foo-defaults")
    assert limits["spec"]["limits"][0]["default"] == {"cpu": "4", "memory": "16Gi"}
    binding = kubectl_json("-n", "tenant-foo", "get", "reservationbinding", "tenant-foo-binding")
    assert binding["spec"]["reservationName"] == "tenant-foo-reservation"
    assert binding["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/managed-by": "tenant-foo"}
    }
    policies = kubectl_json("-n", "tenant-foo", "get", "networkpolicy")["items"]
    assert sorted(p["metadata"]["name"] for p in policies) == [
        "tenant-foo-allow",
        "tenant-foo-deny-all",
    ]
    admins = kubectl_json("-n", "tenant-foo", "get", "rolebinding", "tenant-foo-admins")
    assert admins["subjects"][0]["name"] == "tenant-foo-admins"
    # The runbook's sidebar: the bind Secret must exist in the tenant's namespace, same password.
    copied = kubectl_json("-n", "tenant-foo", "get", "secret", "ldap-bind-creds")["data"]
    assert copied == kubectl_json("-n", "auth", "get", "secret", "ldap-bind-creds")["data"]

    # Step 2: the group under `tenants` and the users, numbers pinned as strings.
    with authentik() as api:
        group = api.get("/core/groups/", params={"name": "tenant-foo"}).json()["results"][0]
        parent = api.get(f"/core/groups/{group['parent']}/").json()
    assert parent["name"] == "tenants"
    assert group["attributes"]["gidNumber"] == "4099"
    assert group["attributes"]["tenant_slug"] == "tenant-foo"
    alice = authentik_user("alice")
    assert alice["attributes"]["uidNumber"] == "2147"
    assert alice["attributes"]["gidNumber"] == "4099"
    assert alice["attributes"]["ssh_keys"].startswith("ssh-ed25519 ")
    assert alice["is_active"] is True
    assert group["pk"] in alice["groups"]
    assert sorted(u["username"] for u in group["users_obj"]) == ["alice", "bob", "carol"]

    # Step 4: Slurm, read back with its own tools.
    assert sacctmgr(
        "show", "assoc", "account=tenant-foo", "format=Account,User,Fairshare,GrpTRES,GrpJobs"
    ) == ["tenant-foo||300|gres/gpu=64|200"]
    users = sacctmgr(
        "show", "assoc", "account=ml-team-foo", "format=User,MaxJobs,GrpTRESMins,DefaultQOS"
    )
    # The first row is the sub-account's own association (no user).
    assert sorted(u for u in users if not u.startswith("|")) == [
        "alice|20|gres/gpu=240000|normal-foo",
        "bob|20|gres/gpu=240000|normal-foo",
        "carol|20|gres/gpu=240000|normal-foo",
    ]
    assert sorted(
        sacctmgr(
            "show",
            "qos",
            "normal-foo,interactive-foo",
            "format=Name,Priority,GrpTRES,MaxWall,Flags,PreemptMode",
        )
    ) == [
        "interactive-foo|200|gres/gpu=8|04:00:00||cluster",  # PreemptMode=OFF, as Slurm stores it
        "normal-foo|100|gres/gpu=64|1-00:00:00|DenyOnLimit|cluster",
    ]
    # Runbook 4d: the line went into the Slurm operator's ConfigMap, then reached slurmctld.
    configmap = kubectl_json("-n", "slurm-control", "get", "configmap", "slurm-partitions")
    assert "PartitionName=tenant-foo Nodes=gpu-[01-08]" in configmap["data"]["partitions.conf"]
    partition = run("scontrol", "show", "partition", "tenant-foo")
    for field in (
        "Nodes=gpu-[01-08]",
        "AllowAccounts=tenant-foo",
        "MaxTime=1-00:00:00",
        "OverSubscribe=EXCLUSIVE",
    ):
        assert field in partition

    # Step 6: the Weka organization and what Kubernetes gets of it.
    org = weka_org("tenant-foo")
    assert org is not None
    assert org["total_quota"] == 55 * 10**12
    csi = kubectl_json("-n", "tenant-foo", "get", "secret", "weka-tenant-foo-creds")["data"]
    assert sorted(csi) == [
        "caCertificate",
        "endpoints",
        "organization",
        "password",
        "scheme",
        "username",
    ]
    storage_class = kubectl_json("get", "storageclass", "weka-tenant-foo")
    assert storage_class["provisioner"] == "csi.weka.io"
    assert storage_class["reclaimPolicy"] == "Retain"
    params = storage_class["parameters"]
    assert params["csi.storage.k8s.io/provisioner-secret-name"] == "weka-tenant-foo-creds"
    assert params["filesystemName"] == "tenant-foo-scratch"
    pvc = kubectl_json("-n", "tenant-foo", "get", "pvc", "training-scratch")
    assert pvc["spec"]["storageClassName"] == "weka-tenant-foo"

    # Step 4e: each user's home is a directory of the tenant's home filesystem, made through the
    # mount with the user's pinned numbers, each with its quota; scratch has the tenant's quota.
    assert owner_and_mode(mounted("tenant-foo", "tenant-foo-home")) == (0, 4099, "0750")
    for user, uid in (("alice", 2147), ("bob", 2148), ("carol", 2149)):
        home = mounted("tenant-foo", "tenant-foo-home", user)
        assert owner_and_mode(home) == (uid, 4099, "0700")
    scratch = mounted("tenant-foo", "tenant-foo-scratch", "tenant-foo")
    assert owner_and_mode(scratch) == (0, 4099, "2770")
    org_resource = next(
        r
        for r in (foo.export_stack().deployment or {})["resources"]
        if r["type"] == "pulumi-python:dynamic/weka:Organization"
    )
    org_admin = (
        "tenant-foo",
        org_resource["outputs"]["admin_username"],
        revealed(org_resource["outputs"]["admin_password"]),
    )
    with weka(org_admin) as api:
        assert weka_quotas(api, "tenant-foo-home") == {
            f"/{user}": (90 * 10**9, 100 * 10**9, "tenant-foo")
            for user in ("alice", "bob", "carol")
        }
        assert weka_quotas(api, "tenant-foo-scratch") == {
            "/tenant-foo": (45 * 10**12, 50 * 10**12, "tenant-foo")
        }

    # Step 5: the login release and the keys it mounts.
    keys = kubectl_json("-n", "tenant-foo", "get", "secret", "tenant-foo-authorized-keys")
    assert sorted(keys["data"]) == ["alice", "bob", "carol"]
    release = kubectl_json("-n", "tenant-foo", "get", "helmrelease", "login-tenant-foo")
    values = release["spec"]["values"]
    assert values["ldap"]["bindPasswordSecret"] == "ldap-bind-creds"
    assert values["sshKeysSecret"] == "tenant-foo-authorized-keys"
    annotations = values["service"]["annotations"]
    assert annotations["external-dns.alpha.kubernetes.io/hostname"] == (
        "login.tenant-foo.example.internal"
    )

    # No secret is in the state in clear: the backends' credentials, the LDAP bind password the
    # stack copied, and the passwords it generated for Weka's org admin and CSI user. (The
    # Automation API's export_stack shows secrets, so read what the backend stores, and what
    # `pulumi stack export` prints.)
    backend = Path(pulumi_backend["PULUMI_BACKEND_URL"].removeprefix("file://"))
    state = "".join(f.read_text() for f in backend.rglob("*.json"))
    state += run_pulumi(pulumi_backend, project, "stack", "export", "--stack", "tenant-foo")
    secrets = {
        "authentik token": Path(os.environ["AUTHENTIK_TOKEN_FILE"]).read_text().strip(),
        "weka admin password": Path(os.environ["WEKA_PASSWORD_FILE"]).read_text().strip(),
        "ldap bind password": base64.b64decode(copied["password"]).decode(),
        "weka csi password": base64.b64decode(csi["password"]).decode(),
    }
    # ...nor in what the engine printed (the providers' logs come through it), nor in the logs
    # the sandbox's emulators wrote.
    printed = preview.stdout + preview.stderr + up.stdout + up.stderr
    logs = "".join(
        f.read_text(errors="replace") for f in (sandbox.root / "logs").glob("*-emulator.log")
    )
    for what, value in secrets.items():
        assert len(value) >= 8, what
        assert value not in state, f"the {what} is in the state in clear"
        assert value not in printed, f"the {what} was printed"
        assert value not in logs, f"the {what} is in an emulator's log"

    # Nothing drifted: a second preview plans nothing (the run fails otherwise).
    foo.preview(expect_no_changes=True)

    destroy = foo.destroy()
    assert destroy.summary.result == "succeeded"
    assert labelled("tenant-foo") == []
    assert sacctmgr("show", "assoc", "account=tenant-foo", "format=Account") == []
    assert sacctmgr("show", "qos", "normal-foo", "format=Name") == []
    assert (
        "not found"
        in subprocess.run(
            ["scontrol", "show", "partition", "tenant-foo"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    )
    assert weka_org("tenant-foo") is None
    # Identity is revoked, never hard-deleted: the users stay, disabled and out of the group.
    alice = authentik_user("alice")
    assert alice["is_active"] is False
    assert alice["groups"] == []
    with authentik() as api:
        assert api.get("/core/groups/", params={"name": "tenant-foo"}).json()["results"] == []
    node = kubectl_json("get", "node", "gpu-05")
    assert "reserved.tenant" not in node["metadata"]["labels"]
    assert not [t for t in node["spec"].get("taints") or [] if t["key"] == "reserved.tenant"]
    gone = subprocess.run(
        ["kubectl", "get", "namespace", "tenant-foo"], capture_output=True, text=True, check=False
    )
    assert "NotFound" in gone.stderr


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
    env = {**os.environ, **pulumi_backend}
    up = subprocess.Popen(
        ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", "tenant-foo"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # Kill the engine and its plugins mid-way through the layers: once Slurm has the
        # account, or once Weka has the organization (whose only mark is its admin's password).
        deadline = time.monotonic() + 120
        while not kill_once():
            assert up.poll() is None, "up finished before it could be killed"
            assert time.monotonic() < deadline, f"{kill_once.__name__} never came true"
            time.sleep(0.1)
        os.killpg(up.pid, signal.SIGKILL)
        up.wait()
        # The engine starts each plugin in a process group of its own, and hands each its address.
        # Our language host stops once the engine is gone; the other plugins may not: end them.
        for pid in plugins_of_killed_engine(project):
            os.kill(pid, signal.SIGKILL)

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
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
        run_pulumi(pulumi_backend, project, "destroy", "--yes", "--skip-preview")


def test_tenant_bar_gets_directories_on_the_shared_filesystems_and_destroy_guards_their_data(
    stacks: Callable[[str], auto.Stack],
) -> None:
    bar = stacks("tenant-bar")
    assert bar.up().summary.result == "succeeded"

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

    # Destroy will not delete a directory that still holds the tenant's data...
    notes = mounted("Root", "cluster-home", "tenant-bar/erin/notes.txt")
    notes.write_text("results")
    with pytest.raises(auto.errors.CommandError) as refused:
        bar.destroy()
    message = str(refused.value)
    assert "deleting the Weka directory /tenant-bar/erin of filesystem 'cluster-home'" in message
    assert "refused: it holds the tenant's data" in message
    assert notes.read_text() == "results"
    # ...and goes on once offboarding has taken the data away.
    notes.unlink()
    assert bar.destroy().summary.result == "succeeded"
    assert not mounted("Root", "cluster-home", "tenant-bar").exists()
    assert not mounted("Root", "cluster-scratch", "tenant-bar").exists()
    with weka() as api:
        assert not [p for p in weka_quotas(api, "cluster-home") if p.startswith("/tenant-bar")]
        assert "/tenant-bar" not in weka_quotas(api, "cluster-scratch")
