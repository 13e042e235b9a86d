"""`diagnose` and `status` on the tests' sandbox: tenant-diag (tenant-bar's spec under names and
numbers no other test uses, so that its Slurm history holds no job) onboarded and healthy reports
no problem and Ready; then each failure of the runbooks' sidebars is made by hand, the way an
operator's mistake or a controller's failure makes it, and `diagnose` names that failure alone,
with its cause and fix; the fix (by hand, or `pulumi up --refresh`) makes it healthy again. The
namespace stuck in Terminating comes last: it takes the namespace down."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import (
    allow_rehearsal,
    authentik,
    authentik_user,
    file_backend,
    operator_command,
    run,
    run_pulumi,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG = "tenant-diag"
# tenant-bar's spec made tenant-diag's: its slug, users and numbers renamed.
RENAMED = {"tenant-bar": SLUG, "dave": "diana", "erin": "dinah", "2201": "2301", "2202": "2302",
           "4102": "4302", "4103": "4303"}  # fmt: skip
ADMIN = "diana"
LOGIN_POD = f"login-{SLUG}-0"
HOLD = "tests.example.io/hold"
RUNNING_POD = Path(__file__).resolve().parent / "tenant_job_pod.yaml"


@dataclass
class Bar:
    project: Path
    env: dict[str, str]

    def diagnose(self, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
        said = operator_command(
            "diagnose", SLUG, "--json", "--project", self.project, env={**self.env, **(env or {})}
        )
        assert said.returncode in (0, 1), said.stderr
        findings: list[dict[str, Any]] = json.loads(said.stdout)["findings"]
        assert said.returncode == (1 if findings else 0)
        return findings

    def status(self, env: dict[str, str] | None = None) -> dict[str, Any]:
        said = operator_command(
            "status", SLUG, "--json", "--project", self.project, env={**self.env, **(env or {})}
        )
        assert said.returncode in (0, 1), said.stderr
        report: dict[str, Any] = json.loads(said.stdout)["tenants"][0]
        return report

    def edit(self, **lifecycle: Any) -> None:
        path = self.project / "tenants" / f"{SLUG}.yaml"
        spec = yaml.safe_load(path.read_text())
        spec["lifecycle"].update(lifecycle)
        path.write_text(yaml.safe_dump(spec, sort_keys=False))

    def back_to_active(self) -> None:
        """A rehearsal again, at stage active: the one way back from an offboarding stage."""
        allow_rehearsal(SLUG)
        self.edit(rehearsal=True, stage="active", no_jobs=False)
        self.up()

    def up(self) -> None:
        run_pulumi(self.env, self.project, "up", "--refresh", "--yes", "--skip-preview",
                   "--stack", SLUG, timeout=600)  # fmt: skip


def kubectl(*args: str) -> str:
    return run("kubectl", *args)


@pytest.fixture(scope="module")
def bar(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Bar]:
    work = tmp_path_factory.mktemp("diagnose")
    tenant = Bar(
        project_copy(work / "project", rehearsals=("tenant-bar",)), file_backend(work / "backend")
    )
    specs = tenant.project / "tenants"
    spec = (specs / "tenant-bar.yaml").read_text()
    for old, new in RENAMED.items():
        spec = spec.replace(old, new)
    (specs / f"{SLUG}.yaml").write_text(spec)
    (specs / "tenant-bar.yaml").unlink()
    run_pulumi(tenant.env, tenant.project, "stack", "init", SLUG)
    tenant.up()
    yield tenant
    # A test that failed past stage active leaves a stage the gate will not destroy from.
    spec = yaml.safe_load((specs / f"{SLUG}.yaml").read_text())
    if spec["lifecycle"].get("stage", "active") != "active":
        tenant.back_to_active()
    # The last test leaves the namespace terminating on a finalizer of its own: let it go.
    for name in kubectl("-n", SLUG, "get", "configmaps", "-o", "name").split():
        kubectl("-n", SLUG, "patch", name, "--type", "merge", "-p",
                '{"metadata":{"finalizers":null}}')  # fmt: skip
    run_pulumi(tenant.env, tenant.project, "destroy", "--yes", "--skip-preview", "--stack", SLUG,
               timeout=600)  # fmt: skip


def only(findings: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(findings) == 1, json.dumps(findings, indent=1)
    return findings[0]


def test_a_healthy_tenant_has_no_problem_and_is_ready(bar: Bar) -> None:
    assert bar.diagnose() == []
    report = bar.status()
    assert report["ready"] is True
    assert [(c["type"], c["status"]) for c in report["conditions"]] == [
        ("Ready", "True"),
        ("CapacityReservationReady", "True"),
        ("IdentityGroupReady", "True"),
        ("TenantNamespaceReady", "True"),
        ("SlurmAccountingReady", "True"),
        ("WekaStorageReady", "True"),
        ("LoginPodReady", "True"),
        ("NotOversubscribed", "True"),
    ]
    assert report["gpu_usage"]["scopes"] == [
        {"scope": "tenant", "slurm": 0, "kubernetes": 0, "cap": 32, "cap_from": "contract.gpus",
         "used": 0, "over": False}
    ]  # fmt: skip
    assert (report["stage"], report["next_stage"]) == ("active", "frozen")
    assert report["blockers"] == ["a reviewed pull request setting lifecycle.stage: frozen"]


def test_a_reservation_that_evicts_on_release(bar: Bar) -> None:
    kubectl("patch", "reservation", f"{SLUG}-reservation", "--type", "merge",
            "-p", '{"spec":{"evictOnRelease":true}}')  # fmt: skip
    found = only(bar.diagnose())
    assert found["check"] == "reservation-evicts-on-release"
    assert "kill the tenant's running jobs" in found["cause"]
    assert '"evictOnRelease":false' in found["fix"]
    report = bar.status()
    assert report["ready"] is False
    assert report["conditions"][1] == {
        "type": "CapacityReservationReady",
        "status": "False",
        "reason": "ReservationEvictsOnRelease",
        "message": found["cause"],
    }
    bar.up()
    assert bar.diagnose() == []


def test_a_binding_that_misses_the_workloads(bar: Bar) -> None:
    wrong = [{"op": "replace", "path": "/spec/podSelector/matchLabels",
              "value": {"app.kubernetes.io/name": "sunk"}}]  # fmt: skip
    kubectl("-n", SLUG, "patch", "reservationbinding", f"{SLUG}-binding", "--type", "json",
            "-p", json.dumps(wrong))  # fmt: skip
    found = only(bar.diagnose())
    assert found["check"] == "binding-misses-workloads"
    assert "app.kubernetes.io/name" in found["evidence"]
    assert found["fix"] == f"pulumi up --refresh --stack {SLUG}"
    bar.up()
    assert bar.diagnose() == []


def test_the_ldap_bind_secret_missing_from_the_tenant_namespace(bar: Bar) -> None:
    kubectl("-n", SLUG, "delete", "secret", "ldap-bind-creds")
    found = only(bar.diagnose())
    assert found["check"] == "ldap-bind-secret-missing"
    assert "not from auth" in found["cause"]
    bar.up()
    assert bar.diagnose() == []


def test_empty_authorized_keys(bar: Bar) -> None:
    empty = [{"op": "replace", "path": f"/data/{ADMIN}", "value": ""}]
    kubectl("-n", SLUG, "patch", "secret", f"{SLUG}-authorized-keys", "--type", "json",
            "-p", json.dumps(empty))  # fmt: skip
    found = only(bar.diagnose())
    assert found["check"] == "authorized-keys-empty"
    assert f"no key for {ADMIN}" in found["evidence"]
    bar.up()
    assert bar.diagnose() == []


def test_a_login_pod_that_no_node_takes(bar: Bar) -> None:
    # Runbook 5a's failure: the release's pod gone and no node to run it again (a node lost).
    pod = f"login-{SLUG}-0"
    kubectl("cordon", "cpu-01")
    try:
        kubectl("-n", SLUG, "delete", "pod", pod, "--wait=true")
        found = only(bar.diagnose())
        assert (found["check"], found["layer"]) == ("login-pods-not-ready", "LoginPod")
        assert found["evidence"].startswith(
            f"login release {SLUG}/login-{SLUG}: 0 of 1 pods ready ({pod} "
        ), found["evidence"]
        conditions = {c["type"]: c["status"] for c in bar.status()["conditions"]}
        assert conditions["LoginPodReady"] == "False"
    finally:
        kubectl("uncordon", "cpu-01")
    kubectl("-n", SLUG, "wait", "--for=condition=Ready", f"pod/{pod}", "--timeout=120s")
    assert bar.diagnose() == []


def test_a_partition_maxtime_shorter_than_the_contract(bar: Bar) -> None:
    run("scontrol", "update", f"PartitionName={SLUG}", "MaxTime=1-00:00:00")
    found = only(bar.diagnose())
    assert found["check"] == "partition-maxtime-short"
    assert "MaxTime=1-00:00:00; the contract's wall limit is UNLIMITED" in found["evidence"]
    bar.up()
    assert bar.diagnose() == []


def test_a_node_keeping_the_tenant_taint_without_a_reservation(bar: Bar) -> None:
    kubectl("label", "node", "gpu-16", f"reserved.tenant={SLUG}")
    kubectl("taint", "node", "gpu-16", f"reserved.tenant={SLUG}:NoSchedule")
    found = only(bar.diagnose())
    assert found["check"] == "nodes-keep-tenant-taint"
    assert found["evidence"].startswith(f"nodes gpu-16 carry reserved.tenant={SLUG}")
    subprocess.run(["bash", "-c", found["fix"]], check=True, capture_output=True)
    assert bar.diagnose() == []


def test_admins_without_their_rights(bar: Bar) -> None:
    kubectl("-n", SLUG, "delete", "rolebinding", f"{SLUG}-tenant-admins")
    found = only(bar.diagnose())
    assert found["check"] == "admins-lack-rights"
    assert f"--as={ADMIN} --as-group={SLUG}-admins" in found["evidence"]
    assert "no for create deployments.apps, delete pods, get secrets" in found["evidence"]
    bar.up()
    assert bar.diagnose() == []


def test_a_uid_that_differs_between_ldap_and_the_spec(bar: Bar) -> None:
    user = authentik_user(ADMIN)
    with authentik() as api:
        attributes = {**user["attributes"], "uidNumber": "2999"}
        api.patch(f"/core/users/{user['pk']}/", json={"attributes": attributes})
    # Both views: Authentik's number, and the login pod's, which nslcd read from the outpost.
    assert sorted((f["check"], f["layer"], f["evidence"]) for f in bar.diagnose()) == [
        ("uid-mismatch", "IdentityGroup",
         f"Authentik user {ADMIN} has uidNumber 2999; users.0.uid is 2301"),
        ("uid-mismatch", "LoginPod", f"login pod {LOGIN_POD} resolves user {ADMIN} as uid 2999 "
         "(getent passwd); users.0.uid is 2301"),
    ]  # fmt: skip
    bar.up()
    assert bar.diagnose() == []


def test_a_deleted_user_a_group_number_that_differs_and_a_deleted_slurm_account(
    bar: Bar,
) -> None:
    """Each once read Ready: a user not found was taken for one not made yet, no gid was
    compared, and no Slurm account was looked up."""
    with authentik() as api:
        api.delete(f"/core/users/{authentik_user('dinah')['pk']}/").raise_for_status()
        (group,) = api.get("/core/groups/", params={"name": SLUG}).json()["results"]
        attributes = {**group["attributes"], "gidNumber": "4999"}
        api.patch(f"/core/groups/{group['pk']}/", json={"attributes": attributes})
    # Slurm keeps an account that is a user's default: its users go first, as by hand.
    run("sacctmgr", "-i", "delete", "user", "diana,dinah")
    run("sacctmgr", "-i", "delete", "account", SLUG)
    found = bar.diagnose()
    findings = {f["check"]: f for f in found}
    identity = [(f["check"], f["evidence"]) for f in found if f["check"] != "slurm-account-missing"]
    # Both views of each: Authentik's, and the login pod's, which nslcd read from the outpost.
    assert sorted(identity) == [
        ("gid-mismatch", f"Authentik group {SLUG} has gidNumber 4999; identity.gid is 4302"),
        ("gid-mismatch", f"login pod {LOGIN_POD} resolves group {SLUG} as gid 4999 "
         "(getent group); identity.gid is 4302"),
        ("identity-missing", "Authentik has no user dinah"),
        ("identity-missing", f"login pod {LOGIN_POD} resolves no user dinah (getent)"),
    ]  # fmt: skip
    assert findings["slurm-account-missing"]["evidence"].startswith(
        f"`sacctmgr show account {SLUG}`: not found on cluster"
    )
    conditions = {c["type"]: c for c in bar.status()["conditions"]}
    assert conditions["IdentityGroupReady"]["reason"] == "IdentityMissing"
    assert conditions["SlurmAccountingReady"]["reason"] == "SlurmAccountMissing"
    bar.up()
    assert bar.diagnose() == []


def test_a_workload_the_binding_does_not_select(bar: Bar, tmp_path: Path) -> None:
    pod = yaml.safe_load(RUNNING_POD.read_text())
    pod["metadata"] = {"name": "unlabelled-job"}
    # One that has run and finished holds no node: not a finding.
    # (The tools image has no `true`.)
    container = {**pod["spec"]["containers"][0], "command": ["sleep", "0"]}
    spec = {**pod["spec"], "restartPolicy": "Never", "containers": [container]}
    done = {**pod, "metadata": {"name": "unlabelled-done"}, "spec": spec}
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([pod, done]))
    kubectl("-n", SLUG, "create", "-f", str(tmp_path / "pods.yaml"))
    kubectl("-n", SLUG, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/unlabelled-done",
            "--timeout=50s")  # fmt: skip
    found = only(bar.diagnose())
    assert found["check"] == "workloads-outside-binding"
    assert found["evidence"] == (
        f"pods unlabelled-job in {SLUG} lack app.kubernetes.io/managed-by={SLUG}, which "
        f"reservationbinding {SLUG}-binding selects"
    )
    kubectl("-n", SLUG, "delete", "pod", "unlabelled-job", "unlabelled-done", "--grace-period=0",
            "--force")  # fmt: skip
    assert bar.diagnose() == []


def test_a_backend_that_does_not_answer_is_one_finding(bar: Bar) -> None:
    down = {"AUTHENTIK_URL": "http://127.0.0.1:9", "AUTHENTIK_MAX_ATTEMPTS": "1"}
    found = only(bar.diagnose(down))
    assert (found["check"], found["layer"]) == ("backend-unreachable", "IdentityGroup")
    # One that answers and refuses the token is a matter of rights, and says so.
    refused = only(bar.diagnose({"AUTHENTIK_TOKEN": "not-a-token"}))
    assert (refused["check"], refused["layer"]) == ("backend-refused", "IdentityGroup")
    assert "HTTP 403" in refused["evidence"]
    assert "not-a-token" not in json.dumps(refused)
    report = bar.status(down)
    conditions = {c["type"]: c["status"] for c in report["conditions"]}
    assert conditions["IdentityGroupReady"] == "Unknown"
    assert conditions["Ready"] == "Unknown"
    assert [t for t, s in conditions.items() if s != "True"] == ["Ready", "IdentityGroupReady"]


def test_an_empty_billing_export_before_stage_archived(bar: Bar) -> None:
    """The tenant never ran a job: once drained, its export would be empty, which stage
    archived refuses (runbook 3b); a rehearsal expects that, so this one is not."""
    bar.edit(rehearsal=False, stage="frozen")
    bar.up()
    report = bar.status()
    assert (report["stage"], report["next_stage"]) == ("frozen", "drained")
    assert report["blockers"] == ["a reviewed pull request setting lifecycle.stage: drained"]
    assert bar.diagnose() == []

    bar.edit(stage="drained")
    bar.up()
    found = only(bar.diagnose())
    assert found["check"] == "empty-sacct-export"
    assert found["evidence"] == (
        f"`sacct -X --allusers --accounts={SLUG} --starttime=1970-01-01`: no job"
    )
    assert "lifecycle.no_jobs: true" in found["fix"]
    report = bar.status()
    assert report["ready"] is True  # a blocker of the next stage, not a layer's failure
    assert report["blockers"] == [
        f"empty-sacct-export: {found['evidence']} (diagnose says the fix)",
        "a reviewed pull request setting lifecycle.stage: archived",
    ]
    # The change ticket says the tenant ran no job: the spec says so too.
    bar.edit(no_jobs=True)
    assert bar.diagnose() == []
    bar.back_to_active()
    assert bar.status()["blockers"] == ["a reviewed pull request setting lifecycle.stage: frozen"]


def test_a_namespace_stuck_terminating_on_a_finalizer(bar: Bar) -> None:
    held = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "held", "namespace": SLUG, "finalizers": [HOLD]}}  # fmt: skip
    subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(held), text=True,
                   check=True, capture_output=True)  # fmt: skip
    kubectl("delete", "namespace", SLUG, "--wait=false")
    # The namespace controller says what holds it once it has deleted everything else.
    findings: list[dict[str, Any]] = []

    def held_by_the_finalizer() -> bool:
        findings[:] = bar.diagnose()
        return any(HOLD in f["evidence"] for f in findings)

    wait_for("the namespace controller to name the finalizer", held_by_the_finalizer, 60)
    found = only(findings)
    assert found["check"] == "namespace-stuck-terminating"
    assert "finalizer" in found["cause"]
