"""The runbook's validation section ("what done looks like") and its sidebar, run on a tenant
built by hand before it is imported: a tenant that contradicts itself is refused, in the
runbook's words, because any spec written from it would make one of its backends wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

from providers.slurm.values import expand_hosts
from tenant_stack.errors import Problem
from tenant_stack.importing.live_tenant import LiveTenant

__all__ = ["contradictions"]


def contradictions(live: LiveTenant) -> list[Problem]:
    """Each contradiction, located at the spec field it would make wrong."""
    return [*_nodes(live), *_contract(live), *_identity(live), *_limits(live)]


def _nodes(live: LiveTenant) -> Iterator[Problem]:
    kubernetes, slug = live.kubernetes, live.slug
    reservation = kubernetes.reservation
    reserved = sorted((reservation or {}).get("spec", {}).get("reservedNodes") or [])
    partition = live.slurm.partition
    if partition is not None and sorted(expand_hosts(partition.nodes)) != reserved:
        yield Problem(
            "reservation.nodes",
            "Reservation matches partition matches contract: the node lists do not match: "
            f"Slurm partition '{slug}' has {partition.nodes}, Reservation '{slug}-reservation' "
            f"has {', '.join(reserved) or 'none'}; make them match by hand (the change ticket's "
            "node list is the one to keep), then import again",
        )
    for node in reserved:
        others = sorted(kubernetes.holders.get(node, set()) - {slug})
        if others:
            yield Problem(
                "reservation.nodes",
                f"node {node} is held by two tenants ({slug} and {', '.join(others)}): the "
                "runbook reserves only healthy GPU nodes not yet in any Reservation; release it "
                "from the one that should not have it, then import again",
            )
    if (reservation or {}).get("spec", {}).get("evictOnRelease"):
        yield Problem(
            "reservation.evict_on_release",
            "Reservation evicts pods due to evictOnRelease=true: removing a node for an RMA "
            "would kill the tenant's running jobs; set evictOnRelease: false on "
            f"'{slug}-reservation' (kubectl patch), then import again",
        )


def _contract(live: LiveTenant) -> Iterator[Problem]:
    """The contract's GPUs are one number, which the spec writes to both caps."""
    hard = (live.kubernetes.quota or {}).get("spec", {}).get("hard", {})
    quota = hard.get("requests.nvidia.com/gpu")
    account = live.slurm.account
    assoc = account.association(live.slurm.cluster) if account else None
    capped = assoc.grp_tres_gpus if assoc else None
    if quota is not None and capped is not None and int(quota) != capped:
        yield Problem(
            "contract.gpus",
            "Reservation matches partition matches contract: the namespace's ResourceQuota "
            f"allows {quota} GPUs, the Slurm account's GrpTRES gres/gpu={capped}; make them "
            "the contract's number, then import again",
        )


def _identity(live: LiveTenant) -> Iterator[Problem]:
    identity, storage = live.identity, live.storage
    for user in identity.users:
        uid = identity.uid(user)
        home = storage.homes.get(user.username)
        if home is not None and home.stat is not None and home.stat.uid != uid:
            yield Problem(
                "users",
                f"User identity consistent everywhere: {user.username}'s uid is {uid} in "
                f"Authentik (as the LDAP outpost hands it out) but {home.stat.uid} on their home "
                "directory, as the login pod sees it: files would appear as someone else's. "
                "Chown the home directory or pin uidNumber in Authentik to the number the files "
                "carry, then import again",
            )
    in_slurm = {a.user for a in live.slurm.users}
    in_directory = {u.username for u in identity.users}
    for username in sorted(in_slurm ^ in_directory):
        where, missing = ("Slurm", "Authentik") if username in in_slurm else ("Authentik", "Slurm")
        yield Problem(
            "users",
            f"User identity consistent everywhere: {username} has a {where} association but "
            f"is not in the tenant's {missing} group; add them there or remove them here, "
            "then import again",
        )


def _limits(live: LiveTenant) -> Iterator[Problem]:
    """Per-user limits the spec writes once for every user: differing ones cannot be kept."""
    users = live.slurm.users
    for name, location, attribute in (
        ("MaxJobs", "slurm.max_jobs_per_user", "max_jobs"),
        ("GrpTRESMins=gres/gpu", "contract.gpu_minutes", "grp_tres_mins_gpus"),
    ):
        each = [f"{a.user}: {getattr(a, attribute)}" for a in users]
        if len({getattr(a, attribute) for a in users}) > 1:
            yield Problem(
                location,
                f"the users' {name} differ ({', '.join(each)}): the spec gives every user the "
                "same; make them equal, then import again",
            )
    homes = live.storage.homes
    limits = {
        (h.quota.soft_limit_bytes, h.quota.hard_limit_bytes) for h in homes.values() if h.quota
    }
    if len(limits) > 1:
        yield Problem(
            "storage.home_per_user",
            "Quota enforcement live: the users' home quotas differ; the spec gives every user "
            "the same; make them equal with `weka fs quota set`, then import again",
        )
