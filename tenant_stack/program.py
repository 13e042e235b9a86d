"""What `pulumi up` builds for a stack: the platform for `prod`, one tenant for any other name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pulumi

from providers.authentik.settings import Settings as AuthentikSettings
from providers.offboarding.never_used import signs_of_use
from providers.retention.client import RetentionStore
from providers.retention.ledger import Ledger
from providers.retention.objects import kept_under, tenant_prefix
from providers.retention.objects import now as retention_clock
from providers.weka.props import weka_client
from providers.weka.settings import Settings as WekaSettings
from providers.weka.settings import ca_certificate
from tenant_stack.adoption import adopt_existing, existing_objects, recorded_found
from tenant_stack.components import (
    CapacityReservation,
    IdentityGroup,
    LoginPod,
    Offboarding,
    Retention,
    SlurmAccounting,
    TenantNamespace,
    WekaStorage,
)
from tenant_stack.components.weka_storage import (
    SharedFilesystem,
    legacy_class_parameters,
    storage_class_name,
)
from tenant_stack.errors import ClusterError, PreflightError, Problem, SpecError
from tenant_stack.handover import connection_sheet, offboarding_notice, smoke_tests
from tenant_stack.live import LiveCluster, LiveReads, namespace_managers
from tenant_stack.mapping import (
    ARCHIVE_KINDS,
    DRAIN_WAIT_SECONDS,
    SharedFilesystems,
    identity_args,
    login_args,
    namespace_args,
    offboarding_args,
    reservation_args,
    retention_args,
    slurm_args,
    storage_args,
    storage_places,
    wanted_claims,
)
from tenant_stack.platform import Platform
from tenant_stack.preflight import (
    check_capacity,
    check_claims,
    check_directory,
    check_legal_hold,
    check_namespace,
    check_nodes,
    check_rehearsal,
    check_stage,
)
from tenant_stack.retention_calendar import Record, spec_hold_change
from tenant_stack.spec import TenantSpec
from tenant_stack.spec.fleet import load_fleet, refusals_beside


def build_platform(platform: Platform) -> None:
    """The `prod` stack: publishes the platform facts for consumers outside this program."""
    for key, value in platform.model_dump(mode="json").items():
        pulumi.export(key, value)


def preflight(spec: TenantSpec, platform: Platform, spec_path: Path, live: LiveCluster) -> None:
    """Refuses, before anything is declared, a namespace that is not this tenant's, a rehearsal
    turned on late, a stage that skips the runbook's order, numbers, users or groups Authentik
    holds for someone else, nodes the live cluster cannot give this tenant and claims `up` could
    only bring to the spec by replacing them."""
    adopted = spec.imported.found if spec.imported is not None and spec.imported.adopt else None
    # Only a namespace without the stage annotation is asked who wrote it: an earlier release's.
    managers = namespace_managers(spec.slug) if live.namespace_exists and not live.stage else []
    refusals = check_namespace(spec.slug, live, adopted, managers)
    if adopted is not None and recorded_found(spec.slug) != adopted:
        refusals.append(
            Problem(
                "imported.found",
                "differs from what `import` recorded of the tenant in its ledger: adoption "
                "takes over what import found, not what a spec says it found; run `python -m "
                f"tenant_stack import {spec.slug}` again and use the spec it writes",
            )
        )
    refusals += check_stage(live.stage, spec.lifecycle.stage)
    refusals += check_legal_hold(spec.lifecycle.stage, spec.lifecycle.legal_hold)
    beside = load_fleet(spec_path.parent, platform)
    refusals += fleet_refusals(spec, platform, spec_path, beside)
    # Loaded here, not with the program: the HTTP stack costs a preview that refuses earlier
    # (a bad spec) a tenth of a second for nothing.
    from providers.authentik.client import AuthentikClient

    with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
        users, groups = directory.users(), directory.groups()
    refusals += check_rehearsal(spec.lifecycle.rehearsal, live, spec.slug, users)
    refusals += abandonment_refusals(spec, platform, live)
    refusals += check_directory(spec, spec_path, platform.ldap, users, groups, adopted)
    refusals += check_claims(spec.slug, wanted_claims(spec), live.claims)
    if spec.own_filesystem_bytes and not live.namespace_exists:
        refusals += capacity_refusals(spec, platform, beside[0].values())
    if spec.reservation.nodes:
        pool = platform.node_pools[spec.reservation.hardware_pool]
        findings = check_nodes(
            spec.slug, pool.sku, spec.reservation.hardware_pool, spec.reservation.nodes, live.nodes
        )
        for warning in findings.warnings:
            pulumi.log.warn(warning)
        refusals = findings.refusals + refusals
    if refusals:
        raise PreflightError(spec_path, refusals)


def abandonment_refusals(spec: TenantSpec, platform: Platform, live: LiveCluster) -> list[Problem]:
    """An abandoned onboarding is refused, naming the jobs and files, once the tenant has run a
    job or written a file: it would be deleted whole, keeping nothing. A tenant with no
    namespace yet has nothing of its stack live to read."""
    if not spec.lifecycle.abandoned or not live.namespace_exists:
        return []
    return [
        Problem(
            "lifecycle.abandoned",
            f"refused: the tenant has been used ({why}); an abandoned onboarding deletes it "
            "whole, keeping nothing: offboard it by its stages instead (remove "
            "lifecycle.abandoned, then lifecycle.stage: frozen)",
        )
        for why in signs_of_use(spec.slurm_accounts, storage_places(spec, platform))
    ]


def capacity_refusals(
    spec: TenantSpec, platform: Platform, beside: Iterable[TenantSpec]
) -> list[Problem]:
    """Onboarding's storage check, for a tenant whose namespace does not exist yet (a tenant
    already made grows its filesystems one `up` at a time, which Weka refuses on its own)."""
    with weka_client(WekaSettings.from_environment()) as weka:
        capacity, organizations = weka.capacity(), weka.list_organizations()
    return check_capacity(
        spec,
        beside,
        capacity,
        {org.name for org in organizations},
        platform.weka.capacity_headroom_percent,
    )


def fleet_refusals(
    spec: TenantSpec,
    platform: Platform,
    spec_path: Path,
    beside: tuple[dict[Path, TenantSpec], dict[Path, SpecError]],
) -> list[Problem]:
    """The rules across tenants that this spec breaks, against every other spec beside it. Another
    spec that does not load is a warning only: one tenant's broken file never blocks another's
    change."""
    refusals, broken = refusals_beside(spec, spec_path, platform, beside)
    for path, error in broken.items():
        pulumi.log.warn(f"the rules across tenants skip {path.name}, which does not load: {error}")
    return refusals


@dataclass(frozen=True)
class Tenant:
    reservation: CapacityReservation | None
    namespace: TenantNamespace
    slurm: SlurmAccounting
    identity: IdentityGroup
    login: LoginPod
    storage: WekaStorage
    offboarding: Offboarding
    retention: Retention


def declare_tenant(
    spec: TenantSpec,
    platform: Platform,
    ldap_bind_data: pulumi.Input[dict[str, str]],
    shared: SharedFilesystems | None = None,
    ca_certificate: str | None = None,
    retained: list[str] | None = None,
    record: Record | None = None,
    kept_class_parameters: dict[str, str] | None = None,
) -> Tenant:
    """Every component of one tenant, each depending on the layers before it. Directory
    isolation needs the platform's shared filesystems (`shared_filesystems`). A restore declares
    all that offboarding kept, less what the retention purge deleted, as erasures left it (the
    ledger's `record`)."""
    record = record or Record()
    # Destroy deletes in reverse dependency order, and the offboarding runbook fixes that order:
    # storage, identity, Slurm, namespace, reservation. So identity comes after the namespace
    # (and Slurm) here; Slurm names users but needs no uid/gid, and the login pod and storage,
    # which do, come after identity.
    reservation = (
        CapacityReservation(spec.slug, reservation_args(spec, platform))
        if spec.reservation.nodes
        else None
    )
    # What offboarding keeps depends on nothing else, so destroy cannot be made to keep more.
    retention_spec = retention_args(
        spec,
        platform,
        retained or [],
        record.purged,
        offboarded=spec.lifecycle.restore,
        erased=record.erased,
    )
    retention = Retention(spec.slug, retention_spec)
    kept = retention_spec.kept
    namespace = TenantNamespace(
        spec.slug, namespace_args(spec, platform, reservation, ldap_bind_data, retention, kept)
    )
    drain_wait = pulumi.Config().get_int("drain_wait_seconds") or DRAIN_WAIT_SECONDS
    slurm = SlurmAccounting(
        spec.slug,
        slurm_args(
            spec,
            after=[namespace, *([reservation] if reservation else [])],
            drain_wait_seconds=drain_wait,
        ),
    )
    identity = IdentityGroup(
        spec.slug, identity_args(spec, platform, after=[slurm], erased=list(record.erased))
    )
    login = LoginPod(spec.slug, login_args(spec, platform, namespace, identity))
    storage = WekaStorage(
        spec.slug,
        storage_args(
            spec,
            platform,
            namespace,
            shared,
            ca_certificate,
            retention,
            after=[identity, namespace],
            kept_class_parameters=kept_class_parameters,
        ),
    )
    layers: list[pulumi.Resource] = [namespace, slurm, identity, login, storage]
    if reservation is not None:
        layers.append(reservation)
    offboarding = Offboarding(spec.slug, offboarding_args(spec, platform, namespace, after=layers))
    return Tenant(reservation, namespace, slurm, identity, login, storage, offboarding, retention)


def shared_filesystems(spec: TenantSpec, platform: Platform) -> SharedFilesystems | None:
    """The shared home and scratch filesystems a directory-isolated tenant's directories go on,
    looked up on Weka (their uids are what quotas are set through)."""
    if spec.storage.isolation != "directory":
        return None
    names = (platform.weka.shared_home_filesystem, platform.weka.shared_scratch_filesystem)
    with weka_client(WekaSettings.from_environment()) as weka:
        found = [(name, weka.find_filesystem(name)) for name in names]
    shared = []
    for name, fs in found:
        if fs is None:
            raise ClusterError(
                f"the platform's shared filesystem {name!r} does not exist on Weka; create it "
                "(platform setup) before onboarding a directory-isolated tenant"
            )
        shared.append(SharedFilesystem(name, fs.uid))
    return SharedFilesystems(home=shared[0], scratch=shared[1])


# The stages the namespace still records while the next stage's `up` keeps things: one that
# failed midway has kept some, and its namespace was not updated to say so.
_KEEPING_AFTER = ("drained", "archived", "snapshotted")


def kept_so_far(tenant: str, live: LiveCluster) -> list[str]:
    """What offboarding has kept of `tenant`, in the words of `RetentionArgs.kept`: what its
    namespace records, and, once it is at a stage after which a stage keeps something, what
    the retention store holds under its prefix (the archives and directory copies of a stage
    that failed after making them). Each stays declared from the moment it exists, so a failed
    stage can be rolled back or retried."""
    if live.stage not in _KEEPING_AFTER:
        return live.retained
    with RetentionStore.from_environment() as store:
        stored = [kept_under(tenant, info.key) for info in store.list(tenant_prefix(tenant))]
    found = [
        kind if what == "archive" else f"copy:{kind}"
        for what, kind in filter(None, stored)
        if what == "copy" or kind in ARCHIVE_KINDS
    ]
    return sorted(set(live.retained) | set(found))


def retention_record(tenant: str) -> Record:
    """What the retention purge and erasures did to `tenant`, as its ledger records."""
    with Ledger.open() as ledger:
        return Record.of(ledger.entries(tenant))


def record_spec_hold(spec: TenantSpec) -> None:
    """At `up`, a change of the spec's hold is written to the tenant's ledger, which every delete
    gate reads (a preview writes nothing): a spec's hold is lifted only by the `up` of the spec
    that lifts it, not by a job run from any checkout."""
    if pulumi.runtime.is_dry_run():
        return
    with Ledger.open() as ledger:
        entries = ledger.entries(spec.slug)
        entry = spec_hold_change(spec.slug, spec.lifecycle.legal_hold, entries, retention_clock())
        if entry is not None:
            ledger.append(spec.slug, entry.action, entry.at, entry.details)


def declare_offboarded(spec: TenantSpec, platform: Platform) -> None:
    """An offboarded tenant (its destroy done): what offboarding keeps, and nothing else, less
    what the retention purge has deleted, and without the files and the personal data of the
    users whose erasure was requested (its ledger says which), so that `up` and the drift check
    find it as the purge and the erasures left it."""
    record = retention_record(spec.slug)
    retention = Retention(
        spec.slug,
        retention_args(spec, platform, [], record.purged, offboarded=True, erased=record.erased),
    )
    IdentityGroup(
        spec.slug,
        identity_args(
            spec, platform, [], offboarded=True, purged=record.purged, erased=list(record.erased)
        ),
    )
    pulumi.export("lifecycle_stage", spec.lifecycle.stage)
    export_offboarding(spec)
    pulumi.export("archives", retention.archives)


def export_offboarding(spec: TenantSpec) -> None:
    """The static part of `status`: the stage, the next one and what it waits for by the spec
    (the live blockers are `status`'s own reads)."""
    lifecycle = spec.lifecycle
    pulumi.export(
        "offboarding",
        {
            "stage": lifecycle.stage,
            "next_stage": lifecycle.next_stage,
            "waits_for": lifecycle.waits_for,
        },
    )


def build_tenant(spec: TenantSpec, platform: Platform, spec_path: Path, reads: LiveReads) -> None:
    """The tenant of `spec`, after the preflight over what `reads` (started for its namespace)
    find live."""
    live = reads.cluster()
    lifecycle = spec.lifecycle
    record_spec_hold(spec)
    if lifecycle.stage == "destroy" and not lifecycle.rehearsal and not live.namespace_exists:
        declare_offboarded(spec, platform)
        return
    preflight(spec, platform, spec_path, live)
    if spec.imported is not None and spec.imported.adopt and spec.imported.found is not None:
        adopt_existing(spec.slug, existing_objects(spec.slug), spec.imported.found)
    if lifecycle.restore:
        made = (
            "each filesystem is made from the snapshot uploaded"
            if spec.storage.isolation == "org"
            else "each directory is unpacked from the copy kept"
        )
        pulumi.log.warn(
            f"restoring {spec.slug} from what offboarding kept: {made} at stage snapshotted, "
            "and whatever was written after that is lost; tell the tenant"
        )
    kept_class = legacy_class_parameters(spec.slug, live.storage_classes)
    if kept_class is not None:
        name = storage_class_name(spec.slug)
        pulumi.log.warn(
            f"StorageClass {name} names its CSI Secrets outright (made by an earlier release), "
            "and a StorageClass's parameters cannot change in place: `kubectl delete "
            f"storageclass {name}`, then `pulumi up` makes it again naming them by the claim's "
            "namespace (its claims keep their volumes)"
        )
    tenant = declare_tenant(
        spec,
        platform,
        pulumi.Output.secret(reads.secret_data()),
        shared_filesystems(spec, platform),
        ca_certificate(),
        kept_so_far(spec.slug, live),
        retention_record(spec.slug) if lifecycle.restore else None,
        kept_class,
    )
    if tenant.reservation is not None:
        pulumi.export("reservation", tenant.reservation.name)
        pulumi.export("reserved_nodes", tenant.reservation.nodes)
    pulumi.export("namespace", tenant.namespace.name)
    pulumi.export("slurm_account", tenant.slurm.account)
    pulumi.export("slurm_partition", tenant.slurm.partition)
    pulumi.export("slurm_qos", tenant.slurm.qos)
    pulumi.export("group", tenant.identity.group)
    pulumi.export("uids", tenant.identity.uids)
    pulumi.export("login_host", tenant.login.login_host)
    pulumi.export("scratch_filesystem", tenant.storage.scratch_filesystem)
    pulumi.export("storage_class", tenant.storage.storage_class)
    pulumi.export("ssh_config", tenant.login.ssh_config)
    pulumi.export("connection_sheet", connection_sheet(spec, platform))
    pulumi.export("smoke_tests", smoke_tests(spec))
    pulumi.export("lifecycle_stage", tenant.offboarding.stage)
    export_offboarding(spec)
    pulumi.export("archives", tenant.retention.archives)
    if spec.lifecycle.reached("frozen"):
        pulumi.export("offboarding_notice", offboarding_notice(spec, platform))
    if spec.lifecycle.reached("drained"):
        pulumi.export("cancelled_jobs", tenant.slurm.cancelled_jobs)
