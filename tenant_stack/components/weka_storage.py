"""Runbook steps 4e and 6: the tenant's Weka storage. With strict isolation, an organization of its
own holding home and scratch filesystems; with directory isolation, its directories on the
platform's shared filesystems. The directories (made through the mount host, owned by the
tenant's group), the per-user home quotas and the tenant's scratch quota (soft and hard), the CSI
driver's user and its Secret in csi.weka.io's format, the StorageClass (Retain, expandable) and
the PVCs.

Where the directories are, with G the tenant's gid:

    org        <slug>-home:/                root:G 0750   (the filesystem is the tenant's own)
               <slug>-home:/<user>          uid:G  0700   quota: home_per_user
               <slug>-scratch:/<slug>       root:G 2770   quota: scratch
    directory  <home fs>:/<slug>            root:G 0750   quota: home_capacity (hard)
               <home fs>:/<slug>/<user>     uid:G  0700   quota: home_per_user
               <scratch fs>:/<slug>         root:G 2770   quota: scratch

The login pod mounts the home directory as /home and the scratch filesystem as /scratch (runbook
5a), so /home/alice is alice's and /scratch/<slug> the tenant's, as runbook 4e names them.
A user's home directory in the tenant's own filesystem is left in place when the user is removed
(`retain_on_delete`): its data goes only with the filesystem, behind the snapshot gate. On the
shared filesystems the directories are removed at destroy only when empty, or for a rehearsal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi

from providers.weka.csi import (
    CLAIM_NAMESPACE,
    WEKA_CSI_DRIVER,
    csi_secret_data,
    storage_class_parameters,
)
from providers.weka.resources import (
    WekaDirectory,
    WekaDirectoryQuota,
    WekaFilesystem,
    WekaOrganization,
    WekaOrgUser,
)
from providers.weka.settings import ROOT_ORG
from tenant_stack.components.kubernetes_objects import (
    SECRET_FIELDS,
    KubernetesObject,
    object_metadata,
)

TYPE = "gpu-tenants:storage:WekaStorage"
ROOT_UID = 0


@dataclass(frozen=True)
class OrgCredentials:
    """Whom the Weka resources act as: the tenant org's admin, or the cluster admin (Root)."""

    org: pulumi.Input[str]
    username: pulumi.Input[str] | None
    password: pulumi.Input[str] | None


@dataclass(frozen=True)
class SharedFilesystem:
    """One of the platform's shared filesystems in Root (directory isolation)."""

    name: str
    uid: str


@dataclass(frozen=True)
class Place:
    """A filesystem the tenant's directories go on, and the directory that is the tenant's."""

    org: pulumi.Input[str]
    name: pulumi.Input[str]
    uid: pulumi.Input[str]
    path: str  # "/" on the tenant's own filesystem, "/<slug>" on a shared one


@dataclass(frozen=True)
class Claim:
    name: str
    size: str  # a Kubernetes quantity


@dataclass(frozen=True)
class HomeUser:
    username: str
    uid: int


@dataclass(frozen=True)
class WekaStorageArgs:
    tenant: str
    namespace: pulumi.Input[str]
    isolation: str  # "org" or "directory"
    gid: int  # the tenant group's gidNumber: the group of all its directories
    users: list[HomeUser]
    home_capacity: int
    home_soft: int  # per user
    home_hard: int
    scratch_soft: int
    scratch_hard: int
    # Directory isolation: the platform's shared filesystems.
    shared_home: SharedFilesystem | None
    shared_scratch: SharedFilesystem | None
    filesystem_group: str
    api_endpoints: list[str]
    ca_certificate: str | None
    claims: list[Claim]
    delete_without_snapshot: bool
    # Offboarding's copy of the tenant's directory per shared filesystem (its store key), which
    # lets destroy delete a directory that holds data.
    retained_copies: Mapping[str, pulumi.Input[str]]
    # Org isolation: the locator of each own filesystem's uploaded snapshot, and the bucket.
    retained_locators: Mapping[str, pulumi.Input[str]]
    object_store: str
    after: list[pulumi.Resource]
    # Org isolation, an imported tenant: the admin its operator gave the organization by hand.
    org_admin: str | None = None
    # The live StorageClass's parameters, kept as they are where an earlier release named its
    # Secrets outright: parameters cannot change in place, and a preview cannot plan making the
    # class again (`legacy_class_parameters`).
    kept_class_parameters: dict[str, str] | None = None


CLAIM_ACCESS_MODES = ("ReadWriteMany",)


def storage_class_name(tenant: str) -> str:
    return f"weka-{tenant}"


def legacy_class_parameters(
    tenant: str, live: Mapping[str, Mapping[str, str]]
) -> dict[str, str] | None:
    """The parameters of the tenant's live StorageClass when they name its Secrets outright (an
    earlier release's, before `CLAIM_NAMESPACE`), to keep; None when it names them by template
    or does not exist."""
    found = live.get(storage_class_name(tenant))
    if found is None:
        return None
    namespaces = {v for k, v in found.items() if k.endswith("-secret-namespace")}
    return None if namespaces <= {CLAIM_NAMESPACE} else dict(found)


def csi_secret_name(namespace: str) -> str:
    """The CSI Secret of the tenant whose namespace is `namespace` (a tenant's namespace is its
    slug), or with `CLAIM_NAMESPACE`, the template its StorageClass names it by."""
    return f"weka-{namespace}-creds"


class WekaStorage(pulumi.ComponentResource):
    scratch_filesystem: pulumi.Output[str]
    storage_class: pulumi.Output[str]
    csi_secret: pulumi.Output[str]

    def __init__(
        self, name: str, args: WekaStorageArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        if args.isolation == "org":
            credentials, home, scratch = self._own_filesystems(name, args)
        else:
            credentials, home, scratch = _shared_places(args)
        self._directories(name, args, credentials, home, scratch)
        secret = self._csi_secret(name, args, credentials)
        class_name = self._storage_class(name, args, scratch, secret)
        self._claims(name, args, class_name)
        self.scratch_filesystem = pulumi.Output.from_input(scratch.name)
        self.storage_class = class_name
        self.csi_secret = secret.metadata.apply(lambda m: str(m["name"]))
        self.register_outputs(
            {
                "scratch_filesystem": self.scratch_filesystem,
                "storage_class": self.storage_class,
                "csi_secret": self.csi_secret,
            }
        )

    def _own_filesystems(
        self, name: str, args: WekaStorageArgs
    ) -> tuple[OrgCredentials, Place, Place]:
        """Org isolation: the tenant's organization and its home and scratch filesystems."""
        tenant = args.tenant
        org = WekaOrganization(
            f"{name}-org",
            name=tenant,
            total_quota=args.home_capacity + args.scratch_hard,
            admin_username=args.org_admin,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        credentials = OrgCredentials(org.name, org.admin_username, org.admin_password)
        filesystems = {
            kind: WekaFilesystem(
                f"{name}-{kind}",
                name=f"{tenant}-{kind}",
                total_capacity=capacity,
                group_name=args.filesystem_group,
                allow_delete_without_snapshot=args.delete_without_snapshot,
                retained_locator=args.retained_locators.get(f"{tenant}-{kind}", ""),
                # Named once there is an upload to check, so earlier stacks see no change.
                object_store=(
                    args.object_store if f"{tenant}-{kind}" in args.retained_locators else ""
                ),
                org=credentials.org,
                org_admin_username=credentials.username,
                org_admin_password=credentials.password,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for kind, capacity in (("home", args.home_capacity), ("scratch", args.scratch_hard))
        }
        home_fs, scratch_fs = filesystems["home"], filesystems["scratch"]
        home = Place(org.name, home_fs.name, home_fs.id, "/")
        scratch = Place(org.name, scratch_fs.name, scratch_fs.id, f"/{tenant}")
        return credentials, home, scratch

    def _directories(
        self,
        name: str,
        args: WekaStorageArgs,
        credentials: OrgCredentials,
        home: Place,
        scratch: Place,
    ) -> None:
        """The tenant's home directory, one per user, and its scratch directory, each with its
        quota (the home directory's only on a shared filesystem)."""
        tree = _Directories(self, name, args, credentials)
        home_dir = tree.directory("home", home, home.path, ROOT_UID, "0750")
        if args.isolation != "org":
            # The filesystem is the tenant's whole home allowance only when it is its own.
            tree.quota("home", home, home_dir, 0, args.home_capacity)
        for user in args.users:
            suffix = f"home-{user.username}"
            user_path = f"{home.path.rstrip('/')}/{user.username}"
            user_dir = tree.directory(suffix, home, user_path, user.uid, "0700", inside=home_dir)
            tree.quota(suffix, home, user_dir, args.home_soft, args.home_hard)
        scratch_dir = tree.directory("scratch", scratch, scratch.path, ROOT_UID, "2770")
        tree.quota("scratch", scratch, scratch_dir, args.scratch_soft, args.scratch_hard)

    def _csi_secret(
        self, name: str, args: WekaStorageArgs, credentials: OrgCredentials
    ) -> KubernetesObject:
        """The CSI driver's user in the organization, and its Secret in csi.weka.io's format."""
        csi_user = WekaOrgUser(
            f"{name}-csi-user",
            username=f"{args.tenant}-csi",
            role="CSI",
            org=credentials.org,
            org_admin_username=credentials.username,
            org_admin_password=credentials.password,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        return KubernetesObject(
            f"{name}-csi-secret",
            api_version="v1",
            kind="Secret",
            metadata=object_metadata(csi_secret_name(args.tenant), args.namespace),
            secret_fields=SECRET_FIELDS,
            manifest={
                "type": "Opaque",
                "stringData": pulumi.Output.all(
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
            },
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _storage_class(
        self, name: str, args: WekaStorageArgs, scratch: Place, secret: KubernetesObject
    ) -> pulumi.Output[str]:
        """The tenant's StorageClass (Retain, expandable) on its scratch filesystem; its name."""
        storage_class = KubernetesObject(
            f"{name}-storage-class",
            api_version="storage.k8s.io/v1",
            kind="StorageClass",
            metadata=object_metadata(storage_class_name(args.tenant)),
            manifest={
                "provisioner": WEKA_CSI_DRIVER,
                "parameters": args.kept_class_parameters
                or pulumi.Output.from_input(scratch.name).apply(
                    lambda filesystem: storage_class_parameters(
                        csi_secret_name(CLAIM_NAMESPACE), filesystem
                    )
                ),
                # A deleted claim must not delete the tenant's data (runbook 6c).
                "reclaimPolicy": "Retain",
                "volumeBindingMode": "Immediate",
                "allowVolumeExpansion": True,
            },
            # It names its Secret by template, not by the Secret's output: made after it. Its
            # parameters cannot change, so a change makes it again under its name: deleted first
            # (its claims keep their volumes, which name their Secrets themselves).
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[secret], delete_before_replace=True
            ),
        )
        return storage_class.metadata.apply(lambda m: str(m["name"]))

    def _claims(self, name: str, args: WekaStorageArgs, class_name: pulumi.Output[str]) -> None:
        for claim in args.claims:
            KubernetesObject(
                f"{name}-pvc-{claim.name}",
                api_version="v1",
                kind="PersistentVolumeClaim",
                metadata=object_metadata(
                    claim.name,
                    args.namespace,
                    # Binding is the CSI driver's job; up does not wait for it.
                    annotations={"pulumi.com/skipAwait": "true"},
                ),
                manifest={
                    "spec": {
                        "accessModes": list(CLAIM_ACCESS_MODES),
                        "storageClassName": class_name,
                        "resources": {"requests": {"storage": claim.size}},
                    }
                },
                opts=pulumi.ResourceOptions(parent=self),
            )


def _shared_places(args: WekaStorageArgs) -> tuple[OrgCredentials, Place, Place]:
    """Directory isolation: the tenant's directories on the platform's shared filesystems in
    Root, reached as the cluster admin."""
    if args.shared_home is None or args.shared_scratch is None:
        raise ValueError("directory isolation needs the platform's shared filesystems")
    home, scratch = (
        Place(ROOT_ORG, shared.name, shared.uid, f"/{args.tenant}")
        for shared in (args.shared_home, args.shared_scratch)
    )
    return OrgCredentials(ROOT_ORG, None, None), home, scratch


@dataclass(frozen=True)
class _Directories:
    """Declares the tenant's directories and their quotas, as children of `parent`."""

    parent: pulumi.Resource
    name: str
    args: WekaStorageArgs
    credentials: OrgCredentials

    def directory(
        self,
        suffix: str,
        place: Place,
        path: str,
        uid: int,
        mode: str,
        inside: WekaDirectory | None = None,
    ) -> WekaDirectory:
        # A directory inside another depends on that one alone, which depends on the layers
        # before: the same order, through it, without an edge from each of a large tenant's
        # homes to each of its users, which the engine would write into every checkpoint.
        args = self.args
        return WekaDirectory(
            f"{self.name}-dir-{suffix}",
            org=place.org,
            filesystem=place.name,
            path=path,
            uid=uid,
            gid=args.gid,
            mode=mode,
            allow_delete_with_data=args.delete_without_snapshot,
            # Copies are of shared filesystems, whose names are plain strings.
            retained_copy=(
                args.retained_copies.get(place.name, "") if isinstance(place.name, str) else ""
            ),
            opts=pulumi.ResourceOptions(
                parent=self.parent,
                depends_on=[inside] if inside else args.after,
                retain_on_delete=args.isolation == "org" and path != "/",
            ),
        )

    def quota(
        self, suffix: str, place: Place, on: WekaDirectory, soft: int, hard: int
    ) -> WekaDirectoryQuota:
        return WekaDirectoryQuota(
            f"{self.name}-{suffix}-quota",
            owner=self.args.tenant,
            filesystem_uid=place.uid,
            path=on.path,
            hard_limit_bytes=hard,
            soft_limit_bytes=soft,
            org=self.credentials.org,
            org_admin_username=self.credentials.username,
            org_admin_password=self.credentials.password,
            opts=pulumi.ResourceOptions(parent=self.parent, depends_on=[on]),
        )
