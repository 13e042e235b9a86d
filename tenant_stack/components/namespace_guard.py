"""What a tenant's admins may do in its namespace, and what the API server refuses there whoever
asks: the rules of the admins' Role and the tenant's ValidatingAdmissionPolicy, as manifests.

The admins run the tenant's workloads: pods (with exec, logs, port-forward), the controllers
that make them, services, config, their own Secrets and claims. They may read, never write,
what isolates the tenant: NetworkPolicies (additive, so one more allow policy would undo the
deny-all), the ReservationBinding, the quota and the defaults, the RoleBindings. Kubernetes'
`edit` ClusterRole would let them write NetworkPolicies, so the Role is the tenant's own.

RBAC grants by resource, not by object, so admins who may write Secrets and claims could also
rewrite or delete the stack's own (the LDAP bind copy, the authorized keys, the CSI Secret, the
spec's claims). The admission policy refuses that: no update or delete of an object carrying
the stack's mark (`OWNED`) by a member of the admins group. It also refuses, to everyone, a
claim in the namespace whose StorageClass is not the tenant's: StorageClasses are cluster-wide,
and the quota caps storage in total, not per class.

Where pods run and what names they claim are the tenant's only:
- to everyone, a pod or pod template (of a Deployment, StatefulSet, ReplicaSet, DaemonSet, Job,
  CronJob or ReplicationController) that names its node (`nodeName` skips the scheduler and the
  reservation's taint), tolerates the reservation taint for another value (or every taint:
  `operator: Exists` without a key), or selects another tenant's nodes by their label;
- to the admins, a Service that takes an address outside the cluster (LoadBalancer, NodePort,
  `externalIPs`, ExternalName), and a DNS name, in external-dns' hostname annotation or an
  Ingress's hosts, outside the tenant's own subdomain `<slug>.<dns_domain>`: the platform's names
  and other tenants' (their `login.<slug>.`) are not theirs to claim. The login release's
  Service is made by the platform's Helm controller, not by them.

And offboarding holds: from stage frozen on (the namespace's stage annotation), the admins
start no work: no pod or workload created or changed, nothing scaled.

The login release runs in the namespace but is the platform's: its pods hold the LDAP bind and
run under a RuntimeClass that Pod Security exempts (their sshd switches users), which no other
pod may name; offboarding's drain leaves it running until stage snapshotted. The admins may not
exec into, attach to or port-forward to its pods (a CONNECT names only the pod, so the release's
names are reserved: no object of theirs is named `<release>` or `<release>-...`), change or
delete what it made, or label anything as its (`app.kubernetes.io/instance: <release>`).
"""

from __future__ import annotations

from typing import Any

from providers.kubernetes.workloads import INSTANCE_LABEL
from tenant_stack.annotations import STAGE_ANNOTATION
from tenant_stack.components.kubernetes_objects import OWNED
from tenant_stack.lifecycle import STAGES
from tenant_stack.live import TENANT_LABEL

__all__ = ["ADMIN_RULES", "admission_policy", "admission_policy_binding"]

_WRITE = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
_READ = ["get", "list", "watch"]
ADMIN_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": [""],
        "resources": [
            "pods",
            "pods/exec",
            "pods/attach",
            "pods/portforward",
            "services",
            "configmaps",
            "secrets",
            "persistentvolumeclaims",
            "serviceaccounts",
        ],
        "verbs": _WRITE,
    },
    {"apiGroups": [""], "resources": ["pods/log", "events", "endpoints"], "verbs": _READ},
    {
        "apiGroups": ["apps"],
        "resources": [
            "deployments",
            "deployments/scale",
            "statefulsets",
            "statefulsets/scale",
            "replicasets",
            "replicasets/scale",
            "daemonsets",
        ],
        "verbs": _WRITE,
    },
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": _WRITE},
    {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": _WRITE},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": _WRITE},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": _WRITE},
    # What isolates the tenant: theirs to read, the stack's to write.
    {"apiGroups": [""], "resources": ["resourcequotas", "limitranges"], "verbs": _READ},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": _READ},
    {"apiGroups": ["scheduling.example.io"], "resources": ["reservationbindings"], "verbs": _READ},
    {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles", "rolebindings"],
        "verbs": _READ,
    },
]


def _quoted(text: str) -> str:
    """A CEL string literal (the names here are DNS labels, so no escape is ever needed)."""
    return f"'{text}'"


# The pod spec of a pod or of a workload's pod template; null for every other kind, and for a
# CONNECT (exec, attach, port-forward), whose object is the options of the connection.
_POD_SPEC = (
    "object == null || request.operation == 'CONNECT' ? null : "
    "object.kind == 'Pod' ? object.spec : "
    "object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template.spec : "
    "object.kind in ['Deployment', 'StatefulSet', 'ReplicaSet', 'DaemonSet', 'Job', "
    "'ReplicationController'] ? object.spec.template.spec : null"
)
# The metadata of a pod or of a workload's pod template, where Multus reads a pod's networks.
_POD_METADATA = (
    "object == null || request.operation == 'CONNECT' ? null : "
    "object.kind == 'Pod' ? object.metadata : "
    "object.kind == 'CronJob' ? (has(object.spec.jobTemplate.spec.template.metadata) ? "
    "object.spec.jobTemplate.spec.template.metadata : null) : "
    "object.kind in ['Deployment', 'StatefulSet', 'ReplicaSet', 'DaemonSet', 'Job', "
    "'ReplicationController'] ? (has(object.spec.template.metadata) ? "
    "object.spec.template.metadata : null) : null"
)
# The annotations by which a pod names the networks Multus attaches (its secondary ones, and a
# default one in place of the cluster's).
_NETWORK_ANNOTATIONS = ("k8s.v1.cni.cncf.io/networks", "v1.multus-cni.io/default-network")
_EXTERNAL_DNS = "external-dns.alpha.kubernetes.io/hostname"


def _placement(tenant: str) -> list[dict[str, Any]]:
    """Where the namespace's pods may run: on the tenant's nodes or the shared pool's."""
    label, own = _quoted(TENANT_LABEL), _quoted(tenant)
    on_own_nodes = (
        f"e.key != {label} || (e.operator == 'In' && has(e.values) && e.values.all(v, v == {own}))"
    )
    affinity = "variables.pod.affinity.nodeAffinity"
    required = f"{affinity}.requiredDuringSchedulingIgnoredDuringExecution"
    preferred = f"{affinity}.preferredDuringSchedulingIgnoredDuringExecution"
    checks = [
        (
            # Set at creation only: a scheduled pod's later updates carry the scheduler's choice.
            "request.operation != 'CREATE' || object.kind != 'Pod' || "
            "!has(variables.pod.nodeName) || variables.pod.nodeName == ''",
            "a pod may not name its node (spec.nodeName skips the scheduler and the "
            "reservation's taint)",
        ),
        (
            "object.kind == 'Pod' || !has(variables.pod.nodeName) || variables.pod.nodeName == ''",
            "a pod template may not name its node (spec.nodeName skips the scheduler and the "
            "reservation's taint)",
        ),
        (
            "!has(variables.pod.tolerations) || variables.pod.tolerations.all(t, "
            "has(t.key) && t.key != '' && (t.key != "
            f"{label} || ((!has(t.operator) || t.operator == 'Equal') && "
            f"has(t.value) && t.value == {own})))",
            f"a pod may tolerate the taint {TENANT_LABEL} only for its own tenant "
            f"({TENANT_LABEL}={tenant}), and never every taint (operator Exists without a key)",
        ),
        (
            "!has(variables.pod.nodeSelector) || "
            f"!({label} in variables.pod.nodeSelector) || "
            f"variables.pod.nodeSelector[{label}] == {own}",
            f"a pod may select nodes by {TENANT_LABEL} only for its own tenant's ({tenant})",
        ),
        (
            "!has(variables.pod.affinity) || !has(variables.pod.affinity.nodeAffinity) || "
            f"((!has({required}) || {required}.nodeSelectorTerms.all(term, "
            f"!has(term.matchExpressions) || term.matchExpressions.all(e, {on_own_nodes}))) && "
            f"(!has({preferred}) || {preferred}.all(p, !has(p.preference.matchExpressions) || "
            f"p.preference.matchExpressions.all(e, {on_own_nodes}))))",
            f"a pod's node affinity may name {TENANT_LABEL} only as 'In' its own tenant ({tenant})",
        ),
    ]
    return [
        {
            "expression": f"variables.pod == null || ({expression})",
            "message": f"{message}, in namespace {tenant}",
            "reason": "Forbidden",
        }
        for expression, message in checks
    ]


def _networks(tenant: str) -> dict[str, Any]:
    """A pod attaches networks of its own namespace only. Multus would attach another
    namespace's network (`<namespace>/<name>`, or a `namespace` in the JSON form), and with an
    InfiniBand network ib-kubernetes would add the pod to that tenant's partition."""
    keys = ", ".join(_quoted(key) for key in _NETWORK_ANNOTATIONS)
    annotations = "variables.podMetadata.annotations"
    return {
        "expression": (
            "variables.podMetadata == null || "
            f"!has({annotations}) || [{keys}].all(k, !(k in {annotations}) || "
            f"!({annotations}[k].contains('/') || {annotations}[k].contains('\"namespace\"')))"
        ),
        "message": (
            "a pod may attach networks of its own namespace only (no namespace in "
            f"{' or '.join(_NETWORK_ANNOTATIONS)}): another namespace's network is another "
            f"tenant's, its InfiniBand partition included, in namespace {tenant}"
        ),
        "reason": "Forbidden",
    }


def _admins(tenant: str, admins_group: str, checks: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The validations of `checks` ((expression, message) pairs), for the admins' requests;
    each check reads `object` (null at DELETE) and `oldObject` (null at CREATE and CONNECT)."""
    return [
        {
            "expression": (
                "!has(request.userInfo.groups) || "
                f"!({_quoted(admins_group)} in request.userInfo.groups) || ({expression})"
            ),
            "message": f"{message}; ask the platform operators (namespace {tenant})",
            "reason": "Forbidden",
        }
        for expression, message in checks
    ]


def _addresses(subdomain: str) -> list[tuple[str, str]]:
    """What names and addresses the admins' Services and Ingresses may take."""
    own_name = f"(h == {_quoted(subdomain)} || h.endsWith({_quoted('.' + subdomain)}))"
    written = "object == null || request.operation == 'CONNECT' || "
    checks = [
        (
            "object.kind != 'Service' || ((!has(object.spec.type) || "
            "object.spec.type == 'ClusterIP') && "
            "(!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0))",
            "a Service of the tenant's admins stays inside the cluster (type ClusterIP, no "
            "externalIPs): LoadBalancer, NodePort and ExternalName addresses are the platform's",
        ),
        (
            f"!has(object.metadata.annotations) || !({_quoted(_EXTERNAL_DNS)} in "
            f"object.metadata.annotations) || object.metadata.annotations[{_quoted(_EXTERNAL_DNS)}]"
            f".split(',').all(name, name.trim() == '' || "
            f"[name.trim()].all(h, {own_name}))",
            f"a DNS name in {_EXTERNAL_DNS} must be under the tenant's own subdomain {subdomain}",
        ),
        (
            "object.kind != 'Ingress' || ((!has(object.spec.rules) || object.spec.rules.all(r, "
            f"!has(r.host) || [r.host].all(h, {own_name}))) && (!has(object.spec.tls) || "
            f"object.spec.tls.all(t, !has(t.hosts) || t.hosts.all(h, {own_name}))))",
            f"an Ingress's hosts must be under the tenant's own subdomain {subdomain}",
        ),
    ]
    return [(written + expression, message) for expression, message in checks]


_WORKLOADS = (
    "['Pod', 'Deployment', 'StatefulSet', 'ReplicaSet', 'DaemonSet', 'Job', 'CronJob', "
    "'ReplicationController', 'Scale']"
)


def _offboarding(tenant: str) -> list[tuple[str, str]]:
    """What offboarding needs the admins not to do: start work once the tenant is frozen."""
    stage = f"namespaceObject.metadata.annotations[{_quoted(STAGE_ANNOTATION)}]"
    stopped = ", ".join(_quoted(s) for s in STAGES[STAGES.index("frozen") :])
    return [
        (
            f"request.operation in ['DELETE', 'CONNECT'] || !(object.kind in {_WORKLOADS}) || "
            "!has(namespaceObject.metadata.annotations) || "
            f"!({_quoted(STAGE_ANNOTATION)} in namespaceObject.metadata.annotations) || "
            f"!({stage} in [{stopped}])",
            f"tenant {tenant} is being offboarded (from stage frozen on): its admins start no "
            "pod or workload and scale nothing",
        ),
    ]


def _release_names(release: str) -> str:
    """CEL: `n` is one of the login release's names, `<release>` or `<release>-...`."""
    return f"(n == {_quoted(release)} || n.startsWith({_quoted(release + '-')}))"


def _login_runtime(tenant: str, release: str, runtime_class: str) -> dict[str, Any]:
    """Pod Security exempts the login release's RuntimeClass (its sshd switches users, which
    `restricted` refuses), so no other pod may name it. Only the platform makes objects under the
    release's names (the admins' rule below), so a name of the release's is the platform's."""
    return {
        "expression": (
            "variables.pod == null || !has(variables.pod.runtimeClassName) || "
            f"variables.pod.runtimeClassName != {_quoted(runtime_class)} || "
            "(has(object.metadata.name) && "
            f"[object.metadata.name].all(n, {_release_names(release)}))"
        ),
        "message": (
            f"RuntimeClass {runtime_class} is the login release {release}'s, exempt from Pod "
            f"Security: no other pod or pod template in namespace {tenant} may name it"
        ),
        "reason": "Forbidden",
    }


def _login_release(release: str) -> list[tuple[str, str]]:
    """The login release is the platform's, though it runs in the tenant's namespace: its pods
    hold the LDAP bind and, for smoke, a Slurm client. The admins do not connect to its pods (a
    CONNECT carries only the pod's name, so the release's names are the platform's: no object of
    the admins is named `<release>` or `<release>-...`), change or delete what it made (labelled
    as its instance), or label anything as its."""
    instance, name = _quoted(INSTANCE_LABEL), _quoted(release)
    ours = _release_names(release)

    def labelled(which: str) -> str:
        return (
            f"{which} != null && has({which}.metadata.labels) && "
            f"{instance} in {which}.metadata.labels && "
            f"{which}.metadata.labels[{instance}] == {name}"
        )

    return [
        (
            f"request.operation != 'CONNECT' || ![request.name].all(n, {ours})",
            f"the pods of the login release {release} are the platform's: the tenant's admins "
            "may not exec into, attach to or port-forward to them",
        ),
        (
            "request.operation != 'CREATE' || object == null || "
            "[has(object.metadata.name) ? object.metadata.name : '', "
            "has(object.metadata.generateName) ? object.metadata.generateName : '']"
            f".all(n, !{ours})",
            f"names {release} and {release}-... are the login release's, which the tenant's "
            "admins may not give their objects",
        ),
        (
            f"request.operation == 'CONNECT' || !({labelled('oldObject')})",
            f"this object is the login release {release}'s, which the tenant's admins may not "
            "change or delete",
        ),
        (
            f"request.operation == 'CONNECT' || !({labelled('object')})",
            f"the label {INSTANCE_LABEL}={release} marks the stack's own login release, which "
            "the tenant's admins may not give their objects",
        ),
    ]


def admission_policy(
    tenant: str,
    storage_class: str,
    admins_group: str | None,
    subdomain: str,
    login_release: str,
    login_runtime_class: str,
) -> dict[str, Any]:
    """The `spec` of the tenant's ValidatingAdmissionPolicy (named as its binding's
    `policyName`), over the namespaced objects of namespace `tenant` only; `subdomain` is the
    tenant's own DNS subdomain, `login_release` the name of the stack's login release and
    `login_runtime_class` the RuntimeClass its pods run under."""
    mark = next(iter(OWNED))
    validations = [
        {
            "expression": (
                "request.kind.kind != 'PersistentVolumeClaim' || request.operation == 'DELETE' "
                "|| (has(object.spec.storageClassName) && "
                f"object.spec.storageClassName == {_quoted(storage_class)})"
            ),
            "message": (
                f"a PersistentVolumeClaim in namespace {tenant} uses StorageClass "
                f"{storage_class}, the tenant's own: another class provisions with another "
                "tenant's or the platform's credentials"
            ),
            "reason": "Forbidden",
        }
    ]
    validations += _placement(tenant)
    validations.append(_networks(tenant))
    validations.append(_login_runtime(tenant, login_release, login_runtime_class))
    if admins_group is not None:
        checks = _addresses(subdomain) + _offboarding(tenant) + _login_release(login_release)
        validations += _admins(tenant, admins_group, checks)
        validations.append(
            {
                "expression": (
                    "oldObject == null || !has(request.userInfo.groups) || "
                    f"!({_quoted(admins_group)} in request.userInfo.groups) || "
                    "!has(oldObject.metadata.annotations) || "
                    f"!({_quoted(mark)} in oldObject.metadata.annotations)"
                ),
                "message": (
                    f"this object belongs to tenant {tenant}'s stack, which the group "
                    f"{admins_group} may read but not change or delete; ask the platform "
                    "operators for a change to the tenant's spec"
                ),
                "reason": "Forbidden",
            }
        )
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
            "resourceRules": [
                {
                    "apiGroups": ["*"],
                    "apiVersions": ["*"],
                    # Scale: `kubectl scale` writes a workload's replicas through it.
                    "resources": ["*", "*/scale"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "scope": "Namespaced",
                },
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "resources": ["pods/exec", "pods/attach", "pods/portforward"],
                    "operations": ["CONNECT"],
                    "scope": "Namespaced",
                },
            ],
        },
        "variables": [
            {"name": "pod", "expression": _POD_SPEC},
            {"name": "podMetadata", "expression": _POD_METADATA},
        ],
        "validations": validations,
    }


def admission_policy_binding(policy: str) -> dict[str, Any]:
    """The `spec` of the binding that makes `policy` deny what it refuses."""
    return {"policyName": policy, "validationActions": ["Deny"]}
