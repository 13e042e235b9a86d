"""What `pulumi up` builds for a stack: the platform for `prod`, one tenant for any other name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi

from tenant_stack.components import (
    CapacityReservation,
    IdentityGroup,
    LoginPod,
    TenantNamespace,
)
from tenant_stack.errors import PreflightError
from tenant_stack.handover import connection_sheet, smoke_tests
from tenant_stack.mapping import identity_args, login_args, namespace_args, reservation_args
from tenant_stack.platform import Platform
from tenant_stack.preflight import check_nodes, read_nodes
from tenant_stack.spec import TenantSpec

PLATFORM_STACK = "prod"


def build_platform(platform: Platform) -> None:
    """The `prod` stack: publishes the platform facts for consumers outside this program."""
    for key, value in platform.model_dump(mode="json").items():
        pulumi.export(key, value)


def preflight(spec: TenantSpec, platform: Platform, spec_path: Path) -> None:
    """Refuses, before anything is declared, nodes the live cluster cannot give this tenant."""
    if not spec.reservation.nodes:
        return
    pool = platform.node_pools[spec.reservation.hardware_pool]
    findings = check_nodes(
        spec.slug, pool.sku, spec.reservation.hardware_pool, spec.reservation.nodes, read_nodes()
    )
    for warning in findings.warnings:
        pulumi.log.warn(warning)
    if findings.refusals:
        raise PreflightError(spec_path, findings.refusals)


@dataclass(frozen=True)
class Tenant:
    reservation: CapacityReservation | None
    namespace: TenantNamespace
    identity: IdentityGroup
    login: LoginPod


def declare_tenant(spec: TenantSpec, platform: Platform) -> Tenant:
    """Every component of one tenant, each depending on the layers before it."""
    # Destroy deletes in reverse dependency order, and the offboarding runbook fixes that order:
    # storage, identity, Slurm, namespace, reservation. So identity comes after the namespace
    # (and Slurm) here; Slurm names users but needs no uid/gid, and the login pod and storage,
    # which do, come after identity.
    reservation = (
        CapacityReservation(spec.slug, reservation_args(spec)) if spec.reservation.nodes else None
    )
    namespace = TenantNamespace(spec.slug, namespace_args(spec, platform, reservation))
    identity = IdentityGroup(spec.slug, identity_args(spec, platform, after=[namespace]))
    login = LoginPod(spec.slug, login_args(spec, platform, namespace, identity))
    return Tenant(reservation, namespace, identity, login)


def build_tenant(spec: TenantSpec, platform: Platform, spec_path: Path) -> None:
    preflight(spec, platform, spec_path)
    tenant = declare_tenant(spec, platform)
    if tenant.reservation is not None:
        pulumi.export("reservation", tenant.reservation.name)
        pulumi.export("reserved_nodes", tenant.reservation.nodes)
    pulumi.export("namespace", tenant.namespace.name)
    pulumi.export("group", tenant.identity.group)
    pulumi.export("uids", tenant.identity.uids)
    pulumi.export("login_host", tenant.login.login_host)
    pulumi.export("ssh_config", tenant.login.ssh_config)
    pulumi.export("connection_sheet", connection_sheet(spec, platform))
    pulumi.export("smoke_tests", smoke_tests(spec))
