"""The components under Pulumi mocks, built from the example specs through tenant_stack.mapping, as
the program builds them: every object and field that onboarding runbook steps 1, 3 and 5 write,
the parent of every child, and the dependencies that order `up` and (reversed) `destroy`.

Parents and dependencies are read from the raw requests the SDK sends its resource monitor (see
tests/unit/mocks.py): `parent` is the exact URN of the component, and `dependencies` holds what the
engine orders by, with a dependency on a component expanded to the URNs of its children.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from tenant_stack.components.kubernetes_objects import OWNED
from tenant_stack.components.weka_storage import SharedFilesystem, legacy_class_parameters
from tenant_stack.mapping import SharedFilesystems
from tenant_stack.platform import Platform, load_platform
from tenant_stack.program import declare_tenant
from tenant_stack.spec import TenantSpec, load_spec
from tenant_stack.strict_yaml import parse_yaml
from tests.conftest import ROOT
from tests.unit.mocks import Recorded, Recorder, is_secret, pulumi_mocks, reveal

TENANTS = ROOT / "tenants"
PLATFORM = load_platform(ROOT / "Pulumi.prod.yaml")

RESERVATION = "gpu-tenants:reservation:CapacityReservation"
NAMESPACE = "gpu-tenants:namespace:TenantNamespace"
LOGIN = "gpu-tenants:login:LoginPod"
IDENTITY = "gpu-tenants:identity:IdentityGroup"
SLURM = "gpu-tenants:slurm:SlurmAccounting"
STORAGE = "gpu-tenants:storage:WekaStorage"
OFFBOARDING = "gpu-tenants:offboarding:Offboarding"
RETENTION = "gpu-tenants:retention:Retention"
ARCHIVE = "pulumi-python:dynamic/retention:SlurmArchive"
GATE = "pulumi-python:dynamic/offboarding:Gate"
SLURM_QOS = "pulumi-python:dynamic/slurm:Qos"
SLURM_ACCOUNT = "pulumi-python:dynamic/slurm:Account"
SLURM_USER = "pulumi-python:dynamic/slurm:User"
SLURM_PARTITION = "pulumi-python:dynamic/slurm:Partition"
WEKA_ORG = "pulumi-python:dynamic/weka:Organization"
WEKA_FS = "pulumi-python:dynamic/weka:Filesystem"
WEKA_USER = "pulumi-python:dynamic/weka:OrgUser"
WEKA_QUOTA = "pulumi-python:dynamic/weka:DirectoryQuota"
WEKA_DIR = "pulumi-python:dynamic/weka:Directory"
K8S_STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
K8S_PVC = "kubernetes:core/v1:PersistentVolumeClaim"
AUTHENTIK_GROUP = "pulumi-python:dynamic/authentik:TenantGroup"
AUTHENTIK_USER = "pulumi-python:dynamic/authentik:TenantUser"
K8S_RESERVATION = "kubernetes:scheduling.example.io/v1alpha1:Reservation"
NODE_RELEASE = "pulumi-python:dynamic/offboarding:NodeRelease"
K8S_BINDING = "kubernetes:scheduling.example.io/v1alpha1:ReservationBinding"
K8S_NAMESPACE = "kubernetes:core/v1:Namespace"
K8S_QUOTA = "kubernetes:core/v1:ResourceQuota"
K8S_LIMITS = "kubernetes:core/v1:LimitRange"
K8S_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
K8S_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
K8S_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
K8S_ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
K8S_ADMISSION_BINDING = (
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
)
K8S_SECRET = "kubernetes:core/v1:Secret"
K8S_RELEASE = "kubernetes:helm.example.io/v1:HelmRelease"
LOGIN_READY = "pulumi-python:dynamic/kubernetes:LoginPodsReady"

# The LDAP bind Secret as the mocks read it from auth/ldap-bind-creds.
BIND_DATA = {"password": "cGFzc3dvcmQ="}

# Runbook step 5c, for alice.
ALICE_SSH_CONFIG = """\
Host login-foo
    HostName       login.tenant-foo.example.internal
    Port           22
    User           alice
    IdentityFile   ~/.ssh/id_ed25519
    ServerAliveInterval 30
    ServerAliveCountMax 4
"""


def owned(name: str, namespace: str | None = None) -> dict[str, Any]:
    """The metadata of an object the stack owns (namespaced unless `namespace` is None)."""
    if namespace is None:
        return {"name": name, "annotations": OWNED}
    return {"name": name, "namespace": namespace, "annotations": OWNED}


@dataclass(frozen=True)
class Deployment:
    """What one run of the three components declared, and the values of their outputs."""

    recorder: Recorder
    outputs: dict[str, Any]

    def one(self, type_: str, name: str) -> Recorded:
        return self.recorder.one(type_, name)

    def of_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.recorder.resources if r.type == type_]


def _deploy(recorder: Recorder, spec: TenantSpec, platform: Platform = PLATFORM) -> Deployment:
    """The components in the program's order (runbook 1, 3, 5), args from tenant_stack.mapping."""

    def program() -> pulumi.Output[dict[str, Any]]:
        shared = (
            SharedFilesystems(
                home=SharedFilesystem("cluster-home", "fs-shared-home"),
                scratch=SharedFilesystem("cluster-scratch", "fs-shared-scratch"),
            )
            if spec.storage.isolation == "directory"
            else None
        )
        tenant = declare_tenant(spec, platform, pulumi.Output.secret(BIND_DATA), shared)
        reservation, namespace, login = tenant.reservation, tenant.namespace, tenant.login
        outputs: dict[str, Any] = {
            "namespace": namespace.name,
            "ldap_bind_secret": namespace.ldap_bind_secret,
            "release": login.release,
            "authorized_keys_secret": login.authorized_keys_secret,
            "login_host": login.login_host,
            "ssh_config": login.ssh_config,
        }
        if reservation is not None:
            outputs |= {"reservation": reservation.name, "reserved_nodes": reservation.nodes}
        return pulumi.Output.all(**outputs)

    return Deployment(recorder, recorder.run(program))


def _variant(tmp_path: Path, slug: str, edit: Callable[[dict[str, Any]], None]) -> TenantSpec:
    """An example spec with `edit` applied, written to tmp_path and loaded (so validated) there."""
    data = parse_yaml((TENANTS / f"{slug}.yaml").read_text())
    assert isinstance(data, dict)
    edit(data)
    (tmp_path / f"{slug}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return load_spec(tmp_path, slug, PLATFORM)


@pytest.fixture(scope="module")
def foo() -> Iterator[Deployment]:
    """tenant-foo, the runbook's worked example, deployed once for the tests that only read."""
    with pulumi_mocks() as recorder:
        yield _deploy(recorder, load_spec(TENANTS, "tenant-foo", PLATFORM))


@pytest.fixture
def mocks() -> Iterator[Recorder]:
    with pulumi_mocks() as recorder:
        yield recorder


# --- runbook step 1: the Reservation -------------------------------------------------------------


def test_every_kubernetes_object_is_applied_as_its_owner(foo: Deployment) -> None:
    # Read resources (the LDAP bind Secret's source) are not the stack's to force.
    made = [
        r for r in foo.recorder.resources if r.type.startswith("kubernetes:") and r.read_id is None
    ]
    assert len(made) >= 12
    for resource in made:
        annotations = resource.inputs["metadata"]["annotations"]
        assert annotations["pulumi.com/patchForce"] == "true", resource.name


def test_reservation_is_the_runbooks(foo: Deployment) -> None:
    reservation = foo.one(K8S_RESERVATION, "tenant-foo-reservation")
    assert reservation.inputs["apiVersion"] == "scheduling.example.io/v1alpha1"
    assert reservation.inputs["kind"] == "Reservation"
    assert reservation.inputs["metadata"]["name"] == "tenant-foo-reservation"
    assert reservation.inputs["spec"] == {
        "tenant": "tenant-foo",
        "nodeSelector": {"matchLabels": {"hardware-pool": "gpu-h100-rack-a"}},
        "reservedNodes": [f"gpu-{n:02d}" for n in range(1, 9)],
        "applyTaint": True,
        "taintEffect": "NoSchedule",
        "evictOnRelease": False,
    }


def test_each_node_is_checked_before_the_reservation_lets_it_go(foo: Deployment) -> None:
    # Offboarding step 7: the release record depends on the Reservation, so destroy deletes it
    # (reading each node's health, holding back a failing one) before the Reservation.
    reservation = foo.one(K8S_RESERVATION, "tenant-foo-reservation")
    release = foo.one(NODE_RELEASE, "tenant-foo-node-release")
    assert reservation.urn in release.dependencies
    assert (release.inputs["tenant"], release.inputs["condition"]) == ("tenant-foo", "GPUHealthy")
    assert release.inputs["nodes"] == [f"gpu-{n:02d}" for n in range(1, 9)]


def test_up_waits_until_the_operator_reports_the_reservation_ready(foo: Deployment) -> None:
    annotations = foo.one(K8S_RESERVATION, "tenant-foo-reservation").inputs["metadata"][
        "annotations"
    ]
    assert annotations["pulumi.com/waitFor"] == "condition=Ready"
    assert int(annotations["pulumi.com/timeoutSeconds"]) > 0


# --- runbook step 3: the namespace and what is in it ---------------------------------------------


def test_namespace_has_the_tenant_and_restricted_pod_security_labels(foo: Deployment) -> None:
    namespace = foo.one(K8S_NAMESPACE, "tenant-foo-namespace")
    assert namespace.inputs["metadata"] == {
        "name": "tenant-foo",
        # The offboarding stage it was brought to: the next `up` moves on by one stage only;
        # and that it is no rehearsal, which no later `up` may then make it.
        "annotations": {
            **OWNED,
            "gpu-tenants.example.io/lifecycle-stage": "active",
            "gpu-tenants.example.io/rehearsal": "false",
        },
        "labels": {
            "tenant": "tenant-foo",
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/warn": "restricted",
        },
    }


def test_resource_quota_is_the_runbooks(foo: Deployment) -> None:
    quota = foo.one(K8S_QUOTA, "tenant-foo-quota")
    assert quota.inputs["metadata"] == owned("tenant-foo-quota", "tenant-foo")
    assert quota.inputs["spec"] == {
        "hard": {
            "requests.nvidia.com/gpu": "64",
            "requests.cpu": "1024",
            "requests.memory": "8Ti",
            "limits.memory": "10Ti",
            "persistentvolumeclaims": "50",
            "requests.storage": "100Ti",
        }
    }


def test_limit_range_is_the_runbooks(foo: Deployment) -> None:
    limits = foo.one(K8S_LIMITS, "tenant-foo-defaults")
    assert limits.inputs["metadata"] == owned("tenant-foo-defaults", "tenant-foo")
    assert limits.inputs["spec"] == {
        "limits": [
            {
                "type": "Container",
                "default": {"cpu": "4", "memory": "16Gi"},
                "defaultRequest": {"cpu": "1", "memory": "4Gi"},
            }
        ]
    }


def test_reservation_binding_is_the_runbooks(foo: Deployment) -> None:
    binding = foo.one(K8S_BINDING, "tenant-foo-binding")
    assert binding.inputs["apiVersion"] == "scheduling.example.io/v1alpha1"
    assert binding.inputs["metadata"] == owned("tenant-foo-binding", "tenant-foo")
    assert binding.inputs["spec"] == {
        "reservationName": "tenant-foo-reservation",
        "podSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "tenant-foo"}},
        "injectAffinity": True,
        "injectToleration": True,
    }


def _namespaces(*names: str) -> list[dict[str, Any]]:
    return [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}
        for name in names
    ]


def test_network_policies_are_the_runbooks(foo: Deployment) -> None:
    deny = foo.one(K8S_POLICY, "tenant-foo-deny-all")
    assert deny.inputs["metadata"] == owned("tenant-foo-deny-all", "tenant-foo")
    assert deny.inputs["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}

    allow = foo.one(K8S_POLICY, "tenant-foo-allow")
    assert allow.inputs["metadata"] == owned("tenant-foo-allow", "tenant-foo")
    assert allow.inputs["spec"] == {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": _namespaces("tenant-foo", "slurm-control")}],
        # Tenant-internal, then each namespace on the ports its products use (the runbook's
        # 53/UDP, 636, 443 to all of them would cut the login pod off from slurmctld).
        "egress": [
            {"to": _namespaces("tenant-foo")},
            {
                "to": _namespaces("slurm-control"),
                "ports": [
                    {"port": 6817, "protocol": "TCP"},
                    {"port": 6818, "protocol": "TCP"},
                    {"port": 6819, "protocol": "TCP"},
                ],
            },
            {
                "to": _namespaces("auth"),
                "ports": [{"port": 636, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}],
            },
            {
                "to": _namespaces("kube-system"),
                "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
            },
        ],
    }
    # Users reach the login pods' sshd from outside the cluster, which no namespace rule names;
    # pods of other namespaces do not.
    login_ssh = foo.one(K8S_POLICY, "tenant-foo-login-ssh")
    assert login_ssh.inputs["metadata"] == owned("tenant-foo-login-ssh", "tenant-foo")
    assert login_ssh.inputs["spec"] == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "login-tenant-foo"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.42.0.0/16"]}}],
                "ports": [{"port": 22, "protocol": "TCP"}],
            }
        ],
    }
    assert len(foo.of_type(K8S_POLICY)) == 3


def test_admins_role_binding_is_the_runbooks(foo: Deployment) -> None:
    binding = foo.one(K8S_ROLE_BINDING, "tenant-foo-admins")
    # Named apart from the runbook's binding to `edit`, whose roleRef could not change.
    assert binding.inputs["metadata"] == owned("tenant-foo-tenant-admins", "tenant-foo")
    assert binding.inputs["subjects"] == [
        {"kind": "Group", "name": "tenant-foo-admins", "apiGroup": "rbac.authorization.k8s.io"}
    ]
    # The tenant's own Role, not `edit`, which would let admins write NetworkPolicies.
    assert binding.inputs["roleRef"] == {
        "kind": "Role",
        "name": "tenant-foo-admins",
        "apiGroup": "rbac.authorization.k8s.io",
    }
    role = foo.one(K8S_ROLE, "tenant-foo-admins-role")
    assert role.inputs["metadata"] == owned("tenant-foo-admins", "tenant-foo")
    writable = {
        (group, resource)
        for rule in role.inputs["rules"]
        if "update" in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert {("apps", "deployments"), ("", "pods"), ("", "secrets")} <= writable
    for isolating in (
        ("networking.k8s.io", "networkpolicies"),
        ("scheduling.example.io", "reservationbindings"),
        ("", "resourcequotas"),
        ("", "limitranges"),
        ("rbac.authorization.k8s.io", "rolebindings"),
    ):
        assert isolating not in writable


def test_the_admission_policy_guards_the_stacks_objects_and_the_tenants_class(
    foo: Deployment,
) -> None:
    policy = foo.one(K8S_ADMISSION_POLICY, "tenant-foo-admission-policy")
    assert policy.inputs["metadata"] == owned("tenant-foo-isolation")
    spec = policy.inputs["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "tenant-foo"}
    }
    rules = spec["matchConstraints"]["resourceRules"]
    assert [rule["scope"] for rule in rules] == ["Namespaced", "Namespaced"]
    assert rules[1]["operations"] == ["CONNECT"]  # exec, attach, port-forward
    validations = {v["message"].split(" ")[1]: v for v in spec["validations"]}
    claims, stack_objects = validations["PersistentVolumeClaim"], spec["validations"][-1]
    assert "object.spec.storageClassName == 'weka-tenant-foo'" in claims["expression"]
    # Placement and addresses: named, and the subdomain is the tenant's own.
    messages = " ".join(v["message"] for v in spec["validations"])
    for phrase in (
        "a pod may not name its node",
        "a pod may tolerate the taint reserved.tenant only for its own tenant",
        "a pod may select nodes by reserved.tenant only for its own tenant's (tenant-foo)",
        "a Service of the tenant's admins stays inside the cluster",
        "must be under the tenant's own subdomain tenant-foo.example.internal",
        "the pods of the login release login-tenant-foo are the platform's",
        "names login-tenant-foo and login-tenant-foo-... are the login release's",
    ):
        assert phrase in messages
    assert spec["variables"][0]["name"] == "pod"
    assert "'tenant-foo-admins' in request.userInfo.groups" in stack_objects["expression"]
    assert (
        "'pulumi.com/patchForce' in oldObject.metadata.annotations" in (stack_objects["expression"])
    )
    binding = foo.one(K8S_ADMISSION_BINDING, "tenant-foo-admission-binding")
    assert binding.inputs["spec"] == {
        "policyName": "tenant-foo-isolation",
        "validationActions": ["Deny"],
    }


def test_ldap_bind_secret_is_copied_into_the_tenant_namespace(foo: Deployment) -> None:
    # The source is read by the program (tenant_stack.live), never a resource of the stack.
    assert not [r for r in foo.recorder.resources if r.read_id is not None]
    copy = foo.one(K8S_SECRET, "tenant-foo-ldap-bind")
    assert copy.read_id is None
    assert copy.inputs["metadata"] == owned("ldap-bind-creds", "tenant-foo")
    assert copy.inputs["type"] == "Opaque"
    assert is_secret(copy.inputs["data"])
    assert reveal(copy.inputs["data"]) == BIND_DATA
    assert foo.outputs["ldap_bind_secret"] == "ldap-bind-creds"


# --- runbook step 5: the login pod ---------------------------------------------------------------


def test_authorized_keys_secret_holds_each_users_keys(foo: Deployment) -> None:
    spec = load_spec(TENANTS, "tenant-foo", PLATFORM)
    keys = foo.one(K8S_SECRET, "tenant-foo-authorized-keys")
    assert keys.inputs["metadata"] == owned("tenant-foo-authorized-keys", "tenant-foo")
    assert reveal(keys.inputs["stringData"]) == {
        user.username: "".join(f"{key}\n" for key in user.ssh_keys) for user in spec.users
    }
    assert sorted(reveal(keys.inputs["stringData"])) == ["alice", "bob", "carol"]
    assert foo.outputs["authorized_keys_secret"] == "tenant-foo-authorized-keys"


def test_login_release_is_the_runbooks(foo: Deployment) -> None:
    release = foo.one(K8S_RELEASE, "tenant-foo-release")
    assert release.inputs["apiVersion"] == "helm.example.io/v1"
    assert release.inputs["metadata"] == owned("login-tenant-foo", "tenant-foo")
    assert release.inputs["spec"] == {
        "chart": {"name": "sunk-login", "version": "1.4.x"},
        "values": {
            "tenant": "tenant-foo",
            "replicas": 2,
            # Exempt from Pod Security, so sshd may switch users; the admission policy keeps it
            # the release's (docs/design.md).
            "runtimeClassName": "gpu-tenants-login",
            "ldap": {
                "uri": "ldaps://authentik-ldap-outpost.auth.svc:636",
                "baseDN": "dc=auth,dc=example,dc=internal",
                "bindDN": "cn=ldap-bind,ou=users,dc=auth,dc=example,dc=internal",
                "bindPasswordSecret": "ldap-bind-creds",
            },
            "slurm": {"controllerHost": "slurmctld.slurm-control.svc"},
            "sshKeysSecret": "tenant-foo-authorized-keys",
            # tenant-foo has `org` isolation: its own filesystems, as runbook 6a creates them
            # (runbook 5a's example shows the shared-directory form, tested with tenant-bar).
            "homeMount": {"type": "weka", "path": "/home", "filesystem": "tenant-foo-home"},
            "scratchMount": {
                "type": "weka",
                "path": "/scratch",
                "filesystem": "tenant-foo-scratch",
            },
            "service": {
                "type": "LoadBalancer",
                "annotations": {
                    "external-dns.alpha.kubernetes.io/hostname": "login.tenant-foo.example.internal"
                },
            },
        },
    }
    assert foo.outputs["release"] == "login-tenant-foo"
    assert foo.outputs["login_host"] == "login.tenant-foo.example.internal"


def test_ssh_config_per_user_is_the_runbooks(foo: Deployment) -> None:
    ssh_config = foo.outputs["ssh_config"]
    assert sorted(ssh_config) == ["alice", "bob", "carol"]
    assert ssh_config["alice"] == ALICE_SSH_CONFIG
    assert ssh_config["bob"] == ALICE_SSH_CONFIG.replace("alice", "bob")


# --- names, parents, outputs ---------------------------------------------------------------------

FOO_CHILDREN = {
    RESERVATION: {
        (K8S_RESERVATION, "tenant-foo-reservation"),
        (NODE_RELEASE, "tenant-foo-node-release"),
    },
    NAMESPACE: {
        (K8S_NAMESPACE, "tenant-foo-namespace"),
        (K8S_QUOTA, "tenant-foo-quota"),
        (K8S_LIMITS, "tenant-foo-defaults"),
        (K8S_BINDING, "tenant-foo-binding"),
        (K8S_POLICY, "tenant-foo-deny-all"),
        (K8S_POLICY, "tenant-foo-allow"),
        (K8S_POLICY, "tenant-foo-login-ssh"),
        (K8S_ROLE_BINDING, "tenant-foo-admins"),
        (K8S_SECRET, "tenant-foo-ldap-bind"),
        (K8S_ROLE, "tenant-foo-admins-role"),
        (K8S_ADMISSION_POLICY, "tenant-foo-admission-policy"),
        (K8S_ADMISSION_BINDING, "tenant-foo-admission-binding"),
    },
    IDENTITY: {
        (AUTHENTIK_GROUP, "tenant-foo-group"),
        (AUTHENTIK_GROUP, "tenant-foo-admins"),
        (AUTHENTIK_USER, "tenant-foo-user-alice"),
        (AUTHENTIK_USER, "tenant-foo-user-bob"),
        (AUTHENTIK_USER, "tenant-foo-user-carol"),
    },
    LOGIN: {
        (K8S_SECRET, "tenant-foo-authorized-keys"),
        (K8S_RELEASE, "tenant-foo-release"),
        (LOGIN_READY, "tenant-foo-ready"),
    },
    SLURM: {
        (SLURM_QOS, "tenant-foo-qos-normal-foo"),
        (SLURM_QOS, "tenant-foo-qos-interactive-foo"),
        (SLURM_ACCOUNT, "tenant-foo-account"),
        (SLURM_ACCOUNT, "tenant-foo-account-ml-team-foo"),
        (SLURM_PARTITION, "tenant-foo-partition"),
        (SLURM_USER, "tenant-foo-user-alice"),
        (SLURM_USER, "tenant-foo-user-bob"),
        (SLURM_USER, "tenant-foo-user-carol"),
    },
    STORAGE: {
        (WEKA_ORG, "tenant-foo-org"),
        (WEKA_FS, "tenant-foo-home"),
        (WEKA_FS, "tenant-foo-scratch"),
        (WEKA_USER, "tenant-foo-csi-user"),
        (WEKA_QUOTA, "tenant-foo-scratch-quota"),
        (WEKA_DIR, "tenant-foo-dir-home"),
        (WEKA_DIR, "tenant-foo-dir-scratch"),
        *((WEKA_DIR, f"tenant-foo-dir-home-{user}") for user in ("alice", "bob", "carol")),
        *((WEKA_QUOTA, f"tenant-foo-home-{user}-quota") for user in ("alice", "bob", "carol")),
        (K8S_SECRET, "tenant-foo-csi-secret"),
        (K8S_STORAGE_CLASS, "tenant-foo-storage-class"),
        (K8S_PVC, "tenant-foo-pvc-training-scratch"),
    },
    OFFBOARDING: {(GATE, "tenant-foo-gate")},
    RETENTION: set(),  # nothing is archived before stage archived
}


def test_every_child_is_parented_to_its_component(foo: Deployment) -> None:
    components = {kind: foo.one(kind, "tenant-foo") for kind in FOO_CHILDREN}
    for kind, component in components.items():
        assert not component.custom
        assert component.parent.split("::")[-2] == "pulumi:pulumi:Stack"
        children = {(r.type, r.name) for r in foo.recorder.children(component)}
        assert children == FOO_CHILDREN[kind], kind
    # ...and nothing else was declared: no stray resource at the top of the stack.
    assert len(foo.recorder.resources) == len(components) + sum(map(len, FOO_CHILDREN.values()))


def test_each_component_registers_its_outputs(foo: Deployment) -> None:
    assert foo.recorder.outputs_of(foo.one(RESERVATION, "tenant-foo")) == {
        "name": "tenant-foo-reservation",
        "nodes": [f"gpu-{n:02d}" for n in range(1, 9)],
    }
    assert foo.recorder.outputs_of(foo.one(NAMESPACE, "tenant-foo")) == {
        "name": "tenant-foo",
        "ldap_bind_secret": "ldap-bind-creds",
    }
    login = foo.recorder.outputs_of(foo.one(LOGIN, "tenant-foo"))
    assert login["release"] == "login-tenant-foo"
    assert login["ssh_config"]["alice"] == ALICE_SSH_CONFIG
    assert foo.outputs["reservation"] == "tenant-foo-reservation"
    assert foo.outputs["namespace"] == "tenant-foo"


# --- dependencies: `up` runs in runbook order, `destroy` backwards -------------------------------


def test_namespace_is_created_after_the_reservation(foo: Deployment) -> None:
    reservation = foo.one(K8S_RESERVATION, "tenant-foo-reservation")
    assert reservation.urn in foo.one(K8S_NAMESPACE, "tenant-foo-namespace").dependencies


def test_binding_depends_on_the_reservation_through_its_name(foo: Deployment) -> None:
    reservation = foo.one(K8S_RESERVATION, "tenant-foo-reservation")
    binding = foo.one(K8S_BINDING, "tenant-foo-binding")
    assert reservation.urn in binding.property_dependencies["spec"]


def test_namespaced_objects_depend_on_the_namespace(foo: Deployment) -> None:
    namespace = foo.one(K8S_NAMESPACE, "tenant-foo-namespace")
    component = foo.one(NAMESPACE, "tenant-foo")
    cluster_wide = {K8S_ADMISSION_POLICY, K8S_ADMISSION_BINDING}
    for child in foo.recorder.children(component):
        if child.read_id is None and child.urn != namespace.urn and child.type not in cluster_wide:
            assert namespace.urn in child.property_dependencies["metadata"], child.name


def test_identity_is_the_runbooks_with_pinned_numbers(foo: Deployment) -> None:
    group = foo.one(AUTHENTIK_GROUP, "tenant-foo-group").inputs
    assert (group["name"], group["parent"], group["gid"]) == ("tenant-foo", "tenants", 4099)
    assert group["attributes"] == {"tenant_slug": "tenant-foo"}
    admins = foo.one(AUTHENTIK_GROUP, "tenant-foo-admins").inputs
    assert (admins["name"], admins["gid"]) == ("tenant-foo-admins", 4100)
    alice = foo.one(AUTHENTIK_USER, "tenant-foo-user-alice").inputs
    assert (alice["username"], alice["uid"], alice["gid"]) == ("alice", 2147, 4099)
    assert alice["email"] == "alice@tenant-foo.example"
    assert alice["groups"] == ["tenant-foo", "tenant-foo-admins"]
    assert alice["ssh_keys"][0].startswith("ssh-ed25519 ")
    assert foo.one(AUTHENTIK_USER, "tenant-foo-user-bob").inputs["groups"] == ["tenant-foo"]


def test_identity_comes_after_slurm_and_before_the_login(foo: Deployment) -> None:
    # Destroy runs backwards: identity is revoked before Slurm goes (the offboarding order).
    slurm = {r.urn for r in foo.recorder.children(foo.one(SLURM, "tenant-foo"))}
    group = foo.one(AUTHENTIK_GROUP, "tenant-foo-group")
    assert slurm <= group.dependencies
    # Users join the groups through the groups' name outputs, so the groups exist first.
    bob = foo.one(AUTHENTIK_USER, "tenant-foo-user-bob")
    assert group.urn in bob.property_dependencies["groups"]
    identity = {r.urn for r in foo.recorder.children(foo.one(IDENTITY, "tenant-foo"))}
    for child in foo.recorder.children(foo.one(LOGIN, "tenant-foo")):
        assert identity <= child.dependencies, child.name


def test_login_children_depend_on_the_whole_namespace_component(foo: Deployment) -> None:
    namespace_children = {r.urn for r in foo.recorder.children(foo.one(NAMESPACE, "tenant-foo"))}
    login = foo.recorder.children(foo.one(LOGIN, "tenant-foo"))
    assert len(login) == 3
    for child in login:
        assert namespace_children <= child.dependencies, child.name
    release = foo.one(K8S_RELEASE, "tenant-foo-release")
    keys = foo.one(K8S_SECRET, "tenant-foo-authorized-keys")
    assert keys.urn in release.property_dependencies["spec"]
    # `up` waits for the release's pods once the release is written, for the replicas it asks.
    ready = foo.one(LOGIN_READY, "tenant-foo-ready")
    assert release.urn in ready.dependencies
    assert (ready.inputs["release"], ready.inputs["replicas"]) == ("login-tenant-foo", 2)


# --- tenant-bar: shared directories, and a tenant without admins ---------------------------------


def test_directory_tenant_mounts_its_home_directory_and_the_shared_scratch_filesystem(
    mocks: Recorder,
) -> None:
    bar = _deploy(mocks, load_spec(TENANTS, "tenant-bar", PLATFORM))
    values = bar.one(K8S_RELEASE, "tenant-bar-release").inputs["spec"]["values"]
    # /home is the tenant's directory of the shared home filesystem (runbook 5a's form), so that
    # alice lands in /home/alice; /scratch is the scratch filesystem, so that the tenant's
    # directory is /scratch/tenant-bar, as runbook 4e, the smoke tests and the handover name it.
    assert values["homeMount"] == {
        "type": "weka",
        "path": "/home",
        "filesystem": "cluster-home/tenant-bar",
    }
    assert values["scratchMount"] == {
        "type": "weka",
        "path": "/scratch",
        "filesystem": "cluster-scratch",
    }
    assert values["replicas"] == 1
    keys = reveal(bar.one(K8S_SECRET, "tenant-bar-authorized-keys").inputs["stringData"])
    assert sorted(keys) == ["dave", "erin"]
    assert keys["dave"].count("\n") == 2  # dave's two keys, one a line
    assert bar.outputs["ssh_config"]["dave"].startswith("Host login-bar\n")
    assert bar.one(K8S_QUOTA, "tenant-bar-quota").inputs["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "32",
        "requests.cpu": "512",
        "requests.memory": "4Ti",
        "limits.memory": "5Ti",
        "persistentvolumeclaims": "20",
        "requests.storage": "20Ti",
    }
    # tenant-bar names an admin (dave): its admins group gets the RoleBinding.
    binding = bar.one(K8S_ROLE_BINDING, "tenant-bar-admins")
    assert binding.inputs["subjects"][0]["name"] == "tenant-bar-admins"
    assert bar.one(K8S_RESERVATION, "tenant-bar-reservation").inputs["spec"]["reservedNodes"] == [
        "gpu-09",
        "gpu-10",
        "gpu-11",
        "gpu-12",
    ]


def test_tenant_without_admins_gets_no_role_binding(mocks: Recorder, tmp_path: Path) -> None:
    def no_admins(data: dict[str, Any]) -> None:
        data["identity"]["admins"] = []

    bar = _deploy(mocks, _variant(tmp_path, "tenant-bar", no_admins))
    assert bar.of_type(K8S_ROLE_BINDING) == []
    assert bar.one(K8S_NAMESPACE, "tenant-bar-namespace")


# --- on-demand: no nodes, no Reservation, no binding ---------------------------------------------


def test_on_demand_tenant_has_no_reservation_and_no_binding(
    mocks: Recorder, tmp_path: Path
) -> None:
    def on_demand(data: dict[str, Any]) -> None:
        data["contract"]["partition_type"] = "on-demand"
        del data["reservation"]["nodes"]

    deployed = _deploy(mocks, _variant(tmp_path, "tenant-foo", on_demand))
    for kind in (RESERVATION, K8S_RESERVATION, K8S_BINDING):
        assert deployed.of_type(kind) == [], kind
    namespace = deployed.one(K8S_NAMESPACE, "tenant-foo-namespace")
    assert namespace.dependencies == frozenset()
    assert "reservation" not in deployed.outputs
    # Everything else is still there.
    children = {r.name for r in mocks.children(deployed.one(NAMESPACE, "tenant-foo"))}
    assert children == {name for _, name in FOO_CHILDREN[NAMESPACE]} - {"tenant-foo-binding"}
    assert deployed.one(K8S_RELEASE, "tenant-foo-release")


# --- the fixture ---------------------------------------------------------------------------------


def test_mocks_are_restored_after_use() -> None:
    from pulumi.runtime import settings

    before = (settings.SETTINGS.monitor, settings.SETTINGS.dry_run, settings.get_root_resource())
    with pulumi_mocks() as recorder:
        assert settings.SETTINGS.monitor is recorder.monitor
        assert settings.get_root_resource() is not None
    after = (settings.SETTINGS.monitor, settings.SETTINGS.dry_run, settings.get_root_resource())
    assert after == before


def test_slurm_accounting_is_the_runbooks(foo: Deployment) -> None:
    account = foo.one(SLURM_ACCOUNT, "tenant-foo-account").inputs
    assert (account["name"], account["fairshare"], account["grp_tres_gpus"]) == (
        "tenant-foo",
        300,
        64,
    )
    assert account["grp_jobs"] == 200
    assert (account["qos"], account["default_qos"]) == (
        ["normal-foo", "interactive-foo"],
        "normal-foo",
    )
    team = foo.one(SLURM_ACCOUNT, "tenant-foo-account-ml-team-foo").inputs
    assert (team["parent"], team["fairshare"]) == ("tenant-foo", 200)
    alice = foo.one(SLURM_USER, "tenant-foo-user-alice").inputs
    assert (alice["account"], alice["max_jobs"], alice["grp_tres_mins_gpus"]) == (
        "ml-team-foo",
        20,
        240000,
    )
    normal = foo.one(SLURM_QOS, "tenant-foo-qos-normal-foo").inputs
    assert (normal["priority"], normal["grp_tres_gpus"], normal["max_wall"]) == (
        100,
        64,
        "1-00:00:00",
    )
    assert normal["flags"] == ["DenyOnLimit"]
    interactive = foo.one(SLURM_QOS, "tenant-foo-qos-interactive-foo").inputs
    assert (interactive["priority"], interactive["grp_tres_gpus"]) == (200, 8)
    assert (interactive["max_wall"], interactive["preempt_mode"]) == ("04:00:00", "off")
    # Never preempted (runbook 4c): exempt for its wall limit; the normal QoS is not exempt.
    assert (interactive["preempt_exempt_time"], normal.get("preempt_exempt_time")) == (
        "04:00:00",
        None,
    )
    partition = foo.one(SLURM_PARTITION, "tenant-foo-partition").inputs
    # Every account of the tenant: Slurm matches a job's own account, not its parents.
    assert (partition["nodes"], partition["allow_accounts"]) == (
        "gpu-[01-08]",
        ["tenant-foo", "ml-team-foo"],
    )
    assert (partition["max_time"], partition["oversubscribe"]) == ("1-00:00:00", "EXCLUSIVE")
    namespace = {r.urn for r in foo.recorder.children(foo.one(NAMESPACE, "tenant-foo"))}
    reservation = foo.one(K8S_RESERVATION, "tenant-foo-reservation")
    assert (
        namespace | {reservation.urn}
        <= foo.one(SLURM_QOS, "tenant-foo-qos-normal-foo").dependencies
    )
    assert reservation.urn in foo.one(SLURM_PARTITION, "tenant-foo-partition").dependencies


def test_weka_storage_is_an_org_of_its_own_after_identity(foo: Deployment) -> None:
    org = foo.one(WEKA_ORG, "tenant-foo-org")
    assert org.inputs["name"] == "tenant-foo"
    home = foo.one(WEKA_FS, "tenant-foo-home").inputs
    scratch = foo.one(WEKA_FS, "tenant-foo-scratch").inputs
    assert (home["name"], home["total_capacity"]) == ("tenant-foo-home", 5 * 10**12)
    assert (scratch["name"], scratch["total_capacity"]) == ("tenant-foo-scratch", 50 * 10**12)
    assert scratch["allow_delete_without_snapshot"] is False
    quota = foo.one(WEKA_QUOTA, "tenant-foo-scratch-quota").inputs
    assert (quota["path"], quota["hard_limit_bytes"], quota["soft_limit_bytes"]) == (
        "/tenant-foo",
        50 * 10**12,
        45 * 10**12,
    )
    identity = {r.urn for r in foo.recorder.children(foo.one(IDENTITY, "tenant-foo"))}
    assert identity <= org.dependencies
    assert foo.one(WEKA_USER, "tenant-foo-csi-user").inputs["role"] == "CSI"
    storage_class = foo.one(K8S_STORAGE_CLASS, "tenant-foo-storage-class").inputs
    assert storage_class["provisioner"] == "csi.weka.io"
    assert storage_class["reclaimPolicy"] == "Retain"
    assert storage_class["allowVolumeExpansion"] is True
    pvc = foo.one(K8S_PVC, "tenant-foo-pvc-training-scratch").inputs
    assert pvc["spec"]["resources"]["requests"] == {"storage": "10Ti"}
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def _directories(deployment: Deployment) -> dict[str, tuple[str, str, int, int, str]]:
    """Every Weka directory declared: resource name -> (filesystem, path, uid, gid, mode)."""
    return {
        r.name: (
            r.inputs["filesystem"],
            r.inputs["path"],
            r.inputs["uid"],
            r.inputs["gid"],
            r.inputs["mode"],
        )
        for r in deployment.of_type(WEKA_DIR)
    }


def test_org_tenant_homes_are_per_user_directories_with_quotas(foo: Deployment) -> None:
    assert _directories(foo) == {
        "tenant-foo-dir-home": ("tenant-foo-home", "/", 0, 4099, "0750"),
        "tenant-foo-dir-home-alice": ("tenant-foo-home", "/alice", 2147, 4099, "0700"),
        "tenant-foo-dir-home-bob": ("tenant-foo-home", "/bob", 2148, 4099, "0700"),
        "tenant-foo-dir-home-carol": ("tenant-foo-home", "/carol", 2149, 4099, "0700"),
        "tenant-foo-dir-scratch": ("tenant-foo-scratch", "/tenant-foo", 0, 4099, "2770"),
    }
    alice_dir = foo.one(WEKA_DIR, "tenant-foo-dir-home-alice")
    # Runbook 4e: weka fs quota set --path /home/alice --hard 100GB --soft 90GB
    alice = foo.one(WEKA_QUOTA, "tenant-foo-home-alice-quota")
    assert (alice.inputs["path"], alice.inputs["hard_limit_bytes"]) == ("/alice", 100 * 10**9)
    assert alice.inputs["soft_limit_bytes"] == 90 * 10**9
    assert alice.inputs["owner"] == "tenant-foo"
    assert alice_dir.urn in alice.dependencies
    # A home follows the identity layer through the directory it is in, not by an edge to each
    # user: a tenant of N users would otherwise hold N x N edges in every checkpoint.
    home_dir = foo.one(WEKA_DIR, "tenant-foo-dir-home")
    identity = {r.urn for r in foo.recorder.children(foo.one(IDENTITY, "tenant-foo"))}
    assert home_dir.urn in alice_dir.dependencies
    assert identity <= home_dir.dependencies
    assert not identity & alice_dir.dependencies
    # The tenant's own filesystem holds the data: a removed user's home stays until the
    # filesystem goes, behind the snapshot gate.
    assert alice_dir.retain_on_delete is True
    assert foo.one(WEKA_DIR, "tenant-foo-dir-home").inputs["allow_delete_with_data"] is False
    # The filesystem is the tenant's whole home: no second quota on its root.
    assert not [q for q in foo.of_type(WEKA_QUOTA) if q.name == "tenant-foo-home-quota"]


def test_directory_tenant_gets_its_directories_and_quotas_on_the_shared_filesystems(
    mocks: Recorder,
) -> None:
    bar = _deploy(mocks, load_spec(TENANTS, "tenant-bar", PLATFORM))
    users = {user.username: user.uid for user in load_spec(TENANTS, "tenant-bar", PLATFORM).users}
    assert _directories(bar) == {
        "tenant-bar-dir-home": ("cluster-home", "/tenant-bar", 0, 4102, "0750"),
        "tenant-bar-dir-scratch": ("cluster-scratch", "/tenant-bar", 0, 4102, "2770"),
        **{
            f"tenant-bar-dir-home-{name}": (
                "cluster-home",
                f"/tenant-bar/{name}",
                uid,
                4102,
                "0700",
            )
            for name, uid in users.items()
        },
    }
    assert not bar.of_type(WEKA_ORG)
    assert not bar.of_type(WEKA_FS)
    quotas = {
        q.name: (q.inputs["filesystem_uid"], q.inputs["path"], q.inputs["soft_limit_bytes"],
                 q.inputs["hard_limit_bytes"], q.inputs["org"])
        for q in bar.of_type(WEKA_QUOTA)
    }  # fmt: skip
    assert quotas == {
        "tenant-bar-home-quota": ("fs-shared-home", "/tenant-bar", 0, 400 * 10**9, "Root"),
        "tenant-bar-scratch-quota": (
            "fs-shared-scratch", "/tenant-bar", 18 * 10**12, 20 * 10**12, "Root",
        ),
        **{
            f"tenant-bar-home-{name}-quota": (
                "fs-shared-home", f"/tenant-bar/{name}", 180 * 10**9, 200 * 10**9, "Root",
            )
            for name in users
        },
    }  # fmt: skip
    for directory in bar.of_type(WEKA_DIR):
        # On the shared filesystems nothing is left behind by a destroy; data is refused.
        assert directory.retain_on_delete is False
        assert directory.inputs["allow_delete_with_data"] is False


# --- offboarding ---------------------------------------------------------------------------------


def test_the_offboarding_gate_depends_on_every_other_resource(foo: Deployment) -> None:
    # destroy deletes dependents first: the gate goes first, and while it refuses nothing goes.
    gate = foo.one(GATE, "tenant-foo-gate")
    custom = {r.urn for r in foo.recorder.resources if r.custom and r.read_id is None}
    assert custom - {gate.urn} <= gate.dependencies
    assert gate.inputs["accounts"] == ["tenant-foo", "ml-team-foo"]
    assert gate.inputs["lifecycle"] == {
        "stage": "active",
        "next_stage": "frozen",
        "signed_off": False,
        "rehearsal": False,
        "abandoned": False,
    }


def test_tenant_level_objects_record_the_stage_and_team_accounts_do_not(foo: Deployment) -> None:
    gated = [
        foo.one(SLURM_ACCOUNT, "tenant-foo-account"),
        foo.one(SLURM_QOS, "tenant-foo-qos-normal-foo"),
        foo.one(SLURM_PARTITION, "tenant-foo-partition"),
        foo.one(AUTHENTIK_GROUP, "tenant-foo-group"),
    ]
    for resource in gated:
        assert resource.inputs["lifecycle"]["stage"] == "active", resource.name
    assert foo.one(SLURM_ACCOUNT, "tenant-foo-account-ml-team-foo").inputs.get("lifecycle") is None


def _at_stage(stage: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["lifecycle"]["stage"] = stage

    return edit


def test_frozen_blocks_every_account_and_downs_the_partition(
    tmp_path: Path, mocks: Recorder
) -> None:
    frozen = _deploy(mocks, _variant(tmp_path, "tenant-foo", _at_stage("frozen")))
    for name in ("tenant-foo-account", "tenant-foo-account-ml-team-foo"):
        account = frozen.one(SLURM_ACCOUNT, name).inputs
        assert (account["grp_jobs"], account["grp_submit_jobs"]) == (0, 0), name
    assert frozen.one(SLURM_PARTITION, "tenant-foo-partition").inputs["state"] == "DOWN"
    assert frozen.one(GATE, "tenant-foo-gate").inputs["lifecycle"]["next_stage"] == "drained"


def test_active_has_the_contracts_limits_and_the_partition_up(foo: Deployment) -> None:
    account = foo.one(SLURM_ACCOUNT, "tenant-foo-account").inputs
    assert (account["grp_jobs"], account.get("grp_submit_jobs")) == (200, None)
    team = foo.one(SLURM_ACCOUNT, "tenant-foo-account-ml-team-foo").inputs
    assert (team.get("grp_jobs"), team.get("grp_submit_jobs")) == (None, None)
    assert foo.one(SLURM_PARTITION, "tenant-foo-partition").inputs["state"] == "UP"


def test_archives_are_protected_and_depend_on_nothing(tmp_path: Path, mocks: Recorder) -> None:
    archived = _deploy(mocks, _variant(tmp_path, "tenant-foo", _at_stage("archived")))
    archives = archived.of_type(ARCHIVE)
    assert sorted(a.inputs["kind"] for a in archives) == ["associations", "jobs", "logs", "steps"]
    retention = archived.one(RETENTION, "tenant-foo")
    for archive in archives:
        # destroy --exclude-protected keeps what a protected resource depends on: nothing here.
        assert archive.protect, archive.name
        assert archive.dependencies == frozenset(), archive.name
        assert archive.parent == retention.urn
    namespace = archived.one(K8S_NAMESPACE, "tenant-foo-namespace")
    annotations = namespace.inputs["metadata"]["annotations"]
    assert annotations["gpu-tenants.example.io/retained"] == "jobs,steps,associations,logs"
    # The stage the next `up` may move on from by one only.
    assert annotations["gpu-tenants.example.io/lifecycle-stage"] == "archived"
    # The stage after archived is what the gate asks for next.
    assert archived.one(GATE, "tenant-foo-gate").inputs["lifecycle"]["next_stage"] == "snapshotted"


def test_at_stage_destroy_users_become_protected_disabled_tombstones(
    tmp_path: Path, mocks: Recorder
) -> None:
    def signed_off(data: dict[str, Any]) -> None:
        data["lifecycle"].update(
            stage="destroy",
            sign_off={
                "by": "Erin Operator",
                "date": "2026-11-30",
                "ticket": "OPS-1",
                "confirmation": {"kind": "customer", "by": "Lee Chen"},
            },
        )

    destroyed = _deploy(mocks, _variant(tmp_path, "tenant-foo", signed_off))
    users = destroyed.of_type(AUTHENTIK_USER)
    assert len(users) == 3
    for user in users:
        assert (user.inputs["active"], user.inputs["groups"], user.protect) == (False, [], True)
        assert user.dependencies == frozenset(), user.name
    gate = destroyed.one(GATE, "tenant-foo-gate").inputs["lifecycle"]
    assert (gate["stage"], gate["signed_off"], gate.get("next_stage")) == ("destroy", True, None)
    # Runbook 5c: even with the users disabled, their keys are taken off the login pods.
    keys = destroyed.one(K8S_SECRET, "tenant-foo-authorized-keys")
    assert reveal(keys.inputs["stringData"]) == {}
    assert destroyed.outputs["ssh_config"] == {}


UPLOADED = "pulumi-python:dynamic/weka:UploadedSnapshot"
DIRECTORY_COPY = "pulumi-python:dynamic/retention:DirectoryCopy"


def test_snapshotted_uploads_each_own_filesystem_and_gates_it_on_the_locator(
    tmp_path: Path, mocks: Recorder
) -> None:
    snapshotted = _deploy(mocks, _variant(tmp_path, "tenant-foo", _at_stage("snapshotted")))
    uploads = {u.inputs["filesystem"]: u for u in snapshotted.of_type(UPLOADED)}
    assert sorted(uploads) == ["tenant-foo-home", "tenant-foo-scratch"]
    for upload in uploads.values():
        assert upload.protect
        assert upload.dependencies == frozenset()
        assert (upload.inputs["org"], upload.inputs["object_store"]) == ("tenant-foo", "retention")
    release = snapshotted.one(K8S_RELEASE, "tenant-foo-release")
    assert release.inputs["spec"]["values"]["replicas"] == 0
    assert snapshotted.one(LOGIN_READY, "tenant-foo-ready").inputs["replicas"] == 0


def test_snapshotted_copies_a_directory_tenants_own_directories(
    tmp_path: Path, mocks: Recorder
) -> None:
    bar = _deploy(mocks, _variant(tmp_path, "tenant-bar", _at_stage("snapshotted")))
    copies = {c.inputs["filesystem"]: c for c in bar.of_type(DIRECTORY_COPY)}
    assert sorted(copies) == ["cluster-home", "cluster-scratch"]
    assert {c.inputs["path"] for c in copies.values()} == {"/tenant-bar"}
    assert all(c.protect and not c.dependencies for c in copies.values())
    assert bar.of_type(UPLOADED) == []


def test_an_earlier_releases_storage_class_keeps_the_secret_names_it_has() -> None:
    """Its parameters cannot change in place, and a preview cannot plan making it again."""
    explicit = {
        "filesystemName": "tenant-foo-scratch",
        "csi.storage.k8s.io/provisioner-secret-name": "weka-tenant-foo-creds",
        "csi.storage.k8s.io/provisioner-secret-namespace": "tenant-foo",
    }
    templated = {**explicit, "csi.storage.k8s.io/provisioner-secret-namespace": "${pvc.namespace}"}
    assert legacy_class_parameters("tenant-foo", {"weka-tenant-foo": explicit}) == explicit
    assert legacy_class_parameters("tenant-foo", {"weka-tenant-foo": templated}) is None
    assert legacy_class_parameters("tenant-foo", {"weka-tenant-bar": explicit}) is None
