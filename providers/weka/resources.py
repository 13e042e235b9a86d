"""The Weka dynamic resources a tenant's storage is made of (types `dynamic/weka:<Name>`).

Passwords are secret both ways: the credential inputs are wrapped as secrets whatever the caller
passes, and the generated passwords are declared `additional_secret_outputs`, so the state holds
them encrypted and `pulumi stack output` shows them only with `--show-secrets`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from providers.weka.directory_provider import DirectoryProvider
from providers.weka.filesystem_provider import FilesystemProvider
from providers.weka.org_user_provider import OrgUserProvider
from providers.weka.organization_provider import OrganizationProvider
from providers.weka.quota_provider import DirectoryQuotaProvider
from providers.weka.settings import ROOT_ORG
from providers.weka.uploaded_snapshot_provider import UploadedSnapshotProvider

__all__ = [
    "WekaDirectory",
    "WekaDirectoryQuota",
    "WekaFilesystem",
    "WekaOrgUser",
    "WekaOrganization",
    "WekaUploadedSnapshot",
]


def _secret_outputs(
    opts: pulumi.ResourceOptions | None, *names: str
) -> pulumi.ResourceOptions | None:
    return pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(additional_secret_outputs=list(names))
    )


def _secret(value: pulumi.Input[str] | None) -> pulumi.Input[str] | None:
    return None if value is None else pulumi.Output.secret(value)


class WekaOrganization(Resource, module="weka", name="Organization"):
    """An organization of its own for a tenant with strict isolation, with its admin user
    `<name>-admin`, or `admin_username` for an organization made by hand that an imported
    tenant keeps. A same-named organization found at create is refused unless it is adopted
    (see OrganizationProvider)."""

    name: pulumi.Output[str]
    ssd_quota: pulumi.Output[int]
    total_quota: pulumi.Output[int]
    admin_username: pulumi.Output[str]
    admin_password: pulumi.Output[str]  # secret

    def __init__(
        self,
        resource_name: str,
        *,
        name: pulumi.Input[str],
        ssd_quota: pulumi.Input[int] = 0,
        total_quota: pulumi.Input[int] = 0,
        admin_username: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`name` is the tenant's slug; quotas in bytes, 0 for unlimited."""
        props = {
            "name": name,
            "ssd_quota": ssd_quota,
            "total_quota": total_quota,
            "admin_username": admin_username,
            "admin_password": None,
        }
        super().__init__(
            OrganizationProvider(),
            resource_name,
            props,
            _secret_outputs(opts, "admin_password"),
        )


class WekaFilesystem(Resource, module="weka", name="Filesystem"):
    """A filesystem in `org` (Root, the default, is the cluster admin's; a tenant's organization
    needs its admin's credentials). Deleting it is refused unless `retained_locator` is the
    locator of its snapshot uploaded to bucket `object_store` and still readable there, or
    `allow_delete_without_snapshot` is true."""

    name: pulumi.Output[str]
    org: pulumi.Output[str]
    org_admin_username: pulumi.Output[str]
    org_admin_password: pulumi.Output[str]  # secret
    group_name: pulumi.Output[str]
    total_capacity: pulumi.Output[int]
    ssd_capacity: pulumi.Output[int]
    retained_locator: pulumi.Output[str]
    allow_delete_without_snapshot: pulumi.Output[bool]

    def __init__(
        self,
        resource_name: str,
        *,
        name: pulumi.Input[str],
        total_capacity: pulumi.Input[int],
        ssd_capacity: pulumi.Input[int] | None = None,
        group_name: pulumi.Input[str] = "default",
        org: pulumi.Input[str] = ROOT_ORG,
        org_admin_username: pulumi.Input[str] | None = None,
        org_admin_password: pulumi.Input[str] | None = None,
        retained_locator: pulumi.Input[str] | None = None,
        object_store: pulumi.Input[str] | None = None,
        allow_delete_without_snapshot: pulumi.Input[bool] = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Capacities in bytes; without `ssd_capacity` all of it is on SSD."""
        props = {
            "name": name,
            "org": org,
            "org_admin_username": org_admin_username,
            "org_admin_password": _secret(org_admin_password),
            "group_name": group_name,
            "total_capacity": total_capacity,
            "ssd_capacity": ssd_capacity,
            "retained_locator": retained_locator,
            "object_store": object_store,
            "allow_delete_without_snapshot": allow_delete_without_snapshot,
        }
        super().__init__(
            FilesystemProvider(),
            resource_name,
            props,
            _secret_outputs(opts, "org_admin_password"),
        )


class WekaDirectory(Resource, module="weka", name="Directory"):
    """A directory of filesystem `filesystem` in `org`, made through the mount host with owner
    `uid`:`gid` and `mode`. Its parent must exist (declare it first). Removed at delete only when
    empty, with `allow_delete_with_data`, or once `retained_copy` (offboarding's copy of it in the
    retention store) is still readable there."""

    org: pulumi.Output[str]
    filesystem: pulumi.Output[str]
    path: pulumi.Output[str]
    uid: pulumi.Output[int]
    gid: pulumi.Output[int]
    mode: pulumi.Output[str]
    allow_delete_with_data: pulumi.Output[bool]

    def __init__(
        self,
        resource_name: str,
        *,
        filesystem: pulumi.Input[str],
        path: pulumi.Input[str],
        uid: pulumi.Input[int],
        gid: pulumi.Input[int],
        mode: pulumi.Input[str] = "0750",
        org: pulumi.Input[str] = ROOT_ORG,
        allow_delete_with_data: pulumi.Input[bool] = False,
        retained_copy: pulumi.Input[str] = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`path` is absolute inside the filesystem ("/tenant-foo/alice"); `mode` is octal."""
        props = {
            "org": org,
            "filesystem": filesystem,
            "path": path,
            "uid": uid,
            "gid": gid,
            "mode": mode,
            "allow_delete_with_data": allow_delete_with_data,
            "retained_copy": retained_copy,
        }
        super().__init__(DirectoryProvider(), resource_name, props, opts)


class WekaDirectoryQuota(Resource, module="weka", name="DirectoryQuota"):
    """A quota on an existing directory of a filesystem, marked with `owner` (the tenant's
    slug): a quota already there is taken over only if it carries the same mark."""

    filesystem_uid: pulumi.Output[str]
    path: pulumi.Output[str]
    org: pulumi.Output[str]
    org_admin_username: pulumi.Output[str]
    org_admin_password: pulumi.Output[str]  # secret
    hard_limit_bytes: pulumi.Output[int]
    soft_limit_bytes: pulumi.Output[int]
    grace_seconds: pulumi.Output[int]
    owner: pulumi.Output[str]
    inode_id: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        filesystem_uid: pulumi.Input[str],
        path: pulumi.Input[str],
        hard_limit_bytes: pulumi.Input[int],
        soft_limit_bytes: pulumi.Input[int],
        owner: pulumi.Input[str],
        grace_seconds: pulumi.Input[int] = 0,
        org: pulumi.Input[str] = ROOT_ORG,
        org_admin_username: pulumi.Input[str] | None = None,
        org_admin_password: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "filesystem_uid": filesystem_uid,
            "path": path,
            "org": org,
            "org_admin_username": org_admin_username,
            "org_admin_password": _secret(org_admin_password),
            "hard_limit_bytes": hard_limit_bytes,
            "soft_limit_bytes": soft_limit_bytes,
            "grace_seconds": grace_seconds,
            "owner": owner,
            "inode_id": None,
        }
        super().__init__(
            DirectoryQuotaProvider(),
            resource_name,
            props,
            _secret_outputs(opts, "org_admin_password"),
        )


class WekaOrgUser(Resource, module="weka", name="OrgUser"):
    """A local user of `org` with a generated password, such as the CSI driver's (role CSI)."""

    username: pulumi.Output[str]
    role: pulumi.Output[str]
    org: pulumi.Output[str]
    org_admin_username: pulumi.Output[str]
    org_admin_password: pulumi.Output[str]  # secret
    password: pulumi.Output[str]  # secret

    def __init__(
        self,
        resource_name: str,
        *,
        username: pulumi.Input[str],
        role: pulumi.Input[str],
        org: pulumi.Input[str] = ROOT_ORG,
        org_admin_username: pulumi.Input[str] | None = None,
        org_admin_password: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`role` is CSI, OrgAdmin or Regular."""
        props = {
            "username": username,
            "role": role,
            "org": org,
            "org_admin_username": org_admin_username,
            "org_admin_password": _secret(org_admin_password),
            "password": None,
        }
        super().__init__(
            OrgUserProvider(),
            resource_name,
            props,
            _secret_outputs(opts, "password", "org_admin_password"),
        )


class WekaUploadedSnapshot(Resource, module="weka", name="UploadedSnapshot"):
    """Offboarding's copy of filesystem `filesystem` of organization `org` that outlives it: its
    snapshot `offboarding`, uploaded to object store bucket `object_store` and verified by
    `locator`, kept until `retention_until`. Protected, with plain values only. A user's
    erasure (`erased`) replaces the upload with one without their files."""

    locator: pulumi.Output[str]
    snapshot_uid: pulumi.Output[str]
    retention_until: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        org: str,
        filesystem: str,
        object_store: str,
        retention_days: int,
        erased: Mapping[str, int] | None = None,
        capacity: int = 0,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs: dict[str, Any] = {
            "org": org,
            "filesystem": filesystem,
            "object_store": object_store,
            "retention_days": retention_days,
            **dict.fromkeys(("locator", "snapshot_uid", "retention_until")),
        }
        if erased:
            # Absent until a user's erasure, so that no other upload shows a change for it. The
            # upload is redone without their files in a filesystem of `capacity` bytes.
            inputs.update(erased=dict(erased), capacity=capacity)
        super().__init__(UploadedSnapshotProvider(), resource_name, inputs, opts)
