"""Runbook step 3: the tenant's namespace with restricted pod security, its quota and defaults, the
ReservationBinding that puts its pods on its nodes, the network policies, the admins' Role and
RoleBinding and the admission policy that keeps them and every claim within the tenant
(`namespace_guard`), and the LDAP bind Secret copied into it (the runbook's sidebar: the login
pod reads the Secret from its own namespace, not from `auth`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi

from providers.kubernetes.workloads import INSTANCE_LABEL
from tenant_stack.annotations import (
    REHEARSAL_ANNOTATION,
    RETAINED_ANNOTATION,
    STAGE_ANNOTATION,
    TENANT_NAMESPACE_LABEL,
)
from tenant_stack.components.kubernetes_objects import (
    SECRET_FIELDS,
    KubernetesObject,
    object_metadata,
)
from tenant_stack.components.login_pod import SSH_PORT
from tenant_stack.components.namespace_guard import (
    ADMIN_RULES,
    admission_policy,
    admission_policy_binding,
)

TYPE = "gpu-tenants:namespace:TenantNamespace"
# Which device plugin resource Multus asks for a pod that names the network.
RESOURCE_NAME_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
POD_SECURITY = ("enforce", "audit", "warn")


@dataclass(frozen=True)
class Quota:
    gpus: int
    requests_cpu: str
    requests_memory: str
    limits_memory: str
    persistent_volume_claims: int
    requests_storage: str


@dataclass(frozen=True)
class ContainerDefaults:
    cpu_limit: str
    memory_limit: str
    cpu_request: str
    memory_request: str


@dataclass(frozen=True)
class Egress:
    """Where the tenant's pods may connect outside their namespace: a namespace and its ports
    as (port, protocol)."""

    namespace: str
    ports: list[tuple[int, str]]


@dataclass(frozen=True)
class InfiniBandPartition:
    """The tenant's InfiniBand partition, as its pods' network: `pkey` in the fabric, VFs of
    the device plugin's `resource_name`, addresses from the nv-ipam pool `ipam_pool`."""

    pkey: int
    resource_name: str
    ipam_pool: str


@dataclass(frozen=True)
class TenantNamespaceArgs:
    tenant: str
    quota: Quota
    container_defaults: ContainerDefaults
    # None for on-demand and spot tenants, who hold no Reservation to bind to.
    reservation_name: pulumi.Input[str] | None
    # Namespaces the tenant's pods may be reached from, and may reach, besides their own (which
    # is open both ways: the runbook's "tenant-internal").
    ingress_from: list[str]
    egress: list[Egress]
    admins_group: str | None
    # The one StorageClass a claim in the namespace may use (the admission policy holds it).
    storage_class: str
    # The DNS names the admins' Services and Ingresses may claim: this and names under it.
    dns_subdomain: str
    login_release: str  # the stack's login release, whose label the admins may not use
    # The cluster's pod network: the login pods take SSH from everywhere but there.
    cluster_cidr: str
    login_runtime_class: str  # exempt from Pod Security, so the release's pods' only
    ldap_bind_secret_name: str
    # The platform's LDAP bind Secret's data, read from the auth namespace by the program.
    ldap_bind_data: pulumi.Input[dict[str, str]]
    retained: list[str]  # recorded as RETAINED_ANNOTATION once `after` has made them
    stage: str  # recorded as STAGE_ANNOTATION
    rehearsal: bool  # recorded as REHEARSAL_ANNOTATION
    # Created after this; deleted before it (destroy runs in reverse dependency order).
    after: list[pulumi.Resource]
    partition: InfiniBandPartition | None = None  # `pkey` isolation's network


def isolation_policy_name(tenant: str) -> str:
    """The name of the tenant's ValidatingAdmissionPolicy and of its binding (cluster-wide)."""
    return f"{tenant}-isolation"


def partition_network_name(tenant: str) -> str:
    """The NetworkAttachmentDefinition a pod names (k8s.v1.cni.cncf.io/networks) to join the
    tenant's InfiniBand partition."""
    return f"{tenant}-ib"


def partition_network(tenant: str, partition: InfiniBandPartition) -> dict[str, Any]:
    """The ib-sriov CNI config of the tenant's partition, with ib-kubernetes managing its key
    (it adds each pod's GUID to the partition in UFM) and RDMA isolated to the pod's VF."""
    config = {
        "cniVersion": "0.3.1",
        "name": partition_network_name(tenant),
        "type": "ib-sriov",
        "pkey": f"{partition.pkey:#06x}",
        "link_state": "enable",
        "rdmaIsolation": True,
        "ibKubernetesEnabled": True,
        "ipam": {"type": "nv-ipam", "poolName": partition.ipam_pool},
    }
    return {"spec": {"config": json.dumps(config, sort_keys=True)}}


def workload_labels(tenant: str) -> dict[str, str]:
    """The label every tenant workload carries; the ReservationBinding selects on it."""
    return {"app.kubernetes.io/managed-by": tenant}


class TenantNamespace(pulumi.ComponentResource):
    name: pulumi.Output[str]
    ldap_bind_secret: pulumi.Output[str]

    def __init__(
        self, name: str, args: TenantNamespaceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        tenant = args.tenant
        namespace = KubernetesObject(
            f"{name}-namespace",
            api_version="v1",
            kind="Namespace",
            metadata=object_metadata(
                tenant,
                labels={
                    TENANT_NAMESPACE_LABEL: tenant,
                    **{f"pod-security.kubernetes.io/{mode}": "restricted" for mode in POD_SECURITY},
                },
                annotations={
                    STAGE_ANNOTATION: args.stage,
                    REHEARSAL_ANNOTATION: str(args.rehearsal).lower(),
                    **({RETAINED_ANNOTATION: ",".join(args.retained)} if args.retained else {}),
                },
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        ns = namespace.metadata.apply(lambda m: str(m["name"]))
        child = pulumi.ResourceOptions(parent=self)

        def inside(
            suffix: str, api_version: str, kind: str, object_name: str, manifest: dict[str, Any]
        ) -> KubernetesObject:
            return KubernetesObject(
                f"{name}-{suffix}",
                api_version=api_version,
                kind=kind,
                metadata=object_metadata(object_name, ns),
                manifest=manifest,
                opts=child,
            )

        q = args.quota
        hard = {
            "requests.nvidia.com/gpu": str(q.gpus),
            "requests.cpu": q.requests_cpu,
            "requests.memory": q.requests_memory,
            "limits.memory": q.limits_memory,
            "persistentvolumeclaims": str(q.persistent_volume_claims),
            "requests.storage": q.requests_storage,
        }
        inside("quota", "v1", "ResourceQuota", f"{tenant}-quota", {"spec": {"hard": hard}})
        d = args.container_defaults
        limits = {
            "type": "Container",
            "default": {"cpu": d.cpu_limit, "memory": d.memory_limit},
            "defaultRequest": {"cpu": d.cpu_request, "memory": d.memory_request},
        }
        inside("defaults", "v1", "LimitRange", f"{tenant}-defaults", {"spec": {"limits": [limits]}})
        if args.reservation_name is not None:
            binding = {
                "reservationName": args.reservation_name,
                "podSelector": {"matchLabels": workload_labels(tenant)},
                "injectAffinity": True,
                "injectToleration": True,
            }
            inside(
                "binding",
                "scheduling.example.io/v1alpha1",
                "ReservationBinding",
                f"{tenant}-binding",
                {"spec": binding},
            )
        for suffix, spec in network_policies(tenant, args).items():
            inside(suffix, "networking.k8s.io/v1", "NetworkPolicy", f"{tenant}-{suffix}", spec)
        if args.partition is not None:
            KubernetesObject(
                f"{name}-partition",
                api_version="k8s.cni.cncf.io/v1",
                kind="NetworkAttachmentDefinition",
                metadata=object_metadata(
                    partition_network_name(tenant),
                    ns,
                    annotations={RESOURCE_NAME_ANNOTATION: args.partition.resource_name},
                ),
                manifest=partition_network(tenant, args.partition),
                opts=child,
            )
        if args.admins_group:
            rbac = "rbac.authorization.k8s.io"
            role = inside(
                "admins-role", f"{rbac}/v1", "Role", f"{tenant}-admins", {"rules": ADMIN_RULES}
            )
            # Named apart from the runbook's `<slug>-admins` (to ClusterRole `edit`): a binding's
            # roleRef cannot change, so a stack made before binds anew under this name and its
            # old binding goes, and a tenant imported from the runbook keeps nothing it had.
            inside(
                "admins",
                f"{rbac}/v1",
                "RoleBinding",
                f"{tenant}-tenant-admins",
                {
                    "subjects": [{"kind": "Group", "name": args.admins_group, "apiGroup": rbac}],
                    "roleRef": {
                        "kind": "Role",
                        "name": role.metadata.apply(lambda m: str(m["name"])),
                        "apiGroup": rbac,
                    },
                },
            )
        admission = "admissionregistration.k8s.io/v1"
        policy = KubernetesObject(
            f"{name}-admission-policy",
            api_version=admission,
            kind="ValidatingAdmissionPolicy",
            metadata=object_metadata(isolation_policy_name(tenant)),
            manifest={
                "spec": admission_policy(
                    tenant,
                    args.storage_class,
                    args.admins_group,
                    args.dns_subdomain,
                    args.login_release,
                    args.login_runtime_class,
                ),
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
        )
        KubernetesObject(
            f"{name}-admission-binding",
            api_version=admission,
            kind="ValidatingAdmissionPolicyBinding",
            metadata=object_metadata(isolation_policy_name(tenant)),
            manifest={
                "spec": policy.metadata.apply(lambda m: admission_policy_binding(str(m["name"])))
            },
            opts=child,
        )
        copy = KubernetesObject(
            f"{name}-ldap-bind",
            api_version="v1",
            kind="Secret",
            metadata=object_metadata(args.ldap_bind_secret_name, ns),
            manifest={"type": "Opaque", "data": pulumi.Output.secret(args.ldap_bind_data)},
            secret_fields=SECRET_FIELDS,
            opts=child,
        )
        self.name = ns
        self.ldap_bind_secret = copy.metadata.apply(lambda m: str(m["name"]))
        self.register_outputs({"name": self.name, "ldap_bind_secret": self.ldap_bind_secret})


def network_policies(tenant: str, args: TenantNamespaceArgs) -> dict[str, dict[str, Any]]:
    """The deny-all policy, the allow policy by purpose and the login pods' SSH from outside
    the cluster (docs/design.md, "NetworkPolicy by purpose"), by name suffix."""

    def namespace_peer(namespace: str) -> dict[str, Any]:
        return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}

    def peers(namespaces: list[str]) -> list[dict[str, Any]]:
        return [namespace_peer(ns) for ns in [tenant, *namespaces]]

    both = ["Ingress", "Egress"]
    egress = [
        {"to": peers([])},
        *(
            {
                "to": [namespace_peer(rule.namespace)],
                "ports": [{"port": port, "protocol": proto} for port, proto in rule.ports],
            }
            for rule in args.egress
        ),
    ]
    # Users log in from outside the cluster, which the runbook's policies leave out: a network
    # plugin that enforces them sees a user's address (or a node's, after kube-proxy's
    # masquerade) and refuses it. Pods of the cluster reach sshd only as the allow policy says.
    login_ssh = {
        "podSelector": {"matchLabels": {INSTANCE_LABEL: args.login_release}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [args.cluster_cidr]}}],
                "ports": [{"port": SSH_PORT, "protocol": "TCP"}],
            }
        ],
    }
    return {
        "deny-all": {"spec": {"podSelector": {}, "policyTypes": both}},
        "login-ssh": {"spec": login_ssh},
        "allow": {
            "spec": {
                "podSelector": {},
                "policyTypes": both,
                "ingress": [{"from": peers(args.ingress_from)}],
                "egress": egress,
            }
        },
    }
