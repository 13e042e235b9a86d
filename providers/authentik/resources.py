"""The Authentik dynamic resources, as the tenant's IdentityGroup component declares them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import Resource

from providers.authentik.provider import TenantGroupProvider, TenantUserProvider

__all__ = ["TenantGroup", "TenantUser"]

# Registered as inputs with no value so that Pulumi resolves them as Output attributes.
_GROUP_OUTPUTS = ("marked", "pk", "num_pk")
_USER_OUTPUTS = ("marked", "is_active", "pk", "uuid")


class TenantGroup(Resource, module="authentik", name="TenantGroup"):
    """An Authentik group of a tenant under `parent` (a group NAME such as "tenants", which
    platform setup creates once; the sandbox seeds it), carrying gidNumber (as a string), the
    extra `attributes` (such as tenant_slug) and the tenant's ownership mark. `group_name`
    replaces; the rest updates."""

    tenant: pulumi.Output[str]
    marked: pulumi.Output[bool]
    name: pulumi.Output[str]
    parent: pulumi.Output[str]
    gid: pulumi.Output[int]
    attributes: pulumi.Output[dict[str, Any]]
    pk: pulumi.Output[str]
    num_pk: pulumi.Output[int]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: pulumi.Input[str],
        group_name: pulumi.Input[str],
        parent: pulumi.Input[str],
        gid: pulumi.Input[int],
        attributes: pulumi.Input[Mapping[str, pulumi.Input[Any]]] | None = None,
        lifecycle: pulumi.Input[Mapping[str, object]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "tenant": tenant,
            "lifecycle": lifecycle,
            "name": group_name,
            "parent": parent,
            "gid": gid,
            "attributes": attributes or {},
            **dict.fromkeys(_GROUP_OUTPUTS),
        }
        super().__init__(TenantGroupProvider(), resource_name, props, opts)


class TenantUser(Resource, module="authentik", name="TenantUser"):
    """An Authentik user of a tenant: uidNumber and gidNumber (strings), `ssh_keys` (one per line),
    membership of `groups` (names; pass TenantGroup.name outputs so the groups come first) and the
    tenant's ownership mark. `username` replaces; the rest updates. Deleting disables the user and
    takes it out of the tenant's groups; it never deletes the user."""

    tenant: pulumi.Output[str]
    marked: pulumi.Output[bool]
    username: pulumi.Output[str]
    name: pulumi.Output[str]
    email: pulumi.Output[str]
    uid: pulumi.Output[int]
    gid: pulumi.Output[int]
    ssh_keys: pulumi.Output[list[str]]
    groups: pulumi.Output[list[str]]
    is_active: pulumi.Output[bool]
    pk: pulumi.Output[int]
    uuid: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: pulumi.Input[str],
        username: pulumi.Input[str],
        full_name: pulumi.Input[str],
        email: pulumi.Input[str],
        uid: pulumi.Input[int],
        gid: pulumi.Input[int],
        ssh_keys: pulumi.Input[Sequence[pulumi.Input[str]]],
        groups: pulumi.Input[Sequence[pulumi.Input[str]]],
        active: bool = True,
        retention_days: int | None = None,
        erased: bool = False,
        abandoned: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "tenant": tenant,
            "username": username,
            "name": full_name,
            "email": email,
            "uid": uid,
            "gid": gid,
            "ssh_keys": ssh_keys,
            "groups": groups,
            "active": active,
            **dict.fromkeys(_USER_OUTPUTS),
        }
        if erased:
            # Absent unless erased, so that no other user shows a change for it.
            props["erased"] = True
        if abandoned:
            props["abandoned"] = True  # absent otherwise, for the same reason
        if retention_days is not None:
            # Absent until offboarding, so that no live tenant's user shows a change for it.
            props.update(retention_days=retention_days, retention_until=None)
        super().__init__(TenantUserProvider(), resource_name, props, opts)
