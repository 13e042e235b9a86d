"""What the live cluster must allow before a tenant's resources are declared.

- Runbook step 1's capacity check: the nodes a tenant names must exist, be Ready, be schedulable,
  be of the contracted SKU and pool, and be in no other tenant's Reservation.
- The tenant's PersistentVolumeClaims must be ones `up` can bring to the spec in place. A claim
  grown outside the stack cannot shrink back, and one made again by hand with another class or
  access mode differs in fields Kubernetes never changes in place: Pulumi would replace it, and a
  replaced claim loses its volume, the tenant's data. Such a claim is refused, named, with what to
  do, instead of becoming a drift repair.
- `up` takes over no namespace that is not this tenant's: one that exists without the tenant's
  label and the stage annotation the program writes is another's, or a hand-made tenant's,
  which `import` brings in (its spec's `imported.adopt`).
- `lifecycle.rehearsal` opens every delete gate, so it is fixed once the tenant exists: a spec
  may turn it off, never on for a tenant whose namespace records that it was not one, nor for
  an offboarded tenant whose namespace is gone but whose users' tombstones Authentik keeps.
- The directory hands no number the spec pins to anyone else (a staff user, a platform group:
  that tenant would own their files on the shared filesystems), and no user or group the spec
  names exists in Authentik as someone else's (without this tenant's mark), unless `import`
  brought the tenant in.
- Runbook step 1's storage check: a new tenant's own filesystems (org isolation) fit in what
  Weka has unprovisioned, less what the specs beside it that are not applied yet will take,
  with the platform's headroom to spare.
- Offboarding moves one stage forward per `up`, in the runbook's order (block, drain, archive,
  snapshot, delete): the stage the last `up` recorded on the namespace may go one stage on, or
  back to any earlier stage (a rollback), never further on and never back from destroy
  (`tenant_stack.lifecycle`'s rules, which `gpu-tenants stage` applies to the spec's own stage).

It runs in the program, before any resource is declared, so `pulumi preview` in a pull request
refuses and changes nothing. What it checks is read, and
defined, by `tenant_stack.live`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from providers.authentik.props import KEPT_UNTIL_ATTRIBUTE, MARK_ATTRIBUTE, kept_tombstone
from tenant_stack.annotations import STAGE_ANNOTATION, TENANT_NAMESPACE_LABEL
from tenant_stack.errors import Problem
from tenant_stack.fleet.live_numbers import handed_out, live_collisions
from tenant_stack.lifecycle import hold_refusal, move_refusal
from tenant_stack.live import ClaimState, LiveCluster, NodeState
from tenant_stack.platform import Ldap
from tenant_stack.spec.models import STAGES, Found, Stage, TenantSpec
from tenant_stack.spec.quantities import approximate_size, kubernetes_quantity

if TYPE_CHECKING:
    from providers.authentik.client import Group, User
    from providers.weka.records import Capacity


@dataclass(frozen=True)
class Findings:
    refusals: list[Problem]
    # Nodes this tenant already holds that have since turned NotReady or been cordoned: worth a
    # warning, but refusing them would block every later change to the tenant (an RMA, say).
    warnings: list[str]


def check_nodes(
    tenant: str, sku: str, pool: str, wanted: Sequence[str], live: Sequence[NodeState]
) -> Findings:
    by_name = {node.name: node for node in live}
    refusals: list[Problem] = []
    warnings: list[str] = []
    for index, name in enumerate(wanted):
        where = f"reservation.nodes.{index}"
        node = by_name.get(name)
        if node is None:
            refusals.append(Problem(where, f"node {name} does not exist in the cluster"))
            continue
        ours = node.reserved_by == tenant
        for reason in _unfit(node, tenant, sku, pool):
            if ours and reason.startswith(("is NotReady", "is cordoned")):
                warnings.append(f"node {name} of {tenant}'s reservation {reason}")
            else:
                refusals.append(Problem(where, f"node {name} {reason}"))
    return Findings(refusals, warnings)


def free_nodes(sku: str, pool: str, live: Sequence[NodeState]) -> list[NodeState]:
    """Runbook step 1's query, for a tenant that holds no node yet: the nodes of `sku` and `pool`
    that `check_nodes` would accept for any tenant (Ready, schedulable, in no reservation), less
    those carrying a taint, which would keep the tenant's pods off them whatever the
    reservation says."""
    return [node for node in live if not node.taints and not any(_unfit(node, "", sku, pool))]


def _unfit(node: NodeState, tenant: str, sku: str, pool: str) -> Iterator[str]:
    if node.reserved_by not in (None, tenant):
        held = f" (Reservation {node.reservation})" if node.reservation else ""
        yield f"is already reserved by tenant {node.reserved_by}{held}"
    if node.instance_type != sku:
        yield f"is of instance type {node.instance_type!r}, the contract's SKU is {sku!r}"
    if node.pool != pool:
        yield f"is in hardware pool {node.pool!r}, the reservation's pool is {pool!r}"
    if not node.ready:
        yield "is NotReady: fix or replace it before reserving it"
    if node.cordoned:
        yield "is cordoned (SchedulingDisabled): uncordon it or pick another node"


@dataclass(frozen=True)
class WantedClaim:
    """A claim as the spec declares it, with the spec field it comes from."""

    location: str
    name: str
    size: int
    storage_class: str
    access_modes: tuple[str, ...]


def check_claims(
    namespace: str, wanted: Sequence[WantedClaim], live: Sequence[ClaimState]
) -> list[Problem]:
    """Refusals for live claims that `up` could only bring to the spec by replacing them."""
    by_name = {claim.name: claim for claim in live}
    refusals = []
    for claim in wanted:
        found = by_name.get(claim.name)
        if found is None:
            continue
        where = f"PersistentVolumeClaim {namespace}/{claim.name}"
        if found.size > claim.size:
            live_size, spec_size = kubernetes_quantity(found.size), kubernetes_quantity(claim.size)
            refusals.append(
                Problem(
                    f"{claim.location}.size",
                    f"{where} requests {live_size}, more than the {spec_size} here: it was "
                    "grown outside the stack, and a claim never shrinks (Pulumi would replace "
                    "it, and the tenant would lose its volume). Set the size to "
                    f"{live_size} in a pull request",
                )
            )
        for field, live_value, spec_value in (
            ("storage class", found.storage_class, claim.storage_class),
            ("access modes", ",".join(found.access_modes), ",".join(claim.access_modes)),
        ):
            if live_value != spec_value:
                refusals.append(
                    Problem(
                        claim.location,
                        f"{where} has {field} {live_value!r}, not {spec_value!r}: it was made "
                        "again outside the stack, and Kubernetes cannot change this in place "
                        "(Pulumi would replace the claim, and the tenant would lose its volume). "
                        "Move its data and delete it by hand, or recreate it as the spec says",
                    )
                )
    return refusals


def check_stage(recorded: str | None, wanted: Stage) -> list[Problem]:
    """A refusal when `wanted` skips a stage after `recorded` (None: no stage recorded yet, a
    tenant being onboarded) or leaves stage destroy."""
    if recorded is None or recorded not in STAGES:
        return []
    # The namespace records its stage as text; the tuple's own entry is the same stage, typed.
    reason = move_refusal(STAGES[STAGES.index(recorded)], wanted)
    return [] if reason is None else [Problem("lifecycle.stage", f"{wanted!r} refused: {reason}")]


def check_legal_hold(stage: Stage, legal_hold: bool) -> list[Problem]:
    """A refusal of stage destroy for a live tenant under legal hold: nothing of it may be
    deleted. (Once offboarded, a hold pauses the retention purge instead.)"""
    reason = hold_refusal(stage, legal_hold)
    return [] if reason is None else [Problem("lifecycle.stage", f"{stage!r} refused: {reason}")]


def check_namespace(
    tenant: str, live: LiveCluster, adopted: Found | None, managers: Sequence[str] = ()
) -> list[Problem]:
    """A refusal to take over namespace `tenant` when it exists and is not marked as this
    tenant's, unless `import` found and recorded it (`adopted`, the first `up` of a tenant it
    read). A namespace an earlier release of the program made carries the tenant's label but no
    stage annotation; its field `managers` (any of them pulumi's) tell it from a hand-made one."""
    if not live.namespace_exists or (adopted and f"Namespace/{tenant}" in adopted.kubernetes):
        return []
    made_by_a_stack = live.stage is not None or any(m.startswith("pulumi") for m in managers)
    if live.namespace_tenant == tenant and made_by_a_stack:
        return []
    marks = f"label {TENANT_NAMESPACE_LABEL}={tenant} and annotation {STAGE_ANNOTATION}"
    if live.namespace_tenant not in (None, tenant):
        whose = f"it is labelled as tenant {live.namespace_tenant!r}'s"
    else:
        whose = f"it does not carry this tenant's marks ({marks})"
    return [
        Problem(
            "slug",
            f"namespace {tenant} already exists and {whose}: `up` would take it over, and a "
            "later destroy delete it. If it is a tenant onboarded by hand, bring it in with "
            f"`gpu-tenants import {tenant}` and review the spec it writes; otherwise "
            "choose another slug",
        )
    ]


def check_rehearsal(
    wanted: bool, live: LiveCluster, tenant: str, users: Sequence[User]
) -> list[Problem]:
    """A refusal of `lifecycle.rehearsal: true` for a tenant that may hold data: one whose
    namespace records it was not a rehearsal, or, its namespace gone, one whose users' tombstones
    Authentik keeps with the day they are kept until (only an offboarding writes it; a
    rehearsal's destroy only disables). A rehearsal's gates are open: it would reactivate the
    tombstones, and its destroy deletes with no archive, snapshot or sign-off."""
    if not wanted:
        return []
    if live.namespace_exists:
        if live.rehearsal is not False:
            return []
        why = "this tenant exists and was not onboarded as a rehearsal"
        instead = "offboard it through the stages instead"
    else:
        kept = sorted(u.username for u in users if kept_tombstone(u.attributes, tenant))
        if not kept:
            return []
        why = (
            "this tenant was offboarded and Authentik keeps its users' tombstones "
            f"({', '.join(kept)}), which a rehearsal would reactivate"
        )
        instead = (
            "onboard it again without rehearsal (lifecycle.restore brings back what offboarding "
            "kept); if it was only ever a test tenant, an Authentik admin removes the attribute "
            f"{KEPT_UNTIL_ATTRIBUTE} from those users"
        )
    return [
        Problem(
            "lifecycle.rehearsal",
            f"true refused: {why}, and a rehearsal's destroy deletes its data with no archive, "
            f"snapshot or sign-off; {instead}",
        )
    ]


def check_directory(
    spec: TenantSpec,
    spec_path: Path,
    ldap: Ldap,
    users: Sequence[User],
    groups: Sequence[Group],
    adopted: Found | None,
) -> list[Problem]:
    """Refusals of the numbers Authentik's outpost already hands to someone other than the
    spec's own users and groups, and of the spec's users and groups that exist in Authentik
    without this tenant's mark, unless `import` found and recorded them (`adopted`) and, for a
    user, they are no superuser, no service account and in no group but the tenant's."""
    held = handed_out(users, groups, ldap.uid_start_number, ldap.gid_start_number)
    refusals = [
        Problem(collision.places[0].field, collision.message)
        for collision in live_collisions({spec_path: spec}, held)
    ]
    fix = (
        f"if it is this tenant's, made by hand, bring the tenant in with `gpu-tenants "
        f"import {spec.slug}`; otherwise choose another name"
    )
    recorded_users = adopted.authentik_users if adopted else {}
    recorded_groups = adopted.authentik_groups if adopted else {}
    group_named = {group.name: group for group in groups}
    own_groups = {
        group.pk: name
        for name in (spec.slug, spec.admins_group)
        if (group := group_named.get(name)) is not None
    }
    user_named = {user.username: user for user in users}
    for index, user in enumerate(spec.users):
        found = user_named.get(user.username)
        if found is None or found.attributes.get(MARK_ATTRIBUTE) == spec.slug:
            continue
        where = f"users.{index}.username"
        recorded = recorded_users.get(found.username) == found.pk
        if found.attributes.get(MARK_ATTRIBUTE) is None and recorded:
            unfit = found.never_adopted(own_groups, {g.pk: g.name for g in groups})
            if unfit:
                refusals.append(
                    Problem(where, f"Authentik user {user.username!r} {unfit}: never adopted")
                )
            continue
        refusals.append(
            Problem(
                where,
                f"Authentik user {user.username!r} already exists and is "
                f"{_whose(found.attributes)}: `up` would rewrite its uid and SSH keys and put it "
                f"in the tenant's group; {fix}",
            )
        )
    for name in own_groups.values():
        found_group = group_named[name]
        mark = found_group.attributes.get(MARK_ATTRIBUTE)
        if mark == spec.slug or (mark is None and recorded_groups.get(name) == found_group.pk):
            continue
        refusals.append(
            Problem(
                "slug",
                f"Authentik group {name!r} already exists and is "
                f"{_whose(found_group.attributes)}; {fix}",
            )
        )
    return refusals


def _whose(attributes: dict[str, object]) -> str:
    owner = attributes.get(MARK_ATTRIBUTE)
    return f"tenant {owner}'s" if owner else "not marked as any tenant's"


def check_capacity(
    spec: TenantSpec,
    beside: Iterable[TenantSpec],
    capacity: Capacity,
    organizations: Collection[str],
    headroom_percent: int,
) -> list[Problem]:
    """A tenant whose organization Weka does not have yet fits, with `headroom_percent` to
    spare, in the cluster's unprovisioned capacity less what the active specs `beside` it
    whose organizations do not exist yet will take: otherwise its `up` would stop at the
    filesystems, after Slurm, Authentik and Kubernetes objects were made."""
    wanted = spec.own_filesystem_bytes
    if not wanted or spec.slug in organizations:
        return []
    pending = {
        other.slug: other.own_filesystem_bytes
        for other in beside
        if other.slug != spec.slug
        and other.own_filesystem_bytes
        and other.lifecycle.stage == "active"
        and other.slug not in organizations
    }
    needed = wanted * (100 + headroom_percent) // 100
    left = capacity.unprovisioned - sum(pending.values())
    if needed <= left:
        return []
    storage = spec.storage
    promised = (
        f", of which {approximate_size(sum(pending.values()))} goes to specs not applied yet "
        f"({', '.join(sorted(pending))})"
        if pending
        else ""
    )
    return [
        Problem(
            "storage",
            f"the tenant's filesystems ({approximate_size(storage.home_capacity)} home + "
            f"{approximate_size(storage.scratch.hard)} scratch) with the platform's "
            f"{headroom_percent}% headroom need {approximate_size(needed)}, and Weka has "
            f"{approximate_size(capacity.unprovisioned)} unprovisioned{promised}: "
            f"{approximate_size(max(left, 0))} is left. Free capacity on Weka first, or lower "
            "storage.home_capacity or storage.scratch.hard",
        )
    ]
