"""The node preflight of runbook step 1: nodes as `kubectl get nodes -o json` returns them, every
reason to refuse one (located at its `reservation.nodes.<index>`), the warnings for nodes the
tenant already holds, and reading the nodes through a stand-in kubectl."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from providers.authentik.client import Group, User
from providers.errors import KubernetesError
from providers.weka.records import Capacity
from tenant_stack.errors import Problem
from tenant_stack.live import ClaimState, LiveCluster, NodeState, quantity_bytes, read_cluster
from tenant_stack.platform import Platform, load_platform
from tenant_stack.preflight import (
    Findings,
    WantedClaim,
    check_capacity,
    check_claims,
    check_directory,
    check_legal_hold,
    check_namespace,
    check_nodes,
    check_rehearsal,
    check_stage,
)
from tenant_stack.spec import load_spec
from tenant_stack.spec.models import Found, Stage, TenantSpec
from tests.conftest import ROOT

TENANT = "tenant-foo"
SKU = "h100-8x"
POOL = "gpu-h100-rack-a"
WANTED = ["gpu-01", "gpu-02", "gpu-03"]


def node_json(
    name: str,
    *,
    ready: str | None = "True",
    unschedulable: bool = False,
    instance_type: str | None = SKU,
    pool: str | None = POOL,
    tenant: str | None = None,
    reservation: str | None = None,
) -> dict[str, Any]:
    """One item of `kubectl get nodes -o json`, trimmed to what the preflight and its neighbours
    show; `ready=None` leaves out the Ready condition (a node that never reported)."""
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "nvidia.com/gpu.count": "8",
    }
    if instance_type is not None:
        labels["node.kubernetes.io/instance-type"] = instance_type
    if pool is not None:
        labels["hardware-pool"] = pool
    if tenant is not None:
        labels["reserved.tenant"] = tenant
    annotations = {"node.alpha.kubernetes.io/ttl": "0"}
    if reservation is not None:
        annotations["scheduling.example.io/reservation"] = reservation
    conditions = [
        {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
        {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
    ]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready, "reason": "KubeletReady"})
    spec: dict[str, Any] = {"podCIDR": "10.42.1.0/24"}
    if unschedulable:
        spec["unschedulable"] = True
        spec["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
        "status": {"conditions": conditions, "nodeInfo": {"kubeletVersion": "v1.30.4+rke2r1"}},
    }


def healthy(*names: str) -> list[NodeState]:
    return [NodeState.from_api(node_json(name)) for name in names]


def check(live: list[NodeState], wanted: list[str] = WANTED) -> Findings:
    return check_nodes(TENANT, SKU, POOL, wanted, live)


def only_refusal(findings: Findings) -> Problem:
    assert findings.warnings == []
    assert len(findings.refusals) == 1, findings.refusals
    return findings.refusals[0]


# --- NodeState.from_api --------------------------------------------------------------------------


def test_from_api_reads_a_free_healthy_node() -> None:
    assert NodeState.from_api(node_json("gpu-01")) == NodeState(
        name="gpu-01",
        ready=True,
        cordoned=False,
        instance_type=SKU,
        pool=POOL,
        reserved_by=None,
        reservation=None,
    )


def test_from_api_reads_a_held_cordoned_notready_node() -> None:
    node = NodeState.from_api(
        node_json(
            "gpu-09",
            ready="False",
            unschedulable=True,
            tenant="tenant-bar",
            reservation="tenant-bar-reservation",
        )
    )
    assert (node.ready, node.cordoned) == (False, True)
    assert (node.reserved_by, node.reservation) == ("tenant-bar", "tenant-bar-reservation")


@pytest.mark.parametrize("ready", ["False", "Unknown", None])
def test_only_a_true_ready_condition_is_ready(ready: str | None) -> None:
    assert not NodeState.from_api(node_json("gpu-01", ready=ready)).ready


def test_from_api_takes_a_bare_node() -> None:
    node = NodeState.from_api({"metadata": {"name": "gpu-01"}})
    assert node == NodeState("gpu-01", False, False, None, None, None, None)


# --- check_nodes ---------------------------------------------------------------------------------


def test_free_healthy_nodes_of_the_right_sku_and_pool_pass() -> None:
    assert check(healthy("gpu-01", "gpu-02", "gpu-03", "gpu-04")) == Findings([], [])


def test_nodes_already_ours_and_healthy_pass() -> None:
    live = [
        NodeState.from_api(node_json(n, tenant=TENANT, reservation="tenant-foo-reservation"))
        for n in WANTED
    ]
    assert check(live) == Findings([], [])


def test_a_missing_node_is_refused_at_its_index() -> None:
    refusal = only_refusal(check(healthy("gpu-01", "gpu-03")))
    assert refusal == Problem("reservation.nodes.1", "node gpu-02 does not exist in the cluster")


def test_a_notready_node_is_refused() -> None:
    live = [*healthy("gpu-01", "gpu-02"), NodeState.from_api(node_json("gpu-03", ready="False"))]
    refusal = only_refusal(check(live))
    assert refusal.location == "reservation.nodes.2"
    assert refusal.message.startswith("node gpu-03 is NotReady")


def test_a_cordoned_node_is_refused() -> None:
    live = [NodeState.from_api(node_json("gpu-01", unschedulable=True)), *healthy("gpu-02")]
    refusal = only_refusal(check(live, ["gpu-01", "gpu-02"]))
    assert refusal.location == "reservation.nodes.0"
    assert refusal.message.startswith("node gpu-01 is cordoned")
    assert "uncordon" in refusal.message


def test_a_node_of_another_sku_is_refused() -> None:
    live = [*healthy("gpu-01"), NodeState.from_api(node_json("gpu-02", instance_type="a100-8x"))]
    refusal = only_refusal(check(live, ["gpu-01", "gpu-02"]))
    assert refusal.location == "reservation.nodes.1"
    assert "gpu-02" in refusal.message
    assert "'a100-8x'" in refusal.message
    assert "'h100-8x'" in refusal.message


def test_a_node_without_an_instance_type_is_refused() -> None:
    live = [NodeState.from_api(node_json("gpu-01", instance_type=None))]
    refusal = only_refusal(check(live, ["gpu-01"]))
    assert refusal.location == "reservation.nodes.0"
    assert "None" in refusal.message


def test_a_node_of_another_pool_is_refused() -> None:
    live = [*healthy("gpu-01"), NodeState.from_api(node_json("gpu-02", pool="gpu-h100-rack-b"))]
    refusal = only_refusal(check(live, ["gpu-01", "gpu-02"]))
    assert refusal.location == "reservation.nodes.1"
    assert "gpu-02" in refusal.message
    assert "'gpu-h100-rack-b'" in refusal.message
    assert f"'{POOL}'" in refusal.message


def test_a_node_held_by_another_tenant_is_refused_naming_tenant_and_reservation() -> None:
    held = node_json("gpu-02", tenant="tenant-bar", reservation="tenant-bar-reservation")
    live = [*healthy("gpu-01", "gpu-03"), NodeState.from_api(held)]
    refusal = only_refusal(check(live))
    assert refusal.location == "reservation.nodes.1"
    for word in ("gpu-02", "tenant-bar", "Reservation tenant-bar-reservation"):
        assert word in refusal.message


def test_a_node_held_by_another_tenant_is_refused_even_if_unhealthy() -> None:
    held = node_json("gpu-01", ready="False", tenant="tenant-bar")
    findings = check([NodeState.from_api(held)], ["gpu-01"])
    assert findings.warnings == []
    messages = [r.message for r in findings.refusals]
    assert {r.location for r in findings.refusals} == {"reservation.nodes.0"}
    assert any("already reserved by tenant tenant-bar" in m for m in messages)
    assert any("NotReady" in m for m in messages)


@pytest.mark.parametrize(
    ("fields", "words"),
    [({"ready": "False"}, "is NotReady"), ({"unschedulable": True}, "is cordoned")],
)
def test_our_own_node_turned_unhealthy_is_a_warning_not_a_refusal(
    fields: dict[str, Any], words: str
) -> None:
    ours = node_json("gpu-02", tenant=TENANT, reservation="tenant-foo-reservation", **fields)
    live = [*healthy("gpu-01", "gpu-03"), NodeState.from_api(ours)]
    findings = check(live)
    assert findings.refusals == []
    assert len(findings.warnings) == 1
    assert "gpu-02" in findings.warnings[0]
    assert TENANT in findings.warnings[0]
    assert words in findings.warnings[0]


def test_our_own_node_of_another_sku_is_still_refused() -> None:
    ours = node_json("gpu-01", tenant=TENANT, instance_type="a100-8x")
    refusal = only_refusal(check([NodeState.from_api(ours)], ["gpu-01"]))
    assert refusal.location == "reservation.nodes.0"


def test_every_problem_is_reported_each_at_its_index() -> None:
    live = [
        NodeState.from_api(node_json("gpu-01", ready="False", unschedulable=True)),
        NodeState.from_api(node_json("gpu-03", tenant="tenant-bar")),
        *healthy("gpu-04"),
    ]
    findings = check(live, ["gpu-01", "gpu-02", "gpu-03", "gpu-04"])
    assert findings.warnings == []
    assert [r.location for r in findings.refusals] == [
        "reservation.nodes.0",
        "reservation.nodes.0",
        "reservation.nodes.1",
        "reservation.nodes.2",
    ]


# --- read_cluster through a stand-in kubectl -----------------------------------------------------


RETAINED = "gpu-tenants.example.io/retained"


@pytest.fixture(autouse=True)
def kubectl_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in kubectl a test writes (`fake_kubectl`) is the one found on PATH."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def fake_kubectl(tmp_path: Path, body: str) -> Path:
    """An executable `kubectl` that records its arguments and then runs `body` (POSIX sh)."""
    script = tmp_path / "kubectl"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{tmp_path}/argv"\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def claim_json(name: str, size: str, storage_class: str = "weka-tenant-foo") -> dict[str, Any]:
    """One item of `kubectl get persistentvolumeclaims -o json`, trimmed."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "tenant-foo"},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": storage_class,
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Pending"},
    }


def test_read_cluster_parses_nodes_and_claims_from_one_kubectl_call(tmp_path: Path) -> None:
    nodes = [
        node_json("gpu-01"),
        node_json("gpu-02", ready="False", unschedulable=True),
        node_json("gpu-09", tenant="tenant-bar", reservation="tenant-bar-reservation"),
    ]
    claims = [claim_json("training-scratch", "10Ti")]
    namespaces = [
        {
            "kind": "Namespace",
            "metadata": {"name": "tenant-bar", "annotations": {RETAINED: "jobs"}},
        },
        {
            "kind": "Namespace",
            "metadata": {"name": "tenant-foo", "annotations": {RETAINED: "jobs,logs"}},
        },
    ]
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"resourceVersion": ""},
        "items": nodes + claims + namespaces,
    }
    (tmp_path / "cluster.json").write_text(json.dumps(listing, indent=4))
    fake_kubectl(tmp_path, f'cat "{tmp_path}/cluster.json"')

    live = read_cluster("tenant-foo")

    assert (tmp_path / "argv").read_text().split() == [
        "-n",
        "tenant-foo",
        "get",
        "nodes,persistentvolumeclaims,namespaces,storageclasses",
        "--output=json",
        "--request-timeout=30s",
    ]
    assert live.nodes == [NodeState.from_api(item) for item in nodes]
    assert live.retained == ["jobs", "logs"]  # the tenant's own namespace's record
    assert [(n.name, n.ready, n.cordoned, n.reserved_by) for n in live.nodes] == [
        ("gpu-01", True, False, None),
        ("gpu-02", False, True, None),
        ("gpu-09", True, False, "tenant-bar"),
    ]
    assert live.claims == [
        ClaimState("training-scratch", 10 * 1024**4, "weka-tenant-foo", ("ReadWriteMany",))
    ]


def test_read_nodes_of_an_empty_cluster(tmp_path: Path) -> None:
    fake_kubectl(tmp_path, """echo '{"apiVersion": "v1", "kind": "List", "items": []}'""")
    live = read_cluster("tenant-foo")
    assert (live.nodes, live.claims) == ([], [])


def test_a_failing_kubectl_is_a_kubernetes_error_with_its_words(tmp_path: Path) -> None:
    words = "error: You must be logged in to the server (Unauthorized)"
    fake_kubectl(tmp_path, f'echo "{words}" >&2\nexit 1')
    with pytest.raises(KubernetesError) as caught:
        read_cluster("tenant-foo")
    assert str(caught.value) == (
        "`kubectl -n tenant-foo get nodes,persistentvolumeclaims,namespaces,storageclasses "
        f"--output=json --request-timeout=30s` failed: {words}; "
        "check KUBECONFIG and that kubectl reaches the cluster"
    )


def test_a_failing_silent_kubectl_reports_its_exit_code(tmp_path: Path) -> None:
    fake_kubectl(tmp_path, "exit 3")
    with pytest.raises(KubernetesError, match=r"failed: exit status 3, no output;"):
        read_cluster("tenant-foo")


def test_a_missing_kubectl_is_a_kubernetes_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KubernetesError, match="failed: kubectl is not on PATH"):
        read_cluster("tenant-foo")


def test_a_hung_kubectl_is_a_kubernetes_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kubectl can outlive its own --request-timeout, e.g. while an exec credential plugin waits
    # for a browser login; the read's own timeout then fires. The preflight promises kubectl's
    # error, not a traceback, and no kubectl left.
    kubectl = fake_kubectl(tmp_path, 'echo $$ > "$0.pid"\nexec sleep 30')
    monkeypatch.setattr("providers.kubectl.TIMEOUT", 0.5)
    with pytest.raises(KubernetesError, match=r"kubectl gave no answer within 0.5 s"):
        read_cluster("tenant-foo")
    pid = int(Path(f"{kubectl}.pid").read_text())
    assert not Path(f"/proc/{pid}").exists()


# --- claims `up` could only bring to the spec by replacing them ----------------------------------

SCRATCH_CLAIM = WantedClaim(
    "storage.pvcs.0", "training-scratch", 10 * 1024**4, "weka-tenant-foo", ("ReadWriteMany",)
)


@pytest.mark.parametrize(
    ("text", "size"),
    [("10Ti", 10 * 1024**4), ("11000G", 11 * 10**12), ("512", 512), ("1.5Gi", 3 * 2**29)],
)
def test_quantity_bytes(text: str, size: int) -> None:
    assert quantity_bytes(text) == size


def test_a_claim_as_the_spec_says_or_smaller_or_absent_passes() -> None:
    same = ClaimState.from_api(claim_json("training-scratch", "10Ti"))
    smaller = ClaimState.from_api(claim_json("training-scratch", "5Ti"))
    assert check_claims("tenant-foo", [SCRATCH_CLAIM], [same]) == []
    assert check_claims("tenant-foo", [SCRATCH_CLAIM], [smaller]) == []
    assert check_claims("tenant-foo", [SCRATCH_CLAIM], []) == []


def test_a_claim_grown_outside_the_stack_is_refused_at_its_size() -> None:
    grown = ClaimState.from_api(claim_json("training-scratch", "12Ti"))
    [problem] = check_claims("tenant-foo", [SCRATCH_CLAIM], [grown])
    assert problem.location == "storage.pvcs.0.size"
    assert problem.message.startswith(
        "PersistentVolumeClaim tenant-foo/training-scratch requests 12Ti, more than the 10Ti here"
    )
    assert problem.message.endswith("Set the size to 12Ti in a pull request")


def test_a_claim_made_again_with_another_class_is_refused() -> None:
    other = ClaimState.from_api(claim_json("training-scratch", "10Ti", storage_class="local"))
    [problem] = check_claims("tenant-foo", [SCRATCH_CLAIM], [other])
    assert problem.location == "storage.pvcs.0"
    assert "has storage class 'local', not 'weka-tenant-foo'" in problem.message


@pytest.mark.parametrize(
    ("recorded", "wanted"),
    [
        (None, "active"),  # onboarding: nothing recorded yet
        ("active", "active"),
        ("active", "frozen"),
        ("frozen", "drained"),
        ("snapshotted", "destroy"),
        ("snapshotted", "active"),  # the runbook's rollback
        ("archived", "drained"),
    ],
)
def test_a_stage_may_move_on_by_one_or_back(recorded: str | None, wanted: Stage) -> None:
    assert check_stage(recorded, wanted) == []


def test_a_stage_may_not_be_skipped_nor_left_from_destroy() -> None:
    [skipped] = check_stage("active", "archived")
    assert skipped.location == "lifecycle.stage"
    assert "at stage active" in skipped.message
    assert "the next is frozen" in skipped.message
    [back] = check_stage("destroy", "active")
    assert "no way back" in back.message


def test_a_live_tenant_under_legal_hold_may_not_move_to_destroy() -> None:
    [held] = check_legal_hold("destroy", legal_hold=True)
    assert held.location == "lifecycle.stage"
    assert "legal hold" in held.message
    assert check_legal_hold("snapshotted", legal_hold=True) == []
    assert check_legal_hold("destroy", legal_hold=False) == []


# --- whose the namespace is, and whether it was a rehearsal ---------------------------------------

STAGE = "gpu-tenants.example.io/lifecycle-stage"
REHEARSAL = "gpu-tenants.example.io/rehearsal"


def namespace_of(tmp_path: Path, metadata: dict[str, Any] | None) -> LiveCluster:
    """The cluster as read through a stand-in kubectl, with tenant-foo's namespace as given."""
    items = [] if metadata is None else [{"kind": "Namespace", "metadata": metadata}]
    (tmp_path / "cluster.json").write_text(json.dumps({"kind": "List", "items": items}))
    fake_kubectl(tmp_path, f'cat "{tmp_path}/cluster.json"')
    return read_cluster("tenant-foo")


def ours(**annotations: str) -> dict[str, Any]:
    return {
        "name": "tenant-foo",
        "labels": {"tenant": "tenant-foo"},
        "annotations": {STAGE: "active", **annotations},
    }


def test_a_new_or_marked_namespace_may_be_declared(tmp_path: Path) -> None:
    assert check_namespace(TENANT, namespace_of(tmp_path, None), None) == []
    assert check_namespace(TENANT, namespace_of(tmp_path, ours()), None) == []


@pytest.mark.parametrize(
    ("metadata", "phrase"),
    [
        ({"name": "tenant-foo"}, "does not carry this tenant's marks (label tenant=tenant-foo"),
        (
            {"name": "tenant-foo", "labels": {"tenant": "tenant-foo"}},  # made by the runbook
            "does not carry this tenant's marks",
        ),
        (
            {"name": "tenant-foo", "labels": {"tenant": "tenant-bar"}, "annotations": {STAGE: "x"}},
            "it is labelled as tenant 'tenant-bar''s",
        ),
    ],
)
def test_a_namespace_that_is_not_this_tenants_is_refused_unless_import_recorded_it(
    tmp_path: Path, metadata: dict[str, Any], phrase: str
) -> None:
    live = namespace_of(tmp_path, metadata)
    [refusal] = check_namespace(TENANT, live, None)
    assert refusal.location == "slug"
    assert phrase in refusal.message
    assert "gpu-tenants import tenant-foo" in refusal.message
    assert check_namespace(TENANT, live, Found(kubernetes=["Namespace/tenant-foo"])) == []
    # An imported spec adopts what import found, and import found no such namespace.
    assert len(check_namespace(TENANT, live, Found(kubernetes=["Secret/tenant-foo"]))) == 1


def test_rehearsal_may_be_turned_off_but_never_on_once_the_tenant_exists(tmp_path: Path) -> None:
    live = namespace_of(tmp_path, ours(**{REHEARSAL: "false"}))
    assert live.rehearsal is False
    [refusal] = check_rehearsal(True, live, "tenant-foo", [])
    assert refusal.location == "lifecycle.rehearsal"
    assert "was not onboarded as a rehearsal" in refusal.message
    assert check_rehearsal(False, live, "tenant-foo", []) == []
    rehearsed = namespace_of(tmp_path, ours(**{REHEARSAL: "true"}))
    assert check_rehearsal(True, rehearsed, "tenant-foo", []) == []
    assert check_rehearsal(True, namespace_of(tmp_path, None), "tenant-foo", []) == []  # first up


def tombstone(pk: int, username: str, tenant: str, **attributes: Any) -> User:
    return User.from_api(
        {
            "pk": pk,
            "uuid": f"u-{pk}",
            "username": username,
            "is_active": False,
            "attributes": {"gpu_tenants_tenant": tenant, **attributes},
        }
    )


def test_an_offboarded_tenant_whose_tombstones_are_kept_is_never_brought_back_as_a_rehearsal(
    tmp_path: Path,
) -> None:
    gone = namespace_of(tmp_path, None)
    until = {"gpu_tenants_kept_until": "2033-12-05"}
    kept = [
        tombstone(7, "bob", "tenant-foo", **until),
        tombstone(6, "alice", "tenant-foo", **until),
    ]
    [refusal] = check_rehearsal(True, gone, "tenant-foo", kept)
    assert refusal.location == "lifecycle.rehearsal"
    assert "tombstones (alice, bob)" in refusal.message
    assert "removes the attribute gpu_tenants_kept_until" in refusal.message
    assert check_rehearsal(False, gone, "tenant-foo", kept) == []
    # Another tenant's tombstones, an active user, and users a rehearsal's destroy disabled (or
    # whose day an admin removed) are no bar.
    others = [
        tombstone(8, "dave", "tenant-bar", **until),
        directory_user(9, "carol", gpu_tenants_tenant="tenant-foo"),
        tombstone(10, "erin", "tenant-foo"),
    ]
    assert check_rehearsal(True, gone, "tenant-foo", others) == []


# --- what Authentik already holds -----------------------------------------------------------------


def directory_user(pk: int, username: str, **attributes: Any) -> User:
    return User.from_api(
        {"pk": pk, "uuid": f"u-{pk}", "username": username, "attributes": attributes}
    )


def directory_group(num_pk: int, name: str, **attributes: Any) -> Group:
    return Group.from_api(
        {"pk": f"g-{num_pk}", "num_pk": num_pk, "name": name, "attributes": attributes}
    )


@pytest.fixture(scope="module")
def foo_spec() -> tuple[TenantSpec, Platform]:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    return load_spec(ROOT / "tenants", "tenant-foo", platform), platform


def refusals_of(
    foo_spec: tuple[TenantSpec, Platform],
    users: list[User],
    groups: list[Group],
    adopted: Found | None = None,
) -> list[tuple[str, str]]:
    spec, platform = foo_spec
    found = check_directory(spec, Path("tenant-foo.yaml"), platform.ldap, users, groups, adopted)
    return [(p.location, p.message) for p in found]


def test_the_tenants_own_users_and_groups_hold_their_numbers(
    foo_spec: tuple[TenantSpec, Platform],
) -> None:
    mark = {"gpu_tenants_tenant": "tenant-foo"}
    users = [directory_user(147, "alice", **mark), directory_user(1, "akadmin")]
    groups = [directory_group(99, "tenant-foo", **mark), directory_group(1, "authentik Admins")]
    assert refusals_of(foo_spec, users, groups) == []  # alice is uid 2147, the group gid 4099


def test_a_number_the_outpost_hands_to_a_staff_user_or_platform_group_is_refused(
    foo_spec: tuple[TenantSpec, Platform],
) -> None:
    users = [directory_user(148, "jsmith")]  # the outpost numbers jsmith 2000 + 148: bob's uid
    groups = [directory_group(7, "platform-ops", gidNumber="4100")]  # the admins group's gid
    assert refusals_of(foo_spec, users, groups) == [
        (
            "users.1.uid",
            "2148 is already the number of Authentik user 'jsmith' in the directory (as the LDAP "
            "outpost hands it out); pin another",
        ),
        (
            "identity.admins_gid",
            "4100 is already the number of Authentik group 'platform-ops' in the directory (as "
            "the LDAP outpost hands it out); pin another",
        ),
    ]


def test_a_user_or_group_of_someone_else_is_refused_unless_import_brought_it_in(
    foo_spec: tuple[TenantSpec, Platform],
) -> None:
    users = [directory_user(500, "carol", uidNumber="2149"), directory_user(501, "bob", **{
        "gpu_tenants_tenant": "tenant-bar", "uidNumber": "2148"})]  # fmt: skip
    groups = [directory_group(99, "tenant-foo-admins", gidNumber="4100")]
    found = refusals_of(foo_spec, users, groups)
    assert [location for location, _ in found] == ["users.1.username", "users.2.username", "slug"]
    assert found[0][1].startswith("Authentik user 'bob' already exists and is tenant tenant-bar's")
    assert found[1][1].startswith(
        "Authentik user 'carol' already exists and is not marked as any tenant's: `up` would "
        "rewrite its uid and SSH keys"
    )
    assert "`gpu-tenants import tenant-foo`" in found[2][1]
    # import recorded carol and the admins group, by their primary keys; bob is another tenant's.
    recorded = Found(authentik_users={"carol": 500}, authentik_groups={"tenant-foo-admins": "g-99"})
    assert [where for where, _ in refusals_of(foo_spec, users, groups, recorded)] == [
        "users.1.username"
    ]
    # A name import did not record, or the same name on another object, is not adopted.
    other = Found(authentik_users={"carol": 77}, authentik_groups={})
    assert [where for where, _ in refusals_of(foo_spec, users, groups, other)] == [
        "users.1.username",
        "users.2.username",
        "slug",
    ]


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        ({"is_superuser": True}, "is a superuser (through its groups)"),
        ({"type": "service_account"}, "is a service account (type service_account)"),
        ({"groups": ["g-99", "g-1"]}, "is in groups outside the tenant's: authentik Admins"),
    ],
)
def test_a_superuser_a_service_account_or_someone_elses_member_is_never_adopted(
    foo_spec: tuple[TenantSpec, Platform], user: dict[str, Any], reason: str
) -> None:
    carol = User.from_api(
        {"pk": 500, "uuid": "u-500", "username": "carol", "attributes": {"uidNumber": "2149"},
         "groups": ["g-99"], **user}
    )  # fmt: skip
    groups = [directory_group(99, "tenant-foo"), directory_group(1, "authentik Admins")]
    recorded = Found(authentik_users={"carol": 500}, authentik_groups={"tenant-foo": "g-99"})
    assert refusals_of(foo_spec, [carol], groups, recorded) == [
        ("users.2.username", f"Authentik user 'carol' {reason}: never adopted")
    ]


def test_an_earlier_releases_namespace_is_told_from_a_hand_made_one_by_its_field_managers(
    tmp_path: Path,
) -> None:
    # Labelled as the tenant's, without the stage annotation the program writes since.
    live = namespace_of(tmp_path, {"name": "tenant-foo", "labels": {"tenant": "tenant-foo"}})
    assert check_namespace(TENANT, live, None, ["pulumi-kubernetes-4e5f6a"]) == []
    [refused] = check_namespace(TENANT, live, None, ["kubectl-create", "kubectl-label"])
    assert "does not carry this tenant's marks" in refused.message


# --- storage: runbook step 1's "free capacity above the requested storage + 20%" ---------------

TB = 10**12


def weka_with(unprovisioned: int) -> Capacity:
    return Capacity(total=2000 * TB, hot_spare=0, unprovisioned=unprovisioned)


def test_a_new_tenant_fits_in_what_weka_has_unprovisioned_with_the_headroom(
    foo_spec: tuple[TenantSpec, Platform],
) -> None:
    foo, platform = foo_spec  # 5 TB home + 50 TB scratch, in an organization of its own
    headroom = platform.weka.capacity_headroom_percent
    assert headroom == 20
    assert check_capacity(foo, [foo], weka_with(66 * TB), set(), headroom) == []
    (refused,) = check_capacity(foo, [foo], weka_with(65 * TB), set(), headroom)
    assert refused == Problem(
        "storage",
        "the tenant's filesystems (5.0 TB home + 50.0 TB scratch) with the platform's 20% "
        "headroom need 66.0 TB, and Weka has 65.0 TB unprovisioned: 65.0 TB is left. Free "
        "capacity on Weka first, or lower storage.home_capacity or storage.scratch.hard",
    )
    # Once its organization exists, its filesystems are Weka's to grow or refuse.
    assert check_capacity(foo, [foo], weka_with(0), {"tenant-foo"}, headroom) == []


def test_specs_not_applied_yet_take_their_share_first(
    foo_spec: tuple[TenantSpec, Platform],
) -> None:
    foo, _ = foo_spec
    others = {
        slug: foo.model_copy(update={"slug": slug})
        for slug in ("tenant-new", "tenant-made", "tenant-leaving")
    }
    others["tenant-leaving"] = others["tenant-leaving"].model_copy(
        update={"lifecycle": foo.lifecycle.model_copy(update={"stage": "frozen"})}
    )
    made = {"tenant-made"}
    # tenant-new has no organization yet and is active: its 55 TB are promised.
    (refused,) = check_capacity(foo, [foo, *others.values()], weka_with(100 * TB), made, 20)
    assert refused.message.split(": ")[0].endswith(
        "Weka has 100.0 TB unprovisioned, of which 55.0 TB goes to specs not applied yet "
        "(tenant-new)"
    )
    assert "45.0 TB is left" in refused.message
    assert check_capacity(foo, [foo, *others.values()], weka_with(121 * TB), made, 20) == []


def test_a_tenant_on_the_shared_filesystems_provisions_nothing(
    foo_spec: tuple[TenantSpec, Platform],
) -> None:
    foo, _ = foo_spec
    shared = foo.model_copy(
        update={"storage": foo.storage.model_copy(update={"isolation": "directory"})}
    )
    assert shared.own_filesystem_bytes == 0
    assert check_capacity(shared, [shared], weka_with(0), set(), 20) == []
