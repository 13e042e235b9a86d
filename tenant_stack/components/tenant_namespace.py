"""Runbook step 3: the tenant's namespace with restricted pod security, its quota and defaults, the
ReservationBinding that puts its pods on its nodes, the network policies, the admins' RoleBinding,
and the LDAP bind Secret copied into it (the runbook's sidebar: the login pod reads the Secret
from its own namespace, not from `auth`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from tenant_stack.components.kubernetes_objects import object_metadata

TYPE = "gpu-tenants:namespace:TenantNamespace"
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
    ldap_bind_secret_name: str
    # The platform's LDAP bind Secret's data, read from the auth namespace by the program.
    ldap_bind_data: pulumi.Input[dict[str, str]]
    # Created after this; deleted before it (destroy runs in reverse dependency order).
    after: list[pulumi.Resource]


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
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=object_metadata(
                tenant,
                labels={
                    "tenant": tenant,
                    **{f"pod-security.kubernetes.io/{mode}": "restricted" for mode in POD_SECURITY},
                },
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        ns = namespace.metadata.apply(lambda m: str(m["name"]))
        child = pulumi.ResourceOptions(parent=self)

        def meta(object_name: str) -> k8s.meta.v1.ObjectMetaArgs:
            return object_metadata(object_name, ns)

        q = args.quota
        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=meta(f"{tenant}-quota"),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(
                hard={
                    "requests.nvidia.com/gpu": str(q.gpus),
                    "requests.cpu": q.requests_cpu,
                    "requests.memory": q.requests_memory,
                    "limits.memory": q.limits_memory,
                    "persistentvolumeclaims": str(q.persistent_volume_claims),
                    "requests.storage": q.requests_storage,
                }
            ),
            opts=child,
        )
        d = args.container_defaults
        k8s.core.v1.LimitRange(
            f"{name}-defaults",
            metadata=meta(f"{tenant}-defaults"),
            spec=k8s.core.v1.LimitRangeSpecArgs(
                limits=[
                    k8s.core.v1.LimitRangeItemArgs(
                        type="Container",
                        default={"cpu": d.cpu_limit, "memory": d.memory_limit},
                        default_request={"cpu": d.cpu_request, "memory": d.memory_request},
                    )
                ]
            ),
            opts=child,
        )
        if args.reservation_name is not None:
            self._binding(name, tenant, args.reservation_name, meta, child)
        self._network_policies(name, tenant, args, meta, child)
        if args.admins_group:
            k8s.rbac.v1.RoleBinding(
                f"{name}-admins",
                metadata=meta(f"{tenant}-admins"),
                subjects=[
                    k8s.rbac.v1.SubjectArgs(
                        kind="Group", name=args.admins_group, api_group="rbac.authorization.k8s.io"
                    )
                ],
                role_ref=k8s.rbac.v1.RoleRefArgs(
                    kind="ClusterRole", name="edit", api_group="rbac.authorization.k8s.io"
                ),
                opts=child,
            )
        copy = k8s.core.v1.Secret(
            f"{name}-ldap-bind",
            metadata=meta(args.ldap_bind_secret_name),
            type="Opaque",
            data=pulumi.Output.secret(args.ldap_bind_data),
            opts=child,
        )
        self.name = ns
        self.ldap_bind_secret = copy.metadata.apply(lambda m: str(m["name"]))
        self.register_outputs({"name": self.name, "ldap_bind_secret": self.ldap_bind_secret})

    def _binding(
        self,
        name: str,
        tenant: str,
        reservation_name: pulumi.Input[str],
        meta: Callable[[str], k8s.meta.v1.ObjectMetaArgs],
        child: pulumi.ResourceOptions,
    ) -> None:
        k8s.apiextensions.CustomResource(
            f"{name}-binding",
            api_version="scheduling.example.io/v1alpha1",
            kind="ReservationBinding",
            metadata=meta(f"{tenant}-binding"),
            spec={
                "reservationName": reservation_name,
                "podSelector": {"matchLabels": workload_labels(tenant)},
                "injectAffinity": True,
                "injectToleration": True,
            },
            opts=child,
        )

    def _network_policies(
        self,
        name: str,
        tenant: str,
        args: TenantNamespaceArgs,
        meta: Callable[[str], k8s.meta.v1.ObjectMetaArgs],
        child: pulumi.ResourceOptions,
    ) -> None:
        def namespace_peer(namespace: str) -> k8s.networking.v1.NetworkPolicyPeerArgs:
            return k8s.networking.v1.NetworkPolicyPeerArgs(
                namespace_selector=k8s.meta.v1.LabelSelectorArgs(
                    match_labels={"kubernetes.io/metadata.name": namespace}
                )
            )

        def peers(namespaces: list[str]) -> list[k8s.networking.v1.NetworkPolicyPeerArgs]:
            return [namespace_peer(ns) for ns in [tenant, *namespaces]]

        everything = k8s.meta.v1.LabelSelectorArgs()
        k8s.networking.v1.NetworkPolicy(
            f"{name}-deny-all",
            metadata=meta(f"{tenant}-deny-all"),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=everything, policy_types=["Ingress", "Egress"]
            ),
            opts=child,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-allow",
            metadata=meta(f"{tenant}-allow"),
            spec=k8s.networking.v1.NetworkPolicySpecArgs(
                pod_selector=everything,
                policy_types=["Ingress", "Egress"],
                ingress=[
                    k8s.networking.v1.NetworkPolicyIngressRuleArgs(from_=peers(args.ingress_from))
                ],
                egress=[
                    k8s.networking.v1.NetworkPolicyEgressRuleArgs(to=peers([])),
                    *(
                        k8s.networking.v1.NetworkPolicyEgressRuleArgs(
                            to=[namespace_peer(rule.namespace)],
                            ports=[
                                k8s.networking.v1.NetworkPolicyPortArgs(port=port, protocol=proto)
                                for port, proto in rule.ports
                            ],
                        )
                        for rule in args.egress
                    ),
                ],
            ),
            opts=child,
        )
