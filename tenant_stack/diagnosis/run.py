"""Running the checks, and what `status` makes of their findings.

Every check runs, side by side, whatever the others find; a backend that does not answer (a
refused connection, a timeout, a refused credential) is one finding for that backend, ranked
first, and the layers that read it are Unknown rather than Ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

from providers.errors import AuthentikError, BackendError, KubernetesError, SlurmError, WekaError
from providers.notices.delivery import Sent, sent_notices
from providers.retention.ledger import Ledger
from tenant_stack.diagnosis.checks import (
    CHECKS,
    OVERSUBSCRIBED,
    STAGE_CHECKS,
    Check,
    oversubscribed,
)
from tenant_stack.diagnosis.findings import LAYERS, Condition, Finding
from tenant_stack.diagnosis.gpu_usage import Usage, read_usage
from tenant_stack.diagnosis.stages import stage_blockers
from tenant_stack.expiry import days_left
from tenant_stack.fleet.parallel import fan_out
from tenant_stack.platform import Platform
from tenant_stack.spec import TenantSpec

__all__ = ["Status", "diagnose", "not_onboarded", "read_status", "status"]

# Which backend each layer is read from.
_BACKENDS = {
    "CapacityReservation": "kubernetes",
    "IdentityGroup": "authentik",
    "TenantNamespace": "kubernetes",
    "SlurmAccounting": "slurm",
    "WekaStorage": "weka",
    "LoginPod": "kubernetes",
}
# A check may read more than its own backend (gpus reads Slurm's queue and the pods): the
# error's kind names the one that failed.
_ERRORS = {
    KubernetesError: "kubernetes",
    SlurmError: "slurm",
    AuthentikError: "authentik",
    WekaError: "weka",
}
_UNREACHABLE = "backend-unreachable"
_REFUSED = "backend-refused"
_UNREAD = {
    _UNREACHABLE: ("BackendUnreachable", "did not answer"),
    _REFUSED: ("BackendRefused", "refused the read"),
}
# Findings that are not about a layer's objects: their own conditions say them.
_NOT_LAYERS = (_UNREACHABLE, _REFUSED, OVERSUBSCRIBED, *STAGE_CHECKS)
_HOW = {
    "kubernetes": "check KUBECONFIG and that `kubectl get --raw /readyz` answers",
    "slurm": "check SLURM_CONF and that `scontrol ping` and `sacctmgr show cluster` answer",
    "authentik": "check AUTHENTIK_URL and that Authentik answers",
    "weka": "check WEKA_URL and that the cluster's management API answers",
}
# What reading needs, for a backend that refused the credentials or their rights.
_RIGHTS = {
    "kubernetes": "give the kubeconfig's identity read access to the tenant's objects "
    "(`gpu-tenants doctor` lists each verb `kubectl auth can-i` refuses)",
    "slurm": "run as a user Slurm lets read accounting (`sacctmgr show user $USER`)",
    "authentik": "set AUTHENTIK_TOKEN to a valid token of a user who may read users and groups "
    "(a read-only one suffices)",
    "weka": "check WEKA_USERNAME and WEKA_PASSWORD or WEKA_PASSWORD_FILE (a ReadOnly-role user "
    "suffices)",
}


def diagnose(
    spec: TenantSpec, platform: Platform, checks: Sequence[Check] = CHECKS
) -> list[Finding]:
    """Every failure found, what to fix first first."""

    def run(check: Check) -> list[Finding]:
        try:
            return list(check.run(spec, platform))
        except BackendError as error:
            backend = next(
                (name for kind, name in _ERRORS.items() if isinstance(error, kind)), check.backend
            )
            layer = next(layer for layer, b in _BACKENDS.items() if b == backend)
            if error.refused:
                return [
                    Finding(
                        _REFUSED,
                        layer,
                        10,
                        f"{backend}: {error}",
                        f"{backend} answered and refused the credentials or their rights; what "
                        "is read from it was not checked",
                        _RIGHTS[backend] + ", then run diagnose again",
                    )
                ]
            return [
                Finding(
                    _UNREACHABLE,
                    layer,
                    10,
                    f"{backend}: {error}",
                    f"{backend} did not answer; what is read from it was not checked",
                    _HOW[backend] + ", then run diagnose again",
                )
            ]

    found: dict[tuple[str, str], Finding] = {}
    for findings in fan_out(list(checks), run, workers=4):
        for finding in findings:
            key = (finding.check, finding.evidence.split(":", 1)[0])
            found.setdefault(key, finding)
    return sorted(found.values(), key=lambda f: (f.rank, LAYERS.index(f.layer), f.check))


@dataclass(frozen=True)
class Status:
    tenant: str
    conditions: list[Condition]
    stage: str
    next_stage: str | None
    blockers: list[str]  # what the next stage waits for, in the cluster first, then the spec
    findings: list[Finding]
    usage: Usage | None  # None when Slurm or Kubernetes could not be read
    term_end: date
    days_left: int  # to the contract term's last day; below 0 once it has passed
    # The notices sent to the tenant's contact, from its ledger (read once offboarding began).
    notices: Sequence[Sent] = ()

    @property
    def ready(self) -> bool:
        return self.conditions[0].status == "True"

    def as_json(self) -> dict[str, object]:
        return {
            "tenant": self.tenant,
            "ready": self.ready,
            "conditions": [c.as_json() for c in self.conditions],
            "stage": self.stage,
            "next_stage": self.next_stage,
            "blockers": self.blockers,
            "findings": [f.as_json() for f in self.findings],
            "gpu_usage": self.usage.as_json() if self.usage else None,
            "term_end": self.term_end.isoformat(),
            "days_left": self.days_left,
            "notices": [notice.as_json() for notice in self.notices],
        }


def status(
    spec: TenantSpec,
    platform: Platform,
    findings: Sequence[Finding],
    usage: Usage | None = None,
    blockers: Sequence[str] = (),
    today: date | None = None,
) -> Status:
    """A condition per layer from the findings, whether any GPU scope is over its cap, an
    overall Ready, the GPU usage read, the offboarding stage with what the next one waits
    for (`blockers` read in the cluster, then the spec's own), and the days left in the
    contract's term on `today` (default: today, UTC)."""
    # backend -> why its layers are Unknown (reason, what it did), for each backend not read.
    unread = {f.evidence.split(":", 1)[0]: _UNREAD[f.check] for f in findings if f.check in _UNREAD}
    layers = []
    for layer in LAYERS:
        own = [f for f in findings if f.layer == layer and f.check not in _NOT_LAYERS]
        backend = _BACKENDS[layer]
        if backend in unread:
            reason, did = unread[backend]
            layers.append(Condition(f"{layer}Ready", "Unknown", reason, f"{backend} {did}"))
        elif own:
            reason = "".join(word.title() for word in own[0].check.split("-"))
            layers.append(Condition(f"{layer}Ready", "False", reason, own[0].cause))
        else:
            layers.append(Condition(f"{layer}Ready", "True", "AsDeclared", "as the spec declares"))
    over = [f for f in findings if f.check == OVERSUBSCRIBED]
    # GPU usage is Slurm's running jobs and the pods' requests.
    usage_unread = sorted(set(unread) & {"slurm", "kubernetes"})
    if usage_unread:
        reason = unread[usage_unread[0]][0]
        layers.append(Condition("NotOversubscribed", "Unknown", reason, ", ".join(usage_unread)))
    elif over:
        scope = over[0].evidence.split(":", 1)[0]
        reason = "TenantOverContract" if scope == "tenant" else "TeamOverCap"
        said = "; ".join(f.evidence for f in over)
        layers.append(Condition("NotOversubscribed", "False", reason, said))
    else:
        layers.append(
            Condition("NotOversubscribed", "True", "WithinCaps", "every scope within its cap")
        )
    statuses = {c.status for c in layers}
    if statuses == {"True"}:
        ready = Condition("Ready", "True", "AllLayersReady", "every layer is as the spec declares")
    else:
        bad = [c.type.removesuffix("Ready") for c in layers if c.status != "True"]
        message = f"not ready: {', '.join(bad)}"
        if "False" in statuses:
            ready = Condition("Ready", "False", "LayersNotReady", message)
        else:
            ready = Condition("Ready", "Unknown", "LayersUnknown", message)
    lifecycle = spec.lifecycle
    waits = list(blockers)
    if ready.status != "True" and lifecycle.stage == "active":
        waits.append("the tenant is not Ready: make it Ready first (diagnose says how)")
    waits.append(lifecycle.waits_for)
    return Status(
        spec.slug,
        [ready, *layers],
        lifecycle.stage,
        lifecycle.next_stage,
        waits,
        list(findings),
        usage,
        spec.contract.term.end,
        days_left(spec, today or datetime.now(UTC).date()),
    )


def not_onboarded(spec: TenantSpec, today: date | None = None) -> Status:
    """The status of a tenant whose spec has no stack yet: nothing of it is expected live, so
    nothing is read, and what to do is the first `up`, not a repair."""
    slug = spec.slug
    how = (
        f"not onboarded yet: there is no stack {slug}; `pulumi stack init {slug}`, then "
        f"`pulumi up --stack {slug}` (docs/onboarding.md)"
    )
    unknown = [
        Condition(kind, "Unknown", "NotOnboarded", "no stack yet")
        for kind in (*(f"{layer}Ready" for layer in LAYERS), "NotOversubscribed")
    ]
    lifecycle = spec.lifecycle
    return Status(
        slug,
        [Condition("Ready", "False", "NotOnboarded", how), *unknown],
        lifecycle.stage,
        lifecycle.next_stage,
        [how],
        [],
        None,
        spec.contract.term.end,
        days_left(spec, today or datetime.now(UTC).date()),
    )


def read_status(spec: TenantSpec, platform: Platform, applied: str | None) -> Status:
    """`status` of the tenant as the live backends have it now; `applied` is the stage the
    stack's last complete `up` applied (`stages.applied_stage`)."""
    usage: Usage | None = None
    checks = list(CHECKS)
    try:
        read = read_usage(spec)
    except BackendError:
        pass  # diagnose's own read of it fails the same way, as a finding for that backend
    else:
        # The usage just read serves the GPU check too: Slurm and Kubernetes are read once.
        usage = read
        gpus = Check("gpus", "slurm", lambda spec, _: oversubscribed(spec, read))
        checks = [gpus if check.name == gpus.name else check for check in CHECKS]
    findings = diagnose(spec, platform, checks)
    blockers = stage_blockers(spec, applied, findings)
    report = status(spec, platform, findings, usage, blockers)
    if spec.lifecycle.stage == "active":
        return report
    try:
        with Ledger.open() as ledger:
            notices = sent_notices(ledger, spec.slug)
    except BackendError as error:
        # The store's own finding belongs to the stages' checks; the report goes on without.
        report.blockers.append(f"the notices sent could not be read: {error}")
        return report
    return replace(report, notices=notices)
