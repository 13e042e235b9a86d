"""The offboarding runbook's final check (step 8, "what offboarded looks like"): every backend
searched for anything of the tenant still live, and what is retained listed with its dates.

Each item of the change ticket's checklist is a `Check`; `verify` runs them all, whatever fails,
so the operator sees every gap at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.authentik.client import AuthentikClient
from providers.authentik.settings import Settings as AuthentikSettings
from providers.errors import BackendError
from providers.kubectl import kubectl_json
from providers.notices.delivery import send_once, sent_notices
from providers.retention.client import RetentionStore
from providers.retention.ledger import Ledger
from providers.retention.objects import (
    RETENTION_UNTIL,
    kept_under,
    tenant_prefix,
    uploaded_snapshot_prefix,
)
from providers.slurm.queue import SlurmQueue
from providers.slurm.settings import Settings as SlurmSettings
from providers.weka.client import WekaClient
from providers.weka.settings import Settings as WekaSettings
from tenant_stack.components.tenant_namespace import isolation_policy_name
from tenant_stack.components.weka_storage import storage_class_name
from tenant_stack.errors import ClusterError
from tenant_stack.handover import completion_notice, customer_notice
from tenant_stack.live import TENANT_LABEL
from tenant_stack.mapping import ARCHIVE_KINDS
from tenant_stack.platform import Platform
from tenant_stack.retention_calendar import Record, retained_in
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


# What a tenant's objects can be, beside its namespace: made by the stack or by a hand.
_KINDS = (
    "namespaces",
    "reservations",
    "storageclasses",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "clusterroles",
    "clusterrolebindings",
    "persistentvolumes",
)


def _kubernetes(spec: TenantSpec) -> Check:
    """The namespace and every cluster-scoped object of the tenant: those the stack made (by
    the names the program gives them), those labelled with the tenant, the volumes its claims
    kept (Retain), and any cluster-wide binding of its groups, users or service accounts."""
    made = {
        ("Namespace", spec.namespace),
        ("Reservation", spec.reservation_name),
        ("StorageClass", storage_class_name(spec.slug)),
        ("ValidatingAdmissionPolicy", isolation_policy_name(spec.slug)),
        ("ValidatingAdmissionPolicyBinding", isolation_policy_name(spec.slug)),
    }
    subjects = {
        *(("Group", name) for name in (spec.slug, spec.admins_group)),
        *(("User", user.username) for user in spec.users),
        *(("ServiceAccount", spec.namespace),),
    }
    left = sorted(
        f"{item['kind'].lower()}/{item['metadata']['name']}"
        for item in _items("get", ",".join(_KINDS))
        if (item["kind"], item["metadata"]["name"]) in made
        or _tenants(item, spec.slug)
        or ((item.get("spec") or {}).get("claimRef") or {}).get("namespace") == spec.namespace
        or any(_subject(s) in subjects for s in item.get("subjects") or [])
    )
    return Check(
        "No tenant Kubernetes objects or namespace remain, namespaced or cluster-wide",
        not left,
        "none" if not left else f"still there: {', '.join(left)}",
    )


def _tenants(item: dict[str, Any], slug: str) -> bool:
    """Labelled as the tenant's, the way the reservation operator and the stack label."""
    labels = item["metadata"].get("labels") or {}
    return slug in (labels.get("tenant"), labels.get(TENANT_LABEL))


def _subject(subject: dict[str, Any]) -> tuple[str, str]:
    """A binding's subject as (kind, name); a service account by its namespace."""
    kind = str(subject.get("kind"))
    name = subject.get("namespace") if kind == "ServiceAccount" else subject.get("name")
    return kind, str(name)


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


def _read_back(spec: TenantSpec, state: Sequence[Mapping[str, Any]]) -> Check:
    """Everything retained reads back: each directory copy whole against its recorded digest,
    each archive to its end, and each uploaded snapshot (in the stack's state) as objects under
    its locator that Weka reads as the snapshot of the filesystem it was uploaded from."""
    problems, read = [], 0
    with RetentionStore.from_environment() as store:
        for info in store.list(tenant_prefix(spec.slug)):
            kept = kept_under(spec.slug, info.key)
            if kept is None:
                continue
            if kept[0] == "copy" and (why := store.why_not_whole(info.key)):
                problems.append(why)
                continue
            if kept[0] == "archive":
                store.sha256(info.key)  # a read to its last byte, which raises if it cannot
            read += 1
        uploads = [r["outputs"] for r in state if str(r.get("type")).endswith(":UploadedSnapshot")]
        with WekaClient.from_settings(WekaSettings.from_environment()) as weka:
            for upload in uploads:
                prefix = uploaded_snapshot_prefix(upload["locator"])
                if not store.list(prefix):
                    problems.append(f"{store.url(prefix)} holds no object of the upload")
                    continue
                found = weka.locator_info(upload["object_store"], upload["locator"])
                if found.fs_name != upload["filesystem"]:
                    problems.append(
                        f"{upload['locator']} holds a snapshot of {found.fs_name}, "
                        f"not of {upload['filesystem']}"
                    )
                    continue
                read += 1
    return Check(
        "Every retained copy, archive and uploaded snapshot reads back whole",
        not problems,
        "; ".join(problems) or f"{read} read back",
    )


def verify(
    spec: TenantSpec,
    platform: Platform,
    state: Sequence[Mapping[str, Any]],
    notify: bool = False,
) -> list[Check]:
    """Every item of the checklist, with the stack's last `state` (its resources); a backend
    that cannot be read fails its own item. Where the platform sends notices, the last item is
    the customer's completion notice: sent (once) when `notify` and every other item passes."""
    steps: list[tuple[str, Callable[[TenantSpec], Check]]] = [
        ("Kubernetes nodes", _capacity),
        ("Kubernetes objects", _kubernetes),
        ("Slurm", _slurm),
        ("Authentik", _identity),
        ("Weka", lambda s: _storage(s, platform)),
        ("retention store", _archives),
        ("retained data", lambda s: _read_back(s, state)),
    ]
    checks = list(_run(spec, steps))
    if platform.notices is not None:
        passed = all(check.ok for check in checks)
        steps = [("the ledger", lambda s: _notified(s, platform, state, notify and passed))]
        checks += _run(spec, steps)
    return checks


def _notified(
    spec: TenantSpec, platform: Platform, state: Sequence[Mapping[str, Any]], send: bool
) -> Check:
    item = "Customer notified of completion, with the retention end dates"
    text = completion_notice(spec, platform, retained_in(spec.slug, state))
    notice = customer_notice(spec, platform, "completion", text)
    if notice is None:
        return Check(item, False, "the spec names no one to notify: add contract.contact")
    with Ledger.open() as ledger:
        sent = [s for s in sent_notices(ledger, spec.slug) if s.kind == "completion"]
    if sent:
        return Check(item, True, f"sent {sent[-1].at:%Y-%m-%d %H:%M} UTC to {sent[-1].to}")
    if not send:
        return Check(
            item,
            False,
            "not sent: once every other item passes, `gpu-tenants verify-offboarded "
            f"{spec.slug} --notify-customer` sends it",
        )
    done, _ = send_once(notice)
    return Check(item, True, f"sent {done.at:%Y-%m-%d %H:%M} UTC to {done.to}")


def _run(
    spec: TenantSpec, steps: list[tuple[str, Callable[[TenantSpec], Check]]]
) -> Iterator[Check]:
    for backend, step in steps:
        try:
            yield step(spec)
        except (BackendError, ClusterError, OSError) as error:
            yield Check(f"{backend} could be read", False, str(error))
