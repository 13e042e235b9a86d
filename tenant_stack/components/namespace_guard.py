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
"""

from __future__ import annotations

from typing import Any

from tenant_stack.components.kubernetes_objects import OWNED

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


def admission_policy(tenant: str, storage_class: str, admins_group: str | None) -> dict[str, Any]:
    """The `spec` of the tenant's ValidatingAdmissionPolicy (named as its binding's
    `policyName`), over the namespaced objects of namespace `tenant` only."""
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
    if admins_group is not None:
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
    operations = ["CREATE", "UPDATE", "DELETE"]
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant}},
            "resourceRules": [
                {
                    "apiGroups": ["*"],
                    "apiVersions": ["*"],
                    "resources": ["*"],
                    "operations": operations,
                    "scope": "Namespaced",
                }
            ],
        },
        "validations": validations,
    }


def admission_policy_binding(policy: str) -> dict[str, Any]:
    """The `spec` of the binding that makes `policy` deny what it refuses."""
    return {"policyName": policy, "validationActions": ["Deny"]}
