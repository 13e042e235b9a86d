"""The metadata of every Kubernetes object a tenant stack makes.

The stack owns these objects. pulumi-kubernetes writes them with Server-Side Apply, which refuses
to take back a field another field manager has set since (`kubectl label --overwrite`, `kubectl
edit`, a client-side `kubectl apply`): so `pulumi up --refresh` could name such drift but never
repair it. `pulumi.com/patchForce` makes each apply take back the fields the stack declares,
whoever changed them. Fields the stack does not declare are never in its apply, so controllers
and other tools keep theirs (a node's status, a controller's finalizers, labels added by hand).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

__all__ = ["OWNED", "object_metadata"]

OWNED = {"pulumi.com/patchForce": "true"}


def object_metadata(
    name: str,
    namespace: pulumi.Input[str] | None = None,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> k8s.meta.v1.ObjectMetaArgs:
    """Metadata naming the object, marked as owned by the stack (see the module's docstring)."""
    return k8s.meta.v1.ObjectMetaArgs(
        name=name,
        namespace=namespace,
        labels=labels,
        annotations={**OWNED, **(annotations or {})},
    )
