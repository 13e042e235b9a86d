"""The first `up` of a tenant brought in by `import` (spec `imported.adopt: true`): each object it
declares that the tenant's operator made by hand is adopted rather than made again.

- A Kubernetes object that exists is imported through the engine (the `import` resource option):
  the engine reads it and adopts it only as it is; whatever the program declares differently is
  an update in the same preview, for the pull request to show.
- A dynamic resource (Slurm, Authentik, Weka) gets the providers' `adopt` flag: its create takes
  over an existing object that carries no tenant's ownership mark and marks it, where it would
  otherwise refuse it. Pulumi's import cannot take a dynamic resource, whose provider is pickled
  in its inputs.
- Only what `import` found and recorded in the spec (`imported.found`) is adopted: a Kubernetes
  object by kind and name, an Authentik user or group by its primary key (a name could be a
  staff account's); a spec that names anything else gets the usual refusal. `import` also
  writes the record to the tenant's ledger, where no pull request can, and the preflight
  refuses a spec whose record differs from the ledger's (`recorded_found`).

Both are done by one stack transformation, so no component knows about adoption. An object in
the state already is neither imported nor created again, so the flag changes nothing once the
tenant is adopted; the pull request after the first `up` sets it false all the same, so that a
later create never takes over a hand-made object unseen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pulumi

from providers.base import ADOPT
from providers.kubectl import kubectl_json
from providers.retention.ledger import Ledger
from tenant_stack.spec.models import Found

USER_TYPE = "pulumi-python:dynamic/authentik:TenantUser"
GROUP_TYPE = "pulumi-python:dynamic/authentik:TenantGroup"
_SLURM_KINDS = {
    f"pulumi-python:dynamic/slurm:{kind}": kind for kind in ("Qos", "Account", "Partition")
}

__all__ = ["adopt_existing", "adopt_flag", "existing_objects", "record_found", "recorded_found"]

# The ledger entry `import` writes: what it found of the tenant, as `imported.found` says it.
FOUND_ACTION = "import-found"

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
    found = kubectl_json("get", ",".join(CLUSTER_KINDS.values()))["items"]
    inside = kubectl_json("get", ",".join(NAMESPACED_KINDS), namespace=slug)
    return {(item["kind"], item["metadata"]["name"]) for item in [*found, *inside["items"]]}


def adopt_existing(slug: str, existing: set[tuple[str, str]], found: Found) -> None:
    """Registers the transformation that adopts, for every resource declared after it, what
    `import` found (`found`) and nothing else."""
    recorded = set(found.kubernetes)

    def transform(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult:
        props, opts = args.props, args.opts
        if args.type_.startswith("pulumi-python:dynamic/"):
            adopt = adopt_flag(args.type_, props, found)
            return pulumi.ResourceTransformationResult(
                {**props, ADOPT: adopt} if adopt is not None else props, opts
            )
        if args.type_.startswith("kubernetes:") and not args.type_.startswith("pulumi:"):
            kind = args.type_.rsplit(":", 1)[1]
            metadata = props.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if isinstance(name, str) and (kind, name) in existing and f"{kind}/{name}" in recorded:
                object_id = name if kind in CLUSTER_KINDS else f"{slug}/{name}"
                imported = pulumi.ResourceOptions(import_=object_id)
                return pulumi.ResourceTransformationResult(
                    props, pulumi.ResourceOptions.merge(opts, imported)
                )
        return pulumi.ResourceTransformationResult(props, opts)

    pulumi.runtime.register_stack_transformation(transform)


def adopt_flag(type_: str, props: Mapping[str, Any], found: Found) -> bool | str | None:
    """The `adopt` flag of a dynamic resource: an Authentik user's or group's primary key as
    `import` recorded it (the provider adopts that object only), True for a Slurm QoS, account
    or partition it recorded by name, None for one it did not record; True for Weka's objects,
    which their providers adopt only inside the tenant's own organization and directories."""
    if type_ == USER_TYPE:
        pk = found.authentik_users.get(str(props.get("username")))
        return None if pk is None else str(pk)
    if type_ == GROUP_TYPE:
        return found.authentik_groups.get(str(props.get("name")))
    kind = _SLURM_KINDS.get(type_)
    if kind is not None:
        return True if f"{kind}/{props.get('name')}" in found.slurm else None
    return True


def record_found(slug: str, found: Found, by: str) -> None:
    """Writes what `import` found of `slug` to its ledger."""
    with Ledger.open() as ledger:
        details = {"found": found.model_dump_json(), "by": by}
        ledger.append(slug, FOUND_ACTION, datetime.now(UTC), details)


def recorded_found(slug: str) -> Found | None:
    """What the last `import` of `slug` found, as its ledger records it; None if none did."""
    with Ledger.open() as ledger:
        entries = [e for e in ledger.entries(slug) if e.action == FOUND_ACTION]
    if not entries:
        return None
    return Found.model_validate(json.loads(entries[-1].details["found"]))
