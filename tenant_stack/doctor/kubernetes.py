"""What the program does with the Kubernetes API, as data, and the checks that the KUBECONFIG it
uses reaches a supported API server that allows all of it.

The access comes from what the stacks declare (tenant_stack/components/: each kind the stacks
create, and the Kubernetes provider's verbs for it), what the program reads before it declares
anything (tenant_stack/live.py) and what the backends' clients do through kubectl
(providers/kubernetes/, the Slurm and Weka kubectl transports, the Slurm partitions ConfigMap and
write Lease). A tenant's namespace does not exist before its first `up`, so namespaced kinds are
asked for across every namespace, as the stacks need them in any new one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from providers.kubectl import Kubectl, kubectl_json
from tenant_stack.components.namespace_guard import ADMIN_RULES
from tenant_stack.doctor.report import Check, CheckFailedError, Steps
from tenant_stack.doctor.supported import judge

__all__ = [
    "ACCESS",
    "ESCALATE",
    "Access",
    "check_kubernetes",
    "granted",
    "judge_access",
    "needed",
    "steps_needed",
]

# The Kubernetes provider reads, server-side applies (patch), deletes and waits (watch) on what a
# stack owns.
MANAGE = ("get", "list", "watch", "create", "patch", "delete")
READ = ("get", "list")
EVERY_NAMESPACE = "*"


@dataclass(frozen=True)
class Access:
    """`verbs` on `resource` (`name[.group]`, or `name/subresource`) in `namespace`: None for a
    cluster-scoped kind, EVERY_NAMESPACE, or `$VAR` for the namespace a backend's setting names
    (`namespace/name` or a plain namespace). With `when`, only if that variable is set (to
    `when_value`, if given)."""

    verbs: tuple[str, ...]
    resource: str
    namespace: str | None
    why: str
    when: str | None = None
    when_value: str | None = None
    default_namespace: str | None = None


ACCESS: tuple[Access, ...] = (
    Access(MANAGE, "namespaces", None, "TenantNamespace: the tenant's namespace"),
    Access(MANAGE, "resourcequotas", EVERY_NAMESPACE, "TenantNamespace: its quota"),
    Access(MANAGE, "limitranges", EVERY_NAMESPACE, "TenantNamespace: its defaults"),
    Access(
        MANAGE,
        "networkpolicies.networking.k8s.io",
        EVERY_NAMESPACE,
        "TenantNamespace: the isolation policies",
    ),
    Access(
        MANAGE,
        "roles.rbac.authorization.k8s.io",
        EVERY_NAMESPACE,
        "TenantNamespace: the tenant admins' Role",
    ),
    Access(
        MANAGE,
        "rolebindings.rbac.authorization.k8s.io",
        EVERY_NAMESPACE,
        "TenantNamespace: the tenant admins' RoleBinding",
    ),
    Access(
        MANAGE,
        "validatingadmissionpolicies.admissionregistration.k8s.io",
        None,
        "TenantNamespace: the namespace guard",
    ),
    Access(
        MANAGE,
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        None,
        "TenantNamespace: the namespace guard's binding",
    ),
    Access(
        MANAGE,
        "secrets",
        EVERY_NAMESPACE,
        "the LDAP bind, CSI and authorized-keys Secrets; live.py reads the bind Secret",
    ),
    Access(MANAGE, "reservations.scheduling.example.io", None, "CapacityReservation"),
    Access(
        MANAGE,
        "reservationbindings.scheduling.example.io",
        EVERY_NAMESPACE,
        "TenantNamespace: the reservation's binding",
    ),
    Access(MANAGE, "helmreleases.helm.example.io", EVERY_NAMESPACE, "LoginPod: the login release"),
    Access(MANAGE, "storageclasses.storage.k8s.io", None, "WekaStorage: the tenant's class"),
    Access(
        MANAGE,
        "persistentvolumeclaims",
        EVERY_NAMESPACE,
        "WekaStorage: the claims; live.py reads them for the preflight",
    ),
    Access(READ, "nodes", None, "live.py: the preflight's nodes"),
    *(
        Access(READ, kind, EVERY_NAMESPACE, "offboarding: the workloads it stops")
        for kind in (
            "deployments.apps",
            "statefulsets.apps",
            "replicasets.apps",
            "daemonsets.apps",
            "jobs.batch",
            "cronjobs.batch",
        )
    ),
    *(
        Access(("patch",), f"{kind}/scale", EVERY_NAMESPACE, "offboarding: kubectl scale")
        for kind in ("deployments.apps", "statefulsets.apps", "replicasets.apps")
    ),
    *(
        Access(("patch",), kind, EVERY_NAMESPACE, "offboarding: suspends or parks them")
        for kind in ("daemonsets.apps", "jobs.batch", "cronjobs.batch")
    ),
    Access(
        ("get", "patch"),
        "configmaps",
        "$SLURM_PARTITIONS_CONFIGMAP",
        "Slurm: the partitions ConfigMap",
        when="SLURM_PARTITIONS_CONFIGMAP",
    ),
    Access(
        ("get", "create", "patch"),
        "leases.coordination.k8s.io",
        "$SLURM_WRITE_LEASE",
        "Slurm: the sacctmgr write Lease",
        when="SLURM_WRITE_LEASE",
    ),
    Access(
        ("create",),
        "pods/exec",
        "$SLURM_KUBECTL_NAMESPACE",
        "Slurm: commands in the controller pod",
        when="SLURM_TRANSPORT",
        when_value="kubectl",
        default_namespace="slurm-control",
    ),
    Access(
        ("create",),
        "pods/exec",
        "$WEKA_MOUNT_KUBECTL_NAMESPACE",
        "Weka: commands in the mount pod",
        when="WEKA_MOUNT_TRANSPORT",
        when_value="kubectl",
        default_namespace="weka-system",
    ),
)

# At once: kubectl is quick, and this machine's cores are shared.
_CAN_I_AT_ONCE = 4


@dataclass(frozen=True)
class Question:
    """One `kubectl auth can-i`."""

    verb: str
    resource: str
    namespace: str | None
    why: str

    def args(self) -> list[str]:
        """kubectl's arguments, but the one namespace asked about (`in_namespace`)."""
        # `kind/name` is a named object to kubectl: a subresource goes in its own flag.
        resource, _, subresource = self.resource.partition("/")
        args = ["auth", "can-i", self.verb, resource]
        if subresource:
            args.append(f"--subresource={subresource}")
        if self.namespace == EVERY_NAMESPACE:
            args.append("--all-namespaces")
        return args

    @property
    def in_namespace(self) -> str | None:
        """The one namespace asked about; None for a cluster-scoped kind and for every one."""
        return None if self.namespace == EVERY_NAMESPACE else self.namespace

    def __str__(self) -> str:
        where = {None: "", EVERY_NAMESPACE: " in every namespace"}.get(
            self.namespace, f" in {self.namespace}"
        )
        return f"{self.verb} {self.resource}{where}"


def needed(env: Mapping[str, str]) -> list[Question]:
    """Every (verb, resource, namespace) the program needs with these settings."""
    questions = []
    for access in ACCESS:
        if access.when is not None:
            value = env.get(access.when, "")
            if not value or (access.when_value is not None and value != access.when_value):
                continue
        namespace = access.namespace
        if namespace is not None and namespace.startswith("$"):
            raw = env.get(namespace[1:], "") or access.default_namespace or ""
            namespace = raw.partition("/")[0]
        questions += [
            Question(verb, access.resource, namespace, access.why) for verb in access.verbs
        ]
    return questions


def steps_needed(env: Mapping[str, str]) -> int:
    """How many `timeout`s the checks may take: reachable, version, and the questions in
    rounds of _CAN_I_AT_ONCE (with the admins' Role's, asked when escalate is not allowed)."""
    return 2 + -(-(len(needed(env)) + len(ESCALATE) + len(granted())) // _CAN_I_AT_ONCE)


def granted(namespace: str | None = EVERY_NAMESPACE) -> list[Question]:
    """What the tenant admins' Role grants (namespace_guard.ADMIN_RULES). RBAC lets the stack
    create that Role and bind it only if its user holds every one of these itself, or may
    `escalate` and `bind` roles."""
    why = "TenantNamespace: the admins' Role grants it"
    return [
        Question(verb, _qualified(resource, group), namespace, why)
        for rule in ADMIN_RULES
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]


def _qualified(resource: str, group: str) -> str:
    """`deployments/scale` of `apps` as kubectl names it: `deployments.apps/scale`."""
    plural, slash, subresource = resource.partition("/")
    return f"{plural}.{group}{slash}{subresource}" if group else resource


ESCALATE = [
    Question(verb, "roles.rbac.authorization.k8s.io", EVERY_NAMESPACE,
             "TenantNamespace: to grant the admins' Role without holding all it grants")
    for verb in ("escalate", "bind")
]  # fmt: skip


def check_kubernetes(timeout: float) -> list[Check]:
    steps = Steps("kubernetes")
    found: dict[str, str] = {}

    def reachable() -> str:
        answer = kubectl_json("version", timeout=timeout)
        found["version"] = str((answer.get("serverVersion") or {}).get("gitVersion", ""))
        return f"the API server of KUBECONFIG={os.environ.get('KUBECONFIG', '~/.kube/config')}"

    def access() -> str:
        with ThreadPoolExecutor(_CAN_I_AT_ONCE) as pool:
            return judge_access(
                needed(os.environ), lambda qs: list(pool.map(lambda q: _can_i(q, timeout), qs))
            )

    steps.step("reachable", reachable)
    steps.step("version", lambda: judge("kubernetes", found["version"]))
    steps.step("access", access)
    return steps.checks


def judge_access(
    questions: Sequence[Question], ask: Callable[[Sequence[Question]], list[bool]]
) -> str:
    """The detail when every question, and the right to grant the admins' Role (ESCALATE, or
    else every verb the Role grants), is answered yes by `ask`; CheckFailedError naming each
    denial otherwise."""
    asked = [*questions, *ESCALATE]
    answers = ask(asked)
    denied = [q for q, allowed in zip(asked, answers, strict=True) if not allowed]
    grants = "may escalate and bind roles"
    if any(q in ESCALATE for q in denied):
        role = granted()
        held = ask(role)
        asked = [*questions, *role]
        denied = [q for q in denied if q not in ESCALATE]
        denied += [q for q, allowed in zip(role, held, strict=True) if not allowed]
        grants = "holds all the admins' Role grants"
    if denied:
        raise CheckFailedError(
            f"{len(denied)} of {len(asked)} denied: " + "; ".join(f"{q} ({q.why})" for q in denied),
            "grant the kubeconfig's user these verbs in a ClusterRole (or a Role in the "
            "namespace named) bound to it, e.g. `kubectl create clusterrole ... "
            f"--verb={','.join(sorted({q.verb for q in denied}))} "
            f"--resource={','.join(sorted({q.resource for q in denied}))}`",
        )
    return f"all {len(questions)} verbs the stacks use allowed, and {grants} (kubectl auth can-i)"


def _can_i(question: Question, timeout: float) -> bool:
    # `auth can-i` says "no" with exit status 1: its answer is read whatever the status.
    asked = Kubectl(*question.args(), namespace=question.in_namespace, timeout=timeout)
    said = asked.answer()
    if said.stdout.strip() in ("yes", "no"):
        return said.stdout.strip() == "yes"
    raise CheckFailedError(
        f"`{asked.command}` failed: {said.words}", "check KUBECONFIG and that kubectl works"
    )
