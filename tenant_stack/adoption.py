"""The first `up` of a tenant brought in by `import` (spec `imported.adopt: true`): each object it
declares that the tenant's operator made by hand is adopted rather than made again.

- A Kubernetes object that exists is imported through the engine (the `import` resource option):
  the engine reads it and adopts it only as it is; whatever the program declares differently is
  an update in the same preview, for the pull request to show.
- A dynamic resource (Slurm, Authentik, Weka) gets the providers' `adopt` flag: its create takes
  over an existing object that carries no tenant's ownership mark and marks it, where it would
  otherwise refuse it. Pulumi's import cannot take a dynamic resource, whose provider is pickled
  in its inputs.

Both are done by one stack transformation, so no component knows about adoption. An object in
the state already is neither imported nor created again, so the flag changes nothing once the
tenant is adopted; the pull request after the first `up` sets it false all the same, so that a
later create never takes over a hand-made object unseen.
"""

from __future__ import annotations

import pulumi

from providers.base import ADOPT
from tenant_stack.live import kubectl_json

__all__ = ["adopt_existing", "existing_objects"]

# What the program declares of a tenant outside its namespace; everything else is inside it.
CLUSTER_KINDS = {
    "Namespace": "namespaces",
    "Reservation": "reservations",
    "StorageClass": "storageclasses",
}
NAMESPACED_KINDS = (
    "secrets",
    "resourcequotas",
    "limitranges",
    "networkpolicies",
    "rolebindings",
    "reservationbindings",
    "helmreleases",
    "persistentvolumeclaims",
)


def existing_objects(slug: str) -> set[tuple[str, str]]:
    """(kind, name) of every object of the kinds the program declares, in the tenant's namespace
    and cluster-wide."""
    found = kubectl_json(["kubectl", "get", ",".join(CLUSTER_KINDS.values())])["items"]
    inside = kubectl_json(["kubectl", "get", ",".join(NAMESPACED_KINDS), "--namespace", slug])
    return {(item["kind"], item["metadata"]["name"]) for item in [*found, *inside["items"]]}


def adopt_existing(slug: str, existing: set[tuple[str, str]]) -> None:
    """Registers the transformation that adopts, for every resource declared after it."""

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult:
        props, opts = args.props, args.opts
        if args.type_.startswith("pulumi-python:dynamic/"):
            return pulumi.ResourceTransformationResult({**props, ADOPT: True}, opts)
        if args.type_.startswith("kubernetes:") and not args.type_.startswith("pulumi:"):
            kind = args.type_.rsplit(":", 1)[1]
            metadata = props.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if isinstance(name, str) and (kind, name) in existing:
                object_id = name if kind in CLUSTER_KINDS else f"{slug}/{name}"
                imported = pulumi.ResourceOptions(import_=object_id)
                return pulumi.ResourceTransformationResult(
                    props, pulumi.ResourceOptions.merge(opts, imported)
                )
        return pulumi.ResourceTransformationResult(props, opts)

    pulumi.runtime.register_stack_transformation(transform)
