"""The one place where a validated spec (and the platform) becomes component args."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import pulumi

from providers.weka.settings import ROOT_ORG
from tenant_stack.components import (
    CapacityReservation,
    CapacityReservationArgs,
    IdentityGroup,
    IdentityGroupArgs,
    LoginPodArgs,
    OffboardingArgs,
    Retention,
    RetentionArgs,
    TenantNamespace,
    TenantNamespaceArgs,
)
from tenant_stack.components import slurm_accounting as slurm
from tenant_stack.components.identity_group import IdentityUser
from tenant_stack.components.login_pod import Ldap, release_name
from tenant_stack.components.retention import Archive, Copy
from tenant_stack.components.tenant_namespace import (
    ContainerDefaults,
    Egress,
    InfiniBandPartition,
    Quota,
)
from tenant_stack.components.weka_storage import (
    CLAIM_ACCESS_MODES,
    Claim,
    HomeUser,
    SharedFilesystem,
    WekaStorageArgs,
    storage_class_name,
)
from tenant_stack.handover import customer_notice, offboarding_notice
from tenant_stack.platform import Platform
from tenant_stack.preflight import WantedClaim
from tenant_stack.spec import Duration, TenantSpec
from tenant_stack.spec import Qos as SpecQos
from tenant_stack.spec.models import Stage
from tenant_stack.spec.quantities import format_cpu, kubernetes_quantity

# How long one `up` at stage drained waits for the tenant's queue before it reports progress
# and asks to be run again (stack config gpu-tenants:drain_wait_seconds).
DRAIN_WAIT_SECONDS = 300


def reservation_args(spec: TenantSpec, platform: Platform) -> CapacityReservationArgs:
    health = platform.node_health
    return CapacityReservationArgs(
        tenant=spec.slug,
        name=spec.reservation_name,
        hardware_pool=spec.reservation.hardware_pool,
        nodes=list(spec.reservation.nodes),
        health_condition=health.condition if health else None,
    )


def namespace_args(
    spec: TenantSpec,
    platform: Platform,
    reservation: CapacityReservation | None,
    ldap_bind_data: pulumi.Input[dict[str, str]],
    retention: Retention | None,
    retained: list[str],
) -> TenantNamespaceArgs:
    quota = spec.kubernetes.quota
    defaults = spec.kubernetes.container_defaults
    names = platform.kubernetes
    return TenantNamespaceArgs(
        tenant=spec.slug,
        quota=Quota(
            gpus=spec.contract.gpus,
            requests_cpu=format_cpu(quota.requests_cpu),
            requests_memory=kubernetes_quantity(quota.requests_memory),
            limits_memory=kubernetes_quantity(quota.limits_memory),
            persistent_volume_claims=quota.persistent_volume_claims,
            requests_storage=kubernetes_quantity(quota.requests_storage),
        ),
        container_defaults=ContainerDefaults(
            cpu_limit=format_cpu(defaults.limit.cpu),
            memory_limit=kubernetes_quantity(defaults.limit.memory),
            cpu_request=format_cpu(defaults.request.cpu),
            memory_request=kubernetes_quantity(defaults.request.memory),
        ),
        reservation_name=reservation.name if reservation else None,
        ingress_from=[names.slurm_namespace],
        egress=network_egress(platform),
        admins_group=spec.admins_group if spec.identity.admins else None,
        storage_class=storage_class_name(spec.slug),
        dns_subdomain=f"{spec.slug}.{platform.dns_domain}",
        login_release=release_name(spec.slug),
        cluster_cidr=names.cluster_cidr,
        login_runtime_class=platform.login_chart.runtime_class,
        ldap_bind_secret_name=names.ldap_bind_secret,
        ldap_bind_data=ldap_bind_data,
        retained=retained,
        stage=spec.lifecycle.stage,
        rehearsal=spec.lifecycle.rehearsal,
        # The record of what is retained is written once it is: after the archives.
        after=[r for r in (reservation, retention if retained else None) if r is not None],
        partition=partition(spec, platform),
    )


def partition(spec: TenantSpec, platform: Platform) -> InfiniBandPartition | None:
    """The tenant's InfiniBand partition, for `pkey` isolation on a platform that has the
    network (the spec's rules refuse pkey on one that has not)."""
    network, infiniband = spec.network, platform.infiniband
    if network.isolation != "pkey" or network.pkey is None or infiniband is None:
        return None
    return InfiniBandPartition(network.pkey, infiniband.resource_name, infiniband.ipam_pool)


def _qos(name: str, qos: SpecQos, wall: Duration) -> slurm.Qos:
    max_wall = None if wall.seconds is None else wall.slurm()
    return slurm.Qos(
        name=name,
        priority=qos.priority,
        gpus=qos.gpus,
        max_wall=max_wall,
        flags=list(qos.flags),
        preempt_mode=qos.preempt_mode,
        # A QoS's PreemptMode=OFF is the cluster's mode to slurmdbd, so `off` ("never
        # preempted", runbook 4c) is an exemption as long as the job may run: its wall limit.
        preempt_exempt_time=max_wall if qos.preempt_mode == "off" else None,
    )


def slurm_args(
    spec: TenantSpec, after: list[pulumi.Resource], drain_wait_seconds: int = DRAIN_WAIT_SECONDS
) -> slurm.SlurmAccountingArgs:
    contract, s = spec.contract, spec.slurm
    partition = (
        slurm.Partition(
            nodes=spec.nodelist,
            max_time=contract.wall_limit.slurm(),
            default_time=s.partition.default_time.slurm(),
            preempt_mode=s.partition.preempt_mode.upper(),
            oversubscribe=s.partition.oversubscribe.upper(),
        )
        if spec.reservation.nodes
        else None
    )
    return slurm.SlurmAccountingArgs(
        tenant=spec.slug,
        description=spec.display_name,
        fairshare=s.fairshare,
        gpus=contract.gpus,
        grp_jobs=s.grp_jobs,
        max_jobs_per_user=s.max_jobs_per_user,
        gpu_minutes_per_user=spec.gpu_minutes_per_user,
        normal=_qos(spec.qos_normal, s.qos.normal, contract.wall_limit),
        interactive=_qos(spec.qos_interactive, s.qos.interactive, contract.interactive_wall_limit),
        teams=[slurm.Team(t.name, t.description, t.fairshare, t.gpus) for t in s.teams],
        users=[slurm.User(u.username, u.team) for u in spec.users],
        partition=partition,
        frozen=spec.lifecycle.reached("frozen"),
        drain=(
            slurm.Drain(
                mode=spec.lifecycle.drain_mode,
                timeout_seconds=spec.lifecycle.drain_timeout.seconds or 0,
                wait_seconds=drain_wait_seconds,
            )
            if spec.lifecycle.reached("drained")
            else None
        ),
        lifecycle=lifecycle_record(spec),
        after=after,
    )


def lifecycle_record(spec: TenantSpec) -> dict[str, object]:
    """Where offboarding stands, as a tenant-level object records it for its delete gate."""
    lifecycle = spec.lifecycle
    return {
        "stage": lifecycle.stage,
        "next_stage": lifecycle.next_stage,
        "signed_off": lifecycle.sign_off is not None,
        "rehearsal": lifecycle.rehearsal,
        "abandoned": lifecycle.abandoned,
    }


# An erased user's name in Authentik, which requires one (its email may be empty).
ERASED_NAME = "erased user"
# What each archive of the tenant's Slurm records is kept for: accounting for the financial
# audit, logs for operations (Pulumi.prod.yaml retention).
ARCHIVE_KINDS = ("jobs", "steps", "associations", "logs")


def retention_args(
    spec: TenantSpec,
    platform: Platform,
    retained: list[str],
    purged: Collection[str] = (),
    *,
    offboarded: bool = False,
    erased: Mapping[str, int] | None = None,
) -> RetentionArgs:
    """The archives from stage archived on, the copies of a directory-isolated tenant's data
    from stage snapshotted on, and afterwards whatever was kept before (a rollback keeps it),
    less what the retention purge has deleted (`purged`, in the words of RetentionArgs.kept).
    For a tenant `offboarded` (and one restored from that), all that offboarding kept."""
    days = platform.retention

    def reached(stage: Stage) -> bool:
        return offboarded or spec.lifecycle.reached(stage)

    kinds = ARCHIVE_KINDS if reached("archived") else ()
    shared = (platform.weka.shared_home_filesystem, platform.weka.shared_scratch_filesystem)
    copied = [
        fs
        for fs in shared
        if spec.storage.isolation == "directory"
        and (reached("snapshotted") or f"copy:{fs}" in retained)
    ]
    return RetentionArgs(
        tenant=spec.slug,
        accounts=spec.slurm_accounts,
        nodes=list(spec.reservation.nodes),
        archives=[
            Archive(kind, days.logs_days if kind == "logs" else days.accounting_days)
            for kind in ARCHIVE_KINDS
            if (kind in kinds or kind in retained) and kind not in purged
        ],
        allow_empty=spec.lifecycle.rehearsal or spec.lifecycle.no_jobs,
        copies=[Copy(fs, f"/{spec.slug}") for fs in copied if f"copy:{fs}" not in purged],
        uploads=[
            fs
            for fs in (f"{spec.slug}-home", f"{spec.slug}-scratch")
            if spec.storage.isolation == "org"
            and (reached("snapshotted") or f"snapshot:{fs}" in retained)
            and f"snapshot:{fs}" not in purged
        ],
        object_store=platform.weka.object_store,
        copy_retention_days=max(days.copies_days, spec.lifecycle.retention_days),
        erased=dict(erased or {}),
        capacities={
            f"{spec.slug}-home": spec.storage.home_capacity,
            f"{spec.slug}-scratch": spec.storage.scratch.hard,
        },
    )


def offboarding_args(
    spec: TenantSpec, platform: Platform, namespace: TenantNamespace, after: list[pulumi.Resource]
) -> OffboardingArgs:
    started = spec.lifecycle.reached("frozen")
    return OffboardingArgs(
        tenant=spec.slug,
        accounts=spec.slurm_accounts,
        namespace=namespace.name,
        login_release=release_name(spec.slug),
        stop_workloads=spec.lifecycle.reached("drained"),
        lifecycle=lifecycle_record(spec),
        sign_off=spec.lifecycle.sign_off.record() if spec.lifecycle.sign_off else None,
        abandoned=abandoned_record(spec, platform),
        start_notice=(
            customer_notice(spec, platform, "start", offboarding_notice(spec, platform))
            if started
            else None
        ),
        after=after,
    )


def identity_args(
    spec: TenantSpec,
    platform: Platform,
    after: list[pulumi.Resource],
    offboarded: bool = False,
    purged: Collection[str] = (),
    erased: Collection[str] = (),
) -> IdentityGroupArgs:
    """The tenant's groups and users; once `offboarded`, the users' tombstones alone, less those
    the retention purge has deleted (`user:<username>` in `purged`). An `erased` user keeps its
    username and uid, its name and email redacted."""
    admins = set(spec.identity.admins)
    return IdentityGroupArgs(
        tenant=spec.slug,
        parent_group=platform.authentik.tenants_group,
        gid=spec.identity.gid,
        admins_group=spec.admins_group if admins else None,
        admins_gid=spec.identity.admins_gid,
        users=[
            IdentityUser(
                username=user.username,
                full_name=ERASED_NAME if user.username in erased else user.name,
                email="" if user.username in erased else user.email,
                erased=user.username in erased,
                uid=user.uid,
                ssh_keys=list(user.ssh_keys),
                admin=user.username in admins,
            )
            for user in spec.users
            if f"user:{user.username}" not in purged
        ],
        lifecycle=lifecycle_record(spec),
        revoked=access_revoked(spec),
        abandoned=spec.lifecycle.abandoned,
        tombstone_days=platform.retention.accounting_days,
        offboarded=offboarded,
        after=after,
    )


@dataclass(frozen=True)
class SharedFilesystems:
    """The platform's shared filesystems a directory-isolated tenant's directories go on."""

    home: SharedFilesystem
    scratch: SharedFilesystem


def network_egress(platform: Platform) -> list[Egress]:
    """What the tenant's pods reach outside their namespace, each namespace on its own ports.
    The runbook's 3d allows 53/UDP, 636 and 443 to all of them, which leaves the Slurm clients
    of the login pod without slurmctld; these are the ports the products use."""
    names, slurm = platform.kubernetes, platform.slurm.ports
    return [
        Egress(
            names.slurm_namespace,
            [(slurm.slurmctld, "TCP"), (slurm.slurmd, "TCP"), (slurm.slurmdbd, "TCP")],
        ),
        # LDAPS for nslcd on the login pod; HTTPS for Authentik's own API and flows.
        Egress(names.auth_namespace, [(platform.ldap.port, "TCP"), (443, "TCP")]),
        # DNS falls back to TCP for large answers.
        Egress("kube-system", [(53, "UDP"), (53, "TCP")]),
    ]


def storage_args(
    spec: TenantSpec,
    platform: Platform,
    namespace: TenantNamespace,
    shared: SharedFilesystems | None,
    ca_certificate: str | None,
    retention: Retention,
    after: list[pulumi.Resource],
    kept_class_parameters: dict[str, str] | None = None,
) -> WekaStorageArgs:
    storage = spec.storage
    return WekaStorageArgs(
        tenant=spec.slug,
        namespace=namespace.name,
        isolation=storage.isolation,
        gid=spec.identity.gid,
        users=[HomeUser(user.username, user.uid) for user in spec.users],
        home_capacity=storage.home_capacity,
        home_soft=storage.home_per_user.soft,
        home_hard=storage.home_per_user.hard,
        scratch_soft=storage.scratch.soft,
        scratch_hard=storage.scratch.hard,
        shared_home=shared.home if shared else None,
        shared_scratch=shared.scratch if shared else None,
        filesystem_group=platform.weka.filesystem_group,
        api_endpoints=[platform.weka.api_endpoint],
        ca_certificate=ca_certificate,
        claims=[Claim(pvc.name, kubernetes_quantity(pvc.size)) for pvc in storage.pvcs],
        # An abandoned onboarding's gate read that the tenant wrote no file, before any delete.
        delete_without_snapshot=spec.lifecycle.rehearsal or spec.lifecycle.abandoned,
        retained_copies=retention.copies,
        retained_locators=retention.locators,
        object_store=platform.weka.object_store,
        after=after,
        org_admin=spec.imported.weka_org_admin if spec.imported else None,
        kept_class_parameters=kept_class_parameters,
    )


def wanted_claims(spec: TenantSpec) -> list[WantedClaim]:
    """The spec's claims as the preflight compares them with the live ones."""
    return [
        WantedClaim(
            location=f"storage.pvcs.{index}",
            name=pvc.name,
            size=pvc.size,
            storage_class=storage_class_name(spec.slug),
            access_modes=tuple(sorted(CLAIM_ACCESS_MODES)),
        )
        for index, pvc in enumerate(spec.storage.pvcs)
    ]


def filesystems(spec: TenantSpec, platform: Platform) -> tuple[str, str]:
    """What the login pod mounts as /home (the directory holding the users' homes) and as
    /scratch (the scratch filesystem, where /scratch/<slug> is the tenant's directory)."""
    if spec.storage.isolation == "org":
        return f"{spec.slug}-home", f"{spec.slug}-scratch"
    weka = platform.weka
    return f"{weka.shared_home_filesystem}/{spec.slug}", weka.shared_scratch_filesystem


def storage_places(spec: TenantSpec, platform: Platform) -> list[list[str]]:
    """The tenant's directories as the mount host reaches them: (organization, filesystem,
    path) of its own filesystems, or of its directories on the shared ones."""
    if spec.storage.isolation == "org":
        return [[spec.slug, f"{spec.slug}-{kind}", "/"] for kind in ("home", "scratch")]
    weka = platform.weka
    shared = (weka.shared_home_filesystem, weka.shared_scratch_filesystem)
    return [[ROOT_ORG, fs, f"/{spec.slug}"] for fs in shared]


def abandoned_record(spec: TenantSpec, platform: Platform) -> dict[str, object] | None:
    """What the offboarding gate of an abandoned onboarding reads before it opens: the tenant's
    directories, and the stack's login release, whose pod may still run; None for any other
    tenant."""
    if not spec.lifecycle.abandoned:
        return None
    return {"places": storage_places(spec, platform), "login_release": release_name(spec.slug)}


def access_revoked(spec: TenantSpec) -> bool:
    """Offboarding step 5, from stage destroy of a live tenant: its users disabled (5a), out of
    its groups (5b), and their keys taken off the login pods (5c)."""
    return spec.lifecycle.reached("destroy") and not spec.lifecycle.rehearsal


def login_replicas(spec: TenantSpec) -> int:
    """How many login pods the release runs: from stage snapshotted nothing may write after the
    snapshot, so none."""
    return 0 if spec.lifecycle.reached("snapshotted") else spec.login.replicas


def login_args(
    spec: TenantSpec, platform: Platform, namespace: TenantNamespace, identity: IdentityGroup
) -> LoginPodArgs:
    home, scratch = filesystems(spec, platform)
    return LoginPodArgs(
        tenant=spec.slug,
        namespace=namespace.name,
        chart_name=platform.login_chart.name,
        chart_version=platform.login_chart.version,
        runtime_class=platform.login_chart.runtime_class,
        replicas=login_replicas(spec),
        hostname=spec.login.hostname,
        ldap=Ldap(
            uri=platform.ldap.uri, base_dn=platform.ldap.base_dn, bind_dn=platform.ldap.bind_dn
        ),
        ldap_bind_secret=namespace.ldap_bind_secret,
        slurm_controller_host=platform.slurm.controller_host,
        home_filesystem=home,
        scratch_filesystem=scratch,
        authorized_keys={}
        if access_revoked(spec)
        else {user.username: list(user.ssh_keys) for user in spec.users},
        ssh_host_alias=f"login-{spec.short_name}",
        after=[namespace, identity],
    )
