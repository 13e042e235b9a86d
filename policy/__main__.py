"""The project's policy pack: rules about what a tenant stack declares, checked by the engine on
the resources the program registers, so they hold whatever the program's code does (the spec's
own rules hold the spec; these hold the program that turns it into resources).

Deletes are not here: a policy sees what a program declares, and a deleted resource is one it no
longer declares. `review` calls out every replace and delete of a data-bearing object instead.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

NAMESPACE = "kubernetes:core/v1:Namespace"
RESERVATION = "kubernetes:scheduling.example.io/v1alpha1:Reservation"
FILESYSTEM = "pulumi-python:dynamic/weka:Filesystem"
GATE = "pulumi-python:dynamic/offboarding:Gate"
ACCOUNT = "pulumi-python:dynamic/slurm:Account"
QOS = "pulumi-python:dynamic/slurm:Qos"
ENFORCE = "pod-security.kubernetes.io/enforce"


def namespace_is_restricted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != NAMESPACE:
        return
    labels = (args.props.get("metadata") or {}).get("labels") or {}
    if labels.get(ENFORCE) != "restricted":
        report(
            f"namespace {args.name} has {ENFORCE}={labels.get(ENFORCE)!r}: a tenant namespace "
            "enforces the restricted pod security standard (onboarding step 3)"
        )


def reservation_keeps_workloads(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if (
        args.resource_type == RESERVATION
        and (args.props.get("spec") or {}).get("evictOnRelease") is not False
    ):
        report(
            f"reservation {args.name} does not set evictOnRelease: false; with it true, "
            "removing a node from the reservation kills the tenant's running jobs"
        )


def filesystems_keep_the_snapshot_gate(args: StackValidationArgs, report: ReportViolation) -> None:
    rehearsal = any(
        (r.props.get("lifecycle") or {}).get("rehearsal") is True
        for r in args.resources
        if r.resource_type == GATE
    )
    for resource in args.resources:
        if resource.resource_type != FILESYSTEM or rehearsal:
            continue
        if resource.props.get("allow_delete_without_snapshot") is True:
            report(
                f"filesystem {resource.name} may be deleted without a verified snapshot, and the "
                "tenant is no rehearsal: its data would be lost at offboarding",
                resource.urn,
            )


def slurm_within_contract(args: StackValidationArgs, report: ReportViolation) -> None:
    accounts = [r for r in args.resources if r.resource_type == ACCOUNT]
    tenant = next((a for a in accounts if a.props.get("parent") == "root"), None)
    contract = _gpus(tenant.props) if tenant else None
    if contract is None:
        return
    for resource in args.resources:
        if resource is tenant or resource.resource_type not in (ACCOUNT, QOS):
            continue
        gpus = _gpus(resource.props)
        if gpus is not None and gpus > contract:
            report(
                f"{resource.name} allows {gpus} GPUs (GrpTRES), above the tenant's contracted "
                f"{contract} (its account's GrpTRES)",
                resource.urn,
            )


def _gpus(props: dict[str, Any]) -> int | None:
    value = props.get("grp_tres_gpus")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


PolicyPack(
    name="gpu-tenants",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        ResourceValidationPolicy(
            name="namespace-restricted",
            description="A tenant namespace enforces the restricted pod security standard.",
            validate=namespace_is_restricted,
        ),
        ResourceValidationPolicy(
            name="reservation-keeps-workloads",
            description="A reservation never evicts the tenant's jobs when a node leaves it.",
            validate=reservation_keeps_workloads,
        ),
        StackValidationPolicy(
            name="filesystem-snapshot-gate",
            description="A live tenant's filesystems refuse deletion without a verified snapshot.",
            validate=filesystems_keep_the_snapshot_gate,
        ),
        StackValidationPolicy(
            name="slurm-within-contract",
            description="No QoS or team account allows more GPUs than the tenant's contract.",
            validate=slurm_within_contract,
        ),
    ],
)
