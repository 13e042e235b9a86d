"""The checks `diagnose` runs against the live cluster, one per failure the runbooks' "What could go
wrong" sidebars and the vendor's troubleshooting page name. Each reads only (kubectl get and auth
can-i, sacctmgr/scontrol show, Authentik and Weka GETs) and yields a Finding per failure, with the
evidence it read, the cause and the fix. A backend that does not answer raises: the runner turns
that into one finding for the backend.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from providers.authentik.client import AuthentikClient
from providers.authentik.settings import Settings as AuthentikSettings
from providers.kubectl import Kubectl, kubectl_get
from providers.kubernetes.login_pods import LoginPods
from providers.slurm import values
from providers.slurm.accounting_export import export
from providers.slurm.queue import SlurmQueue, described, stuck_completing, unstick
from providers.slurm.settings import Settings as SlurmSettings
from providers.weka.client import WekaClient
from providers.weka.csi import WEKA_CSI_DRIVER
from providers.weka.settings import Settings as WekaSettings
from tenant_stack.components.login_pod import release_name
from tenant_stack.components.tenant_namespace import workload_labels
from tenant_stack.diagnosis.findings import Finding
from tenant_stack.diagnosis.gpu_usage import Usage, read_usage
from tenant_stack.fleet.live_numbers import handed_out
from tenant_stack.live import TENANT_LABEL
from tenant_stack.mapping import filesystems, login_replicas
from tenant_stack.platform import Platform
from tenant_stack.spec import TenantSpec

__all__ = ["CHECKS", "OVERSUBSCRIBED", "STAGE_CHECKS", "Check", "oversubscribed"]

_UP = "pulumi up --refresh --stack {slug}"  # puts back what the program declares
_FINISHED = ("Succeeded", "Failed")  # pod phases
OVERSUBSCRIBED = "gpus-oversubscribed"
STUCK_COMPLETING = "jobs-stuck-completing"
# Failures that block the next offboarding stage: `status` names them among its blockers.
STAGE_CHECKS = ("empty-sacct-export", "filesystem-in-use", STUCK_COMPLETING)


@dataclass(frozen=True)
class Check:
    name: str
    backend: str  # "kubernetes", "slurm", "authentik": what it reads
    run: Callable[[TenantSpec, Platform], Iterator[Finding]]


def _namespace_usable(spec: TenantSpec) -> bool:
    """The namespace exists and is not being deleted: else the namespace check's finding
    explains whatever is missing inside it, and the checks of what is inside stand down."""
    found = kubectl_get("namespace", spec.namespace)
    return found is not None and (found.get("status") or {}).get("phase") != "Terminating"


def reservation(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    if not spec.reservation.nodes or spec.lifecycle.stage == "destroy":
        return
    found = kubectl_get("reservation", spec.reservation_name)
    if found is None:
        yield Finding(
            "reservation-missing",
            "CapacityReservation",
            30,
            f"`kubectl get reservation {spec.reservation_name}`: not found",
            "the tenant's nodes are not reserved for it: any workload may land on them",
            _UP.format(slug=spec.slug),
        )
        return
    evict = (found.get("spec") or {}).get("evictOnRelease")
    if evict is not False:
        yield Finding(
            "reservation-evicts-on-release",
            "CapacityReservation",
            40,
            f"reservation {spec.reservation_name} has spec.evictOnRelease={evict!r}",
            "removing a node from the reservation (an RMA, say) would kill the tenant's "
            "running jobs on it at once instead of draining them",
            f"kubectl patch reservation {spec.reservation_name} --type merge "
            '-p \'{"spec":{"evictOnRelease":false}}\' (or ' + _UP.format(slug=spec.slug) + ")",
        )


def leftover_nodes(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """Nodes that carry the tenant's label or taint without being in its reservation: what the
    operator leaves when a reservation is deleted without its finalizer running."""
    reserved = set(spec.reservation.nodes) if spec.lifecycle.stage != "destroy" else set()
    nodes = (kubectl_get("nodes") or {}).get("items") or []
    stale = sorted(
        node["metadata"]["name"]
        for node in nodes
        if node["metadata"]["name"] not in reserved
        and (
            (node["metadata"].get("labels") or {}).get(TENANT_LABEL) == spec.slug
            or any(
                t.get("key") == TENANT_LABEL and t.get("value") == spec.slug
                for t in node.get("spec", {}).get("taints") or []
            )
        )
    )
    if stale:
        names = " ".join(stale)
        yield Finding(
            "nodes-keep-tenant-taint",
            "CapacityReservation",
            40,
            f"nodes {', '.join(stale)} carry {TENANT_LABEL}={spec.slug} (label or taint) but are "
            "not in the tenant's reservation",
            "the reservation operator did not release them (a reservation deleted with its "
            "finalizer removed by hand): no other workload can use them",
            f"for n in {names}; do kubectl label node $n {TENANT_LABEL}-; "
            f"kubectl taint node $n {TENANT_LABEL}-; done",
        )


def namespace(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    found = kubectl_get("namespace", spec.namespace)
    if found is None:
        if spec.lifecycle.stage != "destroy":
            yield Finding(
                "namespace-missing",
                "TenantNamespace",
                20,
                f"`kubectl get namespace {spec.namespace}`: not found",
                "the tenant's namespace is gone: nothing of its Kubernetes layer can work",
                _UP.format(slug=spec.slug),
            )
        return
    if (found.get("status") or {}).get("phase") != "Terminating":
        return
    said = [
        f"{c.get('type')}: {c.get('message')}"
        for c in (found.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    ]
    yield Finding(
        "namespace-stuck-terminating",
        "TenantNamespace",
        20,
        f"namespace {spec.namespace} is Terminating; " + ("; ".join(said) or "no condition"),
        "an object in it carries a finalizer whose controller does not remove it, so the "
        "namespace controller cannot finish deleting it",
        f"list what holds it: kubectl api-resources --verbs=list --namespaced -o name | xargs -n1 "
        f"kubectl get -n {spec.namespace} --ignore-not-found -o name; then fix the controller "
        "that owns the finalizer, or remove it by hand once its cleanup is known to be done "
        '(kubectl patch <object> --type merge -p \'{"metadata":{"finalizers":null}}\')',
    )


def binding(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """The ReservationBinding selects the tenant's workloads: its podSelector is the label the
    program declares for them, and every pod of the namespace (but the login release's)
    carries it."""
    if not spec.reservation.nodes or spec.lifecycle.stage == "destroy":
        return
    if not _namespace_usable(spec):
        return
    name = f"{spec.slug}-binding"
    found = kubectl_get("reservationbinding", name, f"--namespace={spec.namespace}")
    selector = ((found or {}).get("spec") or {}).get("podSelector", {}).get("matchLabels")
    wanted = workload_labels(spec.slug)
    if found is None or selector != wanted:
        yield Finding(
            "binding-misses-workloads",
            "TenantNamespace",
            40,
            f"reservationbinding {spec.namespace}/{name}: "
            + ("not found" if found is None else f"podSelector.matchLabels={selector}"),
            f"the tenant's workloads carry {wanted} and the binding does not select them, so "
            "their pods get no toleration for the tenant's nodes and land elsewhere",
            _UP.format(slug=spec.slug),
        )
        return
    login = f"{release_name(spec.slug)}-"
    pods = (kubectl_get("pods", f"--namespace={spec.namespace}") or {}).get("items") or []
    # A pod that has finished holds no node, wherever it ran.
    unlabelled = sorted(
        pod["metadata"]["name"]
        for pod in pods
        if not pod["metadata"]["name"].startswith(login)
        and (pod.get("status") or {}).get("phase") not in _FINISHED
        and not wanted.items() <= (pod["metadata"].get("labels") or {}).items()
    )
    if unlabelled:
        label = ",".join(f"{key}={value}" for key, value in wanted.items())
        yield Finding(
            "workloads-outside-binding",
            "TenantNamespace",
            41,
            f"pods {', '.join(unlabelled)} in {spec.namespace} lack {label}, which "
            f"reservationbinding {name} selects",
            "those pods get no toleration for the tenant's reserved nodes: they stay Pending, "
            "or run on shared nodes outside the contract",
            f"add the label {label} to the pod template of what made them (the Deployment, "
            "Job or StatefulSet), then let their pods be replaced",
        )


def ldap_bind_secret(spec: TenantSpec, platform: Platform) -> Iterator[Finding]:
    if spec.lifecycle.stage == "destroy" or not _namespace_usable(spec):
        return
    name = platform.kubernetes.ldap_bind_secret
    found = kubectl_get("secret", name, f"--namespace={spec.namespace}")
    if found is not None and found.get("data"):
        return
    yield Finding(
        "ldap-bind-secret-missing",
        "TenantNamespace",
        30,
        f"secret {spec.namespace}/{name}: " + ("not found" if found is None else "no data"),
        "the login pod reads the LDAP bind password from a Secret in its own namespace (not "
        f"from {platform.kubernetes.auth_namespace}); without it nslcd cannot bind and no "
        "user can log in (ldap_simple_bind: Invalid credentials)",
        _UP.format(slug=spec.slug) + f" (copies it from {platform.kubernetes.auth_namespace})",
    )


def authorized_keys(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    if spec.lifecycle.stage == "destroy" or not _namespace_usable(spec):
        return
    name = f"{spec.slug}-authorized-keys"
    data = (kubectl_get("secret", name, f"--namespace={spec.namespace}") or {}).get("data") or {}
    empty = [
        user.username
        for user in spec.users
        if user.ssh_keys and not base64.b64decode(data.get(user.username, "")).strip()
    ]
    if empty:
        yield Finding(
            "authorized-keys-empty",
            "LoginPod",
            60,
            f"secret {spec.namespace}/{name} holds no key for {', '.join(empty)}, whose spec "
            "lists SSH keys",
            "the login pod's authorized_keys come from this Secret: those users cannot log in",
            _UP.format(slug=spec.slug) + "; then restart the login pod to remount the Secret",
        )


def login_pods(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """Runbook 5a: the release's pods Ready, as many as it asks for, with sshd listening."""
    if spec.lifecycle.stage == "destroy" or not _namespace_usable(spec):
        return
    release, wanted = release_name(spec.slug), login_replicas(spec)
    pods = LoginPods(spec.namespace, release)
    look = pods.look()
    if look.serving(wanted):
        return
    yield Finding(
        "login-pods-not-ready",
        "LoginPod",
        55,
        f"{pods.name}: {look.summary(wanted)}",
        "users log in through these pods (runbook 5a): one not Ready, or missing, takes them "
        "away from the users it would serve",
        f"`kubectl -n {spec.namespace} describe pods -l app.kubernetes.io/instance={release}` "
        "names why; the platform's Helm controller restores the release's own objects",
    )


def admin_rights(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """The tenant's admins run their workloads in their namespace and cannot undo its isolation:
    checked as the vendor page does, by impersonating an admin with the admins group."""
    if not spec.identity.admins or spec.lifecycle.stage == "destroy":
        return
    if not _namespace_usable(spec):
        return
    admin = spec.identity.admins[0]
    as_admin = (
        f"`kubectl auth can-i ... --as={admin} --as-group={spec.admins_group}` in {spec.namespace}"
    )
    denied = [
        f"{verb} {resource}"
        for verb, resource in (
            ("create", "deployments.apps"),
            ("delete", "pods"),
            ("get", "secrets"),
        )
        if not _admin_can(spec, admin, verb, resource)
    ]
    if denied:
        yield Finding(
            "admins-lack-rights",
            "TenantNamespace",
            70,
            f"{as_admin}: no for {', '.join(denied)}",
            f"the admins' RoleBinding {spec.slug}-tenant-admins (group {spec.admins_group} to "
            f"Role {spec.slug}-admins) or the Role is missing or changed",
            _UP.format(slug=spec.slug),
        )
    allowed = [
        f"{verb} {resource}"
        for verb, resource in (
            ("delete", "networkpolicies.networking.k8s.io"),
            ("create", "networkpolicies.networking.k8s.io"),
            ("delete", "reservationbindings.scheduling.example.io"),
        )
        if _admin_can(spec, admin, verb, resource)
    ]
    if allowed:
        yield Finding(
            "admins-can-undo-isolation",
            "TenantNamespace",
            71,
            f"{as_admin}: yes for {', '.join(allowed)}",
            "another binding gives the admins more than the tenant's Role, such as the "
            f"runbook's RoleBinding {spec.slug}-admins to ClusterRole edit (a tenant imported "
            "from the runbook keeps it): they can remove the NetworkPolicies that isolate it",
            f"kubectl -n {spec.namespace} delete rolebinding {spec.slug}-admins (the stack binds "
            f"the admins through {spec.slug}-tenant-admins), and any other binding of "
            f"{spec.admins_group}",
        )


def _admin_can(spec: TenantSpec, admin: str, verb: str, resource: str) -> bool:
    argv = ("auth", "can-i", verb, resource, f"--as={admin}", f"--as-group={spec.admins_group}")
    return Kubectl(*argv, namespace=spec.namespace).answer().stdout.strip() == "yes"


def partition_time(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    if spec.lifecycle.stage == "destroy":
        return
    settings = SlurmSettings.from_environment()
    partition = settings.client().partition(spec.partition)
    if partition is None:
        yield Finding(
            "partition-missing",
            "SlurmAccounting",
            30,
            f"`scontrol show partition {spec.partition}`: not found",
            "the tenant's jobs have no partition to run in",
            _UP.format(slug=spec.slug),
        )
        return
    contracted = values.seconds(spec.contract.wall_limit.slurm())
    live = values.seconds(partition.max_time)
    if live is not None and (contracted is None or live < contracted):
        yield Finding(
            "partition-maxtime-short",
            "SlurmAccounting",
            50,
            f"partition {spec.partition} has MaxTime={partition.max_time}; the contract's "
            f"wall limit is {spec.contract.wall_limit.slurm()}",
            "jobs are killed at the partition's MaxTime before the wall limit the tenant was sold",
            _UP.format(slug=spec.slug) + " (the program writes MaxTime from contract.wall_limit)",
        )


def identity(spec: TenantSpec, platform: Platform) -> Iterator[Finding]:
    """The tenant's groups and users in Authentik, each with the number its LDAP outpost hands
    out (uidNumber, else uid_start_number + pk; gidNumber, else gid_start_number + num_pk)
    against the spec's pinned one, which Slurm's accounting and the Weka owners carry."""
    if spec.lifecycle.stage == "destroy":
        return
    ldap = platform.ldap
    missing = []
    with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
        for name, (field, gid) in _pinned_groups(spec).items():
            group = directory.find_group(name)
            if group is None:
                missing.append(f"group {name}")
                continue
            (live,) = handed_out([], [group], ldap.uid_start_number, ldap.gid_start_number)
            if live.number != gid:
                said = f"Authentik group {name} has gidNumber {live.number}"
                yield _number_differs(spec, said, field, gid)
        for i, user in enumerate(spec.users):
            found = directory.find_user(user.username)
            if found is None:
                missing.append(f"user {user.username}")
                continue
            held = handed_out([found], [], ldap.uid_start_number, ldap.gid_start_number)
            if held[0].number != user.uid:
                said = f"Authentik user {user.username} has uidNumber {held[0].number}"
                yield _number_differs(spec, said, f"users.{i}.uid", user.uid)
    if missing:
        yield _identity_missing(spec, f"Authentik has no {', '.join(missing)}")


def login_pod_identity(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """Runbook 5b: each user and the tenant's groups as a Ready login pod resolves them
    (`getent`, through nslcd and the LDAP outpost), against the spec's numbers: the owners the
    users' files and processes show there."""
    if spec.lifecycle.stage == "destroy" or not _namespace_usable(spec):
        return
    pods = LoginPods(spec.namespace, release_name(spec.slug))
    ready = pods.look().ready
    if not ready:
        return  # login-pods-not-ready says why
    pod = ready[0]
    source = f"login pod {pod}"
    unknown = []
    users = pods.getent(pod, "passwd", [user.username for user in spec.users])
    for i, user in enumerate(spec.users):
        entry = users.get(user.username)
        if entry is None:
            unknown.append(f"user {user.username}")
        elif entry[2] != str(user.uid):
            said = f"resolves user {user.username} as uid {entry[2]} (getent passwd)"
            yield _number_differs(spec, f"{source} {said}", f"users.{i}.uid", user.uid, "LoginPod")
    pinned = _pinned_groups(spec)
    groups = pods.getent(pod, "group", list(pinned))
    for name, (field, gid) in pinned.items():
        entry = groups.get(name)
        if entry is None:
            unknown.append(f"group {name}")
        elif entry[2] != str(gid):
            said = f"resolves group {name} as gid {entry[2]} (getent group)"
            yield _number_differs(spec, f"{source} {said}", field, gid, "LoginPod")
    if unknown:
        yield _identity_missing(spec, f"{source} resolves no {', '.join(unknown)} (getent)")


def _pinned_groups(spec: TenantSpec) -> dict[str, tuple[str, int]]:
    """The tenant's groups by name, with the spec's field and gid for each."""
    pinned = {spec.slug: ("identity.gid", spec.identity.gid)}
    if spec.identity.admins_gid is not None:
        pinned[spec.admins_group] = ("identity.admins_gid", spec.identity.admins_gid)
    return pinned


def _identity_missing(spec: TenantSpec, evidence: str) -> Finding:
    return Finding(
        "identity-missing",
        "IdentityGroup",
        25,
        evidence,
        "deleted by hand, or declared by a spec change not applied yet: the login pod "
        "(through LDAP) knows no such user or group, so those users cannot log in and "
        "their files show as bare numbers",
        _UP.format(slug=spec.slug) + " (makes them again, with the spec's numbers)",
    )


def _number_differs(
    spec: TenantSpec, evidence: str, field: str, pinned: int, layer: str = "IdentityGroup"
) -> Finding:
    return Finding(
        "uid-mismatch" if field.startswith("users.") else "gid-mismatch",
        layer,
        30,
        f"{evidence}; {field} is {pinned}",
        "the login pod (through LDAP) and Slurm's accounting and the Weka directories (through "
        "the spec) see different owners: files appear as nobody:nogroup and jobs are charged "
        "to another number",
        _UP.format(slug=spec.slug) + " (the spec's number wins); then `pkill -HUP nslcd` in "
        "the login and slurmd pods to drop cached entries",
    )


def slurm_accounts(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """The tenant's Slurm account and its teams' sub-accounts, which every job is charged to."""
    if spec.lifecycle.stage == "destroy":
        return
    client = SlurmSettings.from_environment().client()
    missing = [name for name in spec.slurm_accounts if client.account(name) is None]
    if missing:
        yield Finding(
            "slurm-account-missing",
            "SlurmAccounting",
            30,
            f"`sacctmgr show account {','.join(missing)}`: not found on cluster {client.cluster}",
            "the tenant's users have no association to submit under: every sbatch is refused "
            "(Invalid account or account/partition combination specified)",
            _UP.format(slug=spec.slug) + " (makes the accounts and their users' associations)",
        )


def stuck_jobs(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """Jobs of the tenant's accounts stuck completing: no scancel ends them, and the drain and
    the destroy's gate wait for the tenant's queue to be empty (offboarding runbook, "scancel
    hits a job in CG")."""
    settings = SlurmSettings.from_environment()
    jobs = SlurmQueue(settings.make_transport()).jobs(spec.slurm_accounts)
    stuck = stuck_completing(jobs, settings.stuck_completing, time.time())
    if stuck:
        yield Finding(
            STUCK_COMPLETING,
            "SlurmAccounting",
            40,
            f"`squeue -A {','.join(spec.slurm_accounts)}`: {len(stuck)} jobs completing for more "
            f"than {settings.stuck_completing:g}s: {described(stuck)}",
            "the jobs ended but their nodes never confirmed it: they hold their nodes, and the "
            "drain and the destroy wait for the queue to be empty",
            unstick(stuck),
        )


def storage(spec: TenantSpec, platform: Platform) -> Iterator[Finding]:
    """The tenant's Weka organization (org isolation) or its directories on the shared
    filesystems (directory isolation) exist."""
    if spec.lifecycle.stage == "destroy":
        return
    missing = []
    with WekaClient.from_settings(WekaSettings.from_environment()) as weka:
        if spec.storage.isolation == "org":
            if weka.find_organization(spec.slug) is None:
                missing.append(f"organization {spec.slug}")
        else:
            for name in (
                platform.weka.shared_home_filesystem,
                platform.weka.shared_scratch_filesystem,
            ):
                shared = weka.find_filesystem(name)
                if shared is None or weka.resolve_path(shared.uid, f"/{spec.slug}") is None:
                    missing.append(f"directory {name}/{spec.slug}")
    if missing:
        yield Finding(
            "storage-missing",
            "WekaStorage",
            30,
            f"Weka has no {', '.join(missing)}",
            "the tenant's home and scratch are gone or were never made: jobs and logins fail",
            _UP.format(slug=spec.slug),
        )


def billing_export(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """Runbook 3b's sanity check, before the archived stage makes the export: the tenant's
    jobs as sacct lists them, which an archive refuses to find empty."""
    lifecycle = spec.lifecycle
    if lifecycle.stage not in ("drained", "archived") or lifecycle.rehearsal or lifecycle.no_jobs:
        return
    accounts = spec.slurm_accounts
    transport = SlurmSettings.from_environment().make_transport()
    if export(transport, "jobs", accounts, allow_empty=True).rows:
        return
    listed = ",".join(accounts)
    yield Finding(
        "empty-sacct-export",
        "SlurmAccounting",
        35,
        f"`sacct -X --allusers --accounts={listed} --starttime=1970-01-01`: no job",
        "the billing export would be empty, and stage archived refuses an empty one: the "
        "tenant's history is not where sacct looks (another cluster in slurmdbd, accounts "
        "renamed, jobs purged by PurgeJobAfter) or the tenant never ran a job",
        f"look further (`sacct -X --allusers --accounts={listed} --starttime=1970-01-01 "
        "--clusters=all`, and slurmdbd.conf's Purge* settings); if the tenant truly ran no job, "
        "say so in the change ticket and set lifecycle.no_jobs: true in the spec",
    )


def volumes_in_use(spec: TenantSpec, platform: Platform) -> Iterator[Finding]:
    """The tenant's Weka volumes still attached to a node once the filesystems are next to go:
    Weka refuses to delete a filesystem a client mounts ("filesystem is in use")."""
    if spec.lifecycle.stage not in ("snapshotted", "destroy"):
        return
    own = set(filesystems(spec, platform)) if spec.storage.isolation == "org" else set()

    def tenants(volume: dict[str, Any]) -> bool:
        source = volume["spec"].get("csi") or {}
        claim = volume["spec"].get("claimRef") or {}
        handle = str(source.get("volumeHandle", "")).split("/")
        return source.get("driver") == WEKA_CSI_DRIVER and (
            claim.get("namespace") == spec.namespace or (len(handle) > 2 and handle[2] in own)
        )

    volumes = {
        v["metadata"]["name"]: v
        for v in (kubectl_get("persistentvolumes") or {}).get("items") or []
    }
    attached = sorted(
        (a["spec"]["nodeName"], a["metadata"]["name"], name)
        for a in (kubectl_get("volumeattachments") or {}).get("items") or []
        if (name := a["spec"].get("source", {}).get("persistentVolumeName")) in volumes
        and tenants(volumes[name])
    )
    if not attached:
        return
    nodes = sorted({node for node, _, _ in attached})
    handles = ", ".join(
        f"{volume} ({volumes[volume]['spec']['csi']['volumeHandle']}) on {node} by {attachment}"
        for node, attachment, volume in attached
    )
    yield Finding(
        "filesystem-in-use",
        "WekaStorage",
        35,
        f"volumeattachments of the tenant's Weka volumes: {handles}",
        "a client still mounts the tenant's storage: Weka refuses to delete a filesystem in use, "
        "so the destroy would stop there (often a stale wekafs mount on a node that left the "
        "cluster with the kernel module loaded)",
        f"find the holder on {', '.join(nodes)} (`kubectl get pods -A --field-selector "
        "spec.nodeName=<node>`; `mount -t wekafs` on the node) and stop it; a node that left "
        "the cluster: `umount` the stale mount there, then `kubectl delete volumeattachment "
        "<name>`; then the destroy again",
    )


def gpus(spec: TenantSpec, _: Platform) -> Iterator[Finding]:
    """Each scope whose running work holds more GPUs than its cap."""
    if spec.lifecycle.stage != "destroy":
        yield from oversubscribed(spec, read_usage(spec))


def oversubscribed(spec: TenantSpec, usage: Usage) -> Iterator[Finding]:
    """The findings of `gpus` on a usage already read."""
    for scope in usage.scopes:
        if not scope.over:
            continue
        team = scope.scope.removeprefix("team ")
        yield Finding(
            OVERSUBSCRIBED,
            "SlurmAccounting",
            45,
            f"{scope.scope}: {scope.used} GPUs in use (Slurm running jobs {scope.slurm}, "
            f"Kubernetes pod requests {scope.kubernetes}), cap {scope.cap} ({scope.cap_from})",
            "a cap was lowered under running work: Slurm keeps running what started under the "
            "old cap and holds back new jobs until the scope is under it again",
            "let the running jobs end, or end some ("
            + (f"squeue --accounts={team} --states=RUNNING" if team != "tenant" else
               f"squeue --accounts={','.join(spec.slurm_accounts)} --states=RUNNING; "
               f"kubectl -n {spec.namespace} get pods")
            + f"), or raise {scope.cap_from} in the spec",
        )  # fmt: skip


CHECKS = (
    Check("namespace", "kubernetes", namespace),
    Check("reservation", "kubernetes", reservation),
    Check("leftover-nodes", "kubernetes", leftover_nodes),
    Check("binding", "kubernetes", binding),
    Check("ldap-bind-secret", "kubernetes", ldap_bind_secret),
    Check("authorized-keys", "kubernetes", authorized_keys),
    Check("login-pods", "kubernetes", login_pods),
    Check("login-pod-identity", "kubernetes", login_pod_identity),
    Check("admin-rights", "kubernetes", admin_rights),
    Check("partition-time", "slurm", partition_time),
    Check("slurm-accounts", "slurm", slurm_accounts),
    Check("stuck-jobs", "slurm", stuck_jobs),
    Check("identity", "authentik", identity),
    Check("storage", "weka", storage),
    Check("gpus", "slurm", gpus),
    Check("billing-export", "slurm", billing_export),
    Check("volumes-in-use", "kubernetes", volumes_in_use),
)
