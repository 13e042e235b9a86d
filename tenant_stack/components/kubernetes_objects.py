"""The Kubernetes objects a tenant stack makes, declared by their type token and manifest.

The stack owns these objects. pulumi-kubernetes writes them with Server-Side Apply, which refuses
to take back a field another field manager has set since (`kubectl label --overwrite`, `kubectl
edit`, a client-side `kubectl apply`): so `pulumi up --refresh` could name such drift but never
repair it. `pulumi.com/patchForce` makes each apply take back the fields the stack declares,
whoever changed them. Fields the stack does not declare are never in its apply, so controllers
and other tools keep theirs (a node's status, a controller's finalizers, labels added by hand).

Objects are registered as `kubernetes:<group>/<version>:<Kind>` resources with the manifest as
their properties, which is all pulumi-kubernetes' generated classes do; importing those classes
(`pulumi_kubernetes.core.v1` alone takes about 0.45 s) would delay every preview. The type
tokens, properties and provider version are exactly the generated classes', so stacks made with
them see no change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi_kubernetes._utilities import get_version

__all__ = ["OWNED", "SECRET_FIELDS", "KubernetesObject", "object_metadata"]

OWNED = {"pulumi.com/patchForce": "true"}
# What of a Secret the state keeps encrypted, as the generated Secret class declares.
SECRET_FIELDS = ("data", "stringData")
# The Kubernetes provider plugin the SDK would name: the default provider is chosen by it.
_PROVIDER_VERSION: str = get_version()  # type: ignore[no-untyped-call]


def object_metadata(
    name: str,
    namespace: pulumi.Input[str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Metadata naming the object, marked as owned by the stack (see the module's docstring)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    metadata["annotations"] = {**OWNED, **(annotations or {})}
    return metadata


class KubernetesObject(pulumi.CustomResource):
    """One object: `api_version` (`v1`, `networking.k8s.io/v1`), `kind`, its metadata, and the
    rest of its manifest (`spec`, `data`, `provisioner`, ...) with the API's own field names.
    `secret_fields` are kept secret in the state whatever their inputs (a Secret's data)."""

    metadata: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        resource_name: str,
        *,
        api_version: str,
        kind: str,
        metadata: Mapping[str, Any],
        manifest: Mapping[str, Any] | None = None,
        secret_fields: Sequence[str] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        group_version = api_version if "/" in api_version else f"core/{api_version}"
        properties = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
        options = pulumi.ResourceOptions(
            version=_PROVIDER_VERSION, additional_secret_outputs=list(secret_fields) or None
        )
        super().__init__(
            f"kubernetes:{group_version}:{kind}",
            resource_name,
            {**properties, **(manifest or {})},
            pulumi.ResourceOptions.merge(opts, options),
        )
