"""What the first `up` of an imported tenant changes in the backends, for the import report: the
ownership marks it adds, the numbers it pins (each the one the LDAP outpost hands out today),
and what the hand-built tenant lacks and the stack makes. Anything else the program declares
differently shows in that `up`'s preview, for the pull request to decide."""

from __future__ import annotations

from providers.authentik.props import MARK_ATTRIBUTE
from providers.slurm.values import owner_mark
from providers.weka.organization_provider import ADOPTED_PASSWORD
from tenant_stack.importing.live_tenant import LiveTenant

__all__ = ["first_up_changes"]


def _slurm(live: LiveTenant) -> list[str]:
    slug, slurm = live.slug, live.slurm
    out = [
        f"Slurm QoS '{qos.name}': Description '{qos.description}' becomes '{owner_mark(slug)}' "
        "(the mark)"
        for qos in (slurm.normal, slurm.interactive)
        if qos is not None and qos.description != owner_mark(slug)
    ]
    out += [
        f"Slurm account '{account.name}': Organization '{account.organization}' becomes "
        f"'{slug}' (the mark)"
        for account in [*([slurm.account] if slurm.account else []), *slurm.teams]
        if account.organization != slug
    ]
    if slurm.partition is not None:
        out.append(
            f"Slurm partition '{slug}': its line in the partitions file is rewritten, the same "
            "values in the provider's form (AllowAccounts sorted)"
        )
    return out


def _identity(live: LiveTenant) -> list[str]:
    identity, slug = live.identity, live.slug
    out = [
        f"Authentik group '{group.name}': attributes {MARK_ATTRIBUTE} and tenant_slug (the mark)"
        + ("" if "gidNumber" in group.attributes else ", gidNumber pinned")
        for group in (identity.group, identity.admins)
        if group is not None and group.attributes.get(MARK_ATTRIBUTE) != slug
    ]
    for user in identity.users:
        pinned = [] if "uidNumber" in user.attributes else ["uidNumber pinned"]
        if "gidNumber" not in user.attributes:
            pinned.append(
                "gidNumber set to the tenant group's (runbook 2a's primary group; the outpost "
                "gives the user a group of their own until then)"
            )
        if user.attributes.get(MARK_ATTRIBUTE) != slug or pinned:
            out.append(
                f"Authentik user '{user.username}': attribute {MARK_ATTRIBUTE} (the mark)"
                + "".join(f", {p}" for p in pinned)
            )
    return out


def _storage(live: LiveTenant) -> list[str]:
    storage, slug = live.storage, live.slug
    quotas = [storage.home_quota, storage.scratch_quota]
    quotas += [home.quota for home in storage.homes.values()]
    out = [
        f"Weka quota on {quota.path}: owner '{slug}' (the mark)"
        for quota in quotas
        if quota is not None and quota.owner != slug
    ]
    org = storage.organization
    home, scratch = storage.home_filesystem, storage.scratch_quota
    if org is not None and home is not None and scratch is not None:
        wanted = home.total_capacity + scratch.hard_limit_bytes
        if org.total_quota != wanted:
            out.append(
                f"Weka organization '{slug}': total quota {org.total_quota} bytes becomes "
                f"{wanted} (home capacity and scratch's hard quota)"
            )
        scratch_fs = storage.scratch_filesystem
        if scratch_fs is not None and scratch_fs.total_capacity != scratch.hard_limit_bytes:
            out.append(
                f"Weka filesystem '{scratch_fs.name}': capacity {scratch_fs.total_capacity} "
                f"bytes becomes {scratch.hard_limit_bytes} (scratch's hard quota)"
            )
    if org is not None:
        out.append(
            f"Weka organization '{slug}': nothing (it carries no mark); the first `up` logs in "
            f"as its admin '{storage.org_admin}' with the password in {ADOPTED_PASSWORD}_FILE"
        )
    return out


def first_up_changes(live: LiveTenant) -> list[str]:
    """Each change the first `up` makes, in the backend's words."""
    slug = live.slug
    made = [
        f"made: {what}"
        for what, there in (
            (f"the CSI driver's Weka user '{slug}-csi'", live.storage.csi_user),
            (f"Secret 'weka-{slug}-creds'", "Secret" in live.kubernetes.csi_objects),
            (f"StorageClass 'weka-{slug}'", "StorageClass" in live.kubernetes.csi_objects),
        )
        if not there
    ]
    if live.storage.csi_user:
        made.append(f"Weka user '{slug}-csi': a new password, which its Secret then holds")
    made += [
        f"made: Role '{slug}-admins' and RoleBinding '{slug}-tenant-admins' (the admins' rights "
        "without the NetworkPolicies, binding, quota and limits), and the tenant's admission "
        f"policy '{slug}-isolation'",
        f"left: RoleBinding '{slug}-admins' (to ClusterRole edit) if the runbook made it; "
        f"delete it after the first `up` (`kubectl -n {slug} delete rolebinding {slug}-admins`), "
        "or the admins can still remove their own isolation (diagnose: admins-can-undo-isolation)",
    ]
    return [
        "Kubernetes: each object made by hand is imported as it is, then gets the annotation "
        "pulumi.com/patchForce (the mark; the Reservation also pulumi.com/waitFor and "
        "timeoutSeconds, the namespace gpu-tenants.example.io/lifecycle-stage)",
        *_slurm(live),
        *_identity(live),
        *_storage(live),
        *made,
    ]
