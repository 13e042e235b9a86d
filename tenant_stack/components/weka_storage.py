"""Runbook steps 4e and 6: the tenant's Weka storage. With strict isolation, an organization of its
own holding home and scratch filesystems; with directory isolation, its directories on the
platform's shared filesystems. The tenant's scratch quota (soft and hard), the CSI driver's user
and its Secret in csi.weka.io's format, the StorageClass (Retain, expandable) and the PVCs."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from providers.weka import (
    WekaDirectoryQuota,
    WekaFilesystem,
    WekaOrganization,
    WekaOrgUser,
    csi_secret_data,
    storage_class_parameters,
)
from providers.weka.client import ROOT_ORG

TYPE = "gpu-tenants:storage:WekaStorage"


@dataclass(frozen=True)
class OrgCredentials:
    """Whom the Weka resources act as: the tenant org's admin, or the cluster admin (Root)."""

    org: pulumi.Input[str]
    username: pulumi.Input[str] | None
    password: pulumi.Input[str] | None


@dataclass(frozen=True)
class Claim:
    name: str
    size: str  # a Kubernetes quantity


@dataclass(frozen=True)
class WekaStorageArgs:
    tenant: str
    namespace: pulumi.Input[str]
    isolation: str  # "org" or "directory"
    home_capacity: int
    scratch_soft: int
    scratch_hard: int
    # Directory isolation: the platform's shared filesystems (their uids and names).
    shared_scratch_filesystem: str
    shared_scratch_filesystem_uid: str | None
    filesystem_group: str
    api_endpoints: list[str]
    ca_certificate: str | None
    claims: list[Claim]
    delete_without_snapshot: bool
    after: list[pulumi.Resource]


class WekaStorage(pulumi.ComponentResource):
    scratch_filesystem: pulumi.Output[str]
    storage_class: pulumi.Output[str]
    csi_secret: pulumi.Output[str]

    def __init__(
        self, name: str, args: WekaStorageArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        first = pulumi.ResourceOptions(parent=self, depends_on=args.after)
        child = pulumi.ResourceOptions(parent=self)
        tenant = args.tenant
        if args.isolation == "org":
            org = WekaOrganization(
                f"{name}-org",
                name=tenant,
                total_quota=args.home_capacity + args.scratch_hard,
                opts=first,
            )
            credentials = OrgCredentials(org.name, org.admin_username, org.admin_password)
            filesystems = {
                kind: WekaFilesystem(
                    f"{name}-{kind}",
                    name=f"{tenant}-{kind}",
                    total_capacity=capacity,
                    group_name=args.filesystem_group,
                    allow_delete_without_snapshot=args.delete_without_snapshot,
                    org=credentials.org,
                    org_admin_username=credentials.username,
                    org_admin_password=credentials.password,
                    opts=child,
                )
                for kind, capacity in (("home", args.home_capacity), ("scratch", args.scratch_hard))
            }
            scratch_uid: pulumi.Input[str] = filesystems["scratch"].id
            scratch_name: pulumi.Input[str] = filesystems["scratch"].name
            scratch_path = "/"
        else:
            if args.shared_scratch_filesystem_uid is None:
                raise ValueError("directory isolation needs the shared scratch filesystem's uid")
            credentials = OrgCredentials(ROOT_ORG, None, None)
            scratch_uid = args.shared_scratch_filesystem_uid
            scratch_name = args.shared_scratch_filesystem
            scratch_path = f"/{tenant}"
        WekaDirectoryQuota(
            f"{name}-scratch-quota",
            filesystem_uid=scratch_uid,
            path=scratch_path,
            hard_limit_bytes=args.scratch_hard,
            soft_limit_bytes=args.scratch_soft,
            owner=tenant,
            org=credentials.org,
            org_admin_username=credentials.username,
            org_admin_password=credentials.password,
            opts=first,
        )
        csi_user = WekaOrgUser(
            f"{name}-csi-user",
            username=f"{tenant}-csi",
            role="CSI",
            org=credentials.org,
            org_admin_username=credentials.username,
            org_admin_password=credentials.password,
            opts=first,
        )
        secret = k8s.core.v1.Secret(
            f"{name}-csi-secret",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"weka-{tenant}-creds", namespace=args.namespace
            ),
            type="Opaque",
            string_data=pulumi.Output.all(
                csi_user.username, csi_user.password, credentials.org
            ).apply(
                lambda v: csi_secret_data(
                    username=v[0],
                    password=v[1],
                    organization=v[2],
                    endpoints=args.api_endpoints,
                    scheme="https",
                    ca_certificate=args.ca_certificate,
                )
            ),
            opts=child,
        )
        secret_name = secret.metadata.apply(lambda m: str(m["name"]))
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"weka-{tenant}"),
            provisioner="csi.weka.io",
            parameters=pulumi.Output.all(secret_name, args.namespace, scratch_name).apply(
                lambda v: storage_class_parameters(v[0], v[1], v[2])
            ),
            # A deleted claim must not delete the tenant's data (runbook 6c).
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            allow_volume_expansion=True,
            opts=child,
        )
        class_name = storage_class.metadata.apply(lambda m: str(m["name"]))
        for claim in args.claims:
            k8s.core.v1.PersistentVolumeClaim(
                f"{name}-pvc-{claim.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=claim.name,
                    namespace=args.namespace,
                    # Binding is the CSI driver's job; up does not wait for it.
                    annotations={"pulumi.com/skipAwait": "true"},
                ),
                spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
                    access_modes=["ReadWriteMany"],
                    storage_class_name=class_name,
                    resources=k8s.core.v1.VolumeResourceRequirementsArgs(
                        requests={"storage": claim.size}
                    ),
                ),
                opts=child,
            )
        self.scratch_filesystem = pulumi.Output.from_input(scratch_name)
        self.storage_class = class_name
        self.csi_secret = secret_name
        self.register_outputs(
            {
                "scratch_filesystem": self.scratch_filesystem,
                "storage_class": self.storage_class,
                "csi_secret": self.csi_secret,
            }
        )
