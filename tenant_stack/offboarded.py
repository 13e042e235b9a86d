"""The offboarding runbook's final check (step 8, "what offboarded looks like"): every backend
searched for anything of the tenant still live, and what is retained listed with its dates.

Each item of the change ticket's checklist is a `Check`; `verify` runs them all, whatever fails,
so the operator sees every gap at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from providers.authentik.client import AuthentikClient
from providers.authentik.settings import Settings as AuthentikSettings
from providers.errors import BackendError
from providers.kubectl import kubectl_json
from providers.retention.client import RetentionStore
from providers.retention.ledger import Ledger
from providers.retention.objects import RETENTION_UNTIL, tenant_prefix
from providers.slurm.queue import SlurmQueue
from providers.slurm.settings import Settings as SlurmSettings
from providers.weka.client import WekaClient
from providers.weka.settings import Settings as WekaSettings
from tenant_stack.errors import ClusterError
from tenant_stack.live import TENANT_LABEL
from tenant_stack.mapping import ARCHIVE_KINDS
from tenant_stack.platform import Platform
from tenant_stack.retention_calendar import Record
from tenant_stack.spec import TenantSpec


@dataclass(frozen=True)
class Check:
    item: str  # the checklist's words
    ok: bool
    detail: str


def _items(*args: str) -> list[dict[str, Any]]:
    """The items of `kubectl get <args>`."""
    items: list[dict[str, Any]] = kubectl_json(*args)["items"]
    return items


def _capacity(spec: TenantSpec) -> Check:
    names = sorted(
        n["metadata"]["name"] for n in _items("get", "nodes", "-l", f"{TENANT_LABEL}={spec.slug}")
    )
    tainted = [
        n["metadata"]["name"]
        for n in _items("get", "nodes")
        if any(t.get("value") == spec.slug for t in n.get("spec", {}).get("taints") or [])
    ]
    ok = not names and not tainted
    detail = "no node labelled or tainted for the tenant" if ok else f"{names or tainted}"
    return Check("Capacity returned: nodes free of the tenant's label and taint", ok, detail)


def _kubernetes(spec: TenantSpec) -> Check:
    left = [
        f"namespace/{n['metadata']['name']}"
        for n in _items("get", "namespaces")
        if n["metadata"]["name"] == spec.namespace
    ]
    left += [
        f"reservation/{r['metadata']['name']}"
        for r in _items("get", "reservations")
        if r["metadata"]["name"] == spec.reservation_name
    ]
    return Check(
        "No tenant Kubernetes objects or namespace remain",
        not left,
        "none" if not left else f"still there: {', '.join(left)}",
    )


def _slurm(spec: TenantSpec) -> Check:
    settings = SlurmSettings.from_environment()
    client = settings.client()
    left = [f"account {a}" for a in spec.slurm_accounts if client.account(a, all_clusters=True)]
    left += [f"QoS {q}" for q in (spec.qos_normal, spec.qos_interactive) if client.qos(q)]
    if client.partition(spec.partition) is not None:
        left.append(f"partition {spec.partition}")
    left += [
        f"job {job}" for job in SlurmQueue(settings.make_transport()).jobs(spec.slurm_accounts)
    ]
    return Check(
        "No Slurm partition, account, QoS or job of the tenant remains",
        not left,
        "none" if not left else f"still there: {', '.join(left)}",
    )


def _purged(spec: TenantSpec) -> frozenset[str]:
    """What the retention purge has deleted, as the tenant's ledger records: no longer kept."""
    with Ledger.open() as ledger:
        return Record.of(ledger.entries(spec.slug)).purged


def _identity(spec: TenantSpec) -> Check:
    problems = []
    purged = _purged(spec)
    with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as client:
        for name in (spec.slug, spec.admins_group):
            if client.find_group(name) is not None:
                problems.append(f"group {name} still exists")
        for user in spec.users:
            found = client.find_user(user.username)
            if found is None and f"user:{user.username}" in purged:
                continue
            if found is None:
                problems.append(f"user {user.username} is gone (expected a disabled tombstone)")
            elif found.is_active:
                problems.append(f"user {user.username} is still active")
    return Check(
        "Authentik users disabled and kept; the tenant's groups gone",
        not problems,
        "; ".join(problems) or f"{len(spec.users)} users disabled",
    )


def _storage(spec: TenantSpec, platform: Platform) -> Check:
    with WekaClient.from_settings(WekaSettings.from_environment()) as weka:
        left = [f"organization {spec.slug}"] if weka.find_organization(spec.slug) else []
        # A directory-isolated tenant's directories sit on the platform's shared filesystems.
        for name in (platform.weka.shared_home_filesystem, platform.weka.shared_scratch_filesystem):
            shared = weka.find_filesystem(name)
            if shared is not None and weka.resolve_path(shared.uid, f"/{spec.slug}") is not None:
                left.append(f"directory {name}/{spec.slug}")
    return Check(
        "No Weka organization, filesystem or directory of the tenant remains",
        not left,
        "none" if not left else f"still there: {', '.join(left)}",
    )


def _archives(spec: TenantSpec) -> Check:
    purged = _purged(spec)
    with RetentionStore.from_environment() as store:
        found = {info.key: info for info in store.list(tenant_prefix(spec.slug))}
        lines, missing = [], []
        for kind in ARCHIVE_KINDS:
            key = next((k for k in found if k.startswith(f"{spec.slug}/slurm/{kind}.")), None)
            if key is None and kind in purged:
                lines.append(f"{kind} purged after its retention")
                continue
            if key is None:
                missing.append(kind)
                continue
            head = store.head(key)
            until = (head.metadata or {}).get(RETENTION_UNTIL, "?") if head else "?"
            lines.append(f"{store.url(key)} until {until}")
    return Check(
        "Slurm accounting and logs archived in the retention store, with retention dates",
        not missing,
        "; ".join(lines) + (f"; missing: {', '.join(missing)}" if missing else ""),
    )


def verify(spec: TenantSpec, platform: Platform) -> list[Check]:
    """Every item of the checklist; a backend that cannot be read fails its own item."""
    steps: list[tuple[str, Callable[[TenantSpec], Check]]] = [
        ("Kubernetes nodes", _capacity),
        ("Kubernetes objects", _kubernetes),
        ("Slurm", _slurm),
        ("Authentik", _identity),
        ("Weka", lambda s: _storage(s, platform)),
        ("retention store", _archives),
    ]
    return list(_run(spec, steps))


def _run(
    spec: TenantSpec, steps: list[tuple[str, Callable[[TenantSpec], Check]]]
) -> Iterator[Check]:
    for backend, step in steps:
        try:
            yield step(spec)
        except (BackendError, ClusterError, OSError) as error:
            yield Check(f"{backend} could be read", False, str(error))
