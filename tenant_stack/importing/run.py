"""`import <slug>`: a tenant onboarded by hand, read from every backend, checked against the
runbook's validation, and written as `tenants/<slug>.yaml` for review, once the spec it makes
passes the spec's rules and the fleet's. Nothing is written to any backend, and nothing at all
when the tenant is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from getpass import getuser
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from providers.weka.settings import Credentials
from tenant_stack.adoption import record_found
from tenant_stack.errors import Problem
from tenant_stack.importing.consistency import contradictions
from tenant_stack.importing.first_up import first_up_changes
from tenant_stack.importing.inferred_spec import Contract, Note, infer_spec
from tenant_stack.importing.live_tenant import read_tenant
from tenant_stack.importing.spec_file import render
from tenant_stack.platform import Platform
from tenant_stack.spec.fleet import load_fleet, refusals_beside
from tenant_stack.spec.models import Found, TenantSpec
from tenant_stack.spec.rules import check_spec
from tenant_stack.strict_models import problems_from

__all__ = ["ImportReport", "import_tenant"]


@dataclass
class ImportReport:
    tenant: str
    spec: Path
    written: bool = False
    notes: list[Note] = field(default_factory=list)
    refusals: list[Problem] = field(default_factory=list)
    first_up: list[str] = field(default_factory=list)  # what adopting it changes

    def as_json(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "spec": str(self.spec),
            "written": self.written,
            "notes": [note.as_json() for note in self.notes],
            "refused": [{"field": p.location, "reason": p.message} for p in self.refusals],
            "first_up": self.first_up,
        }


def _header(slug: str, today: date) -> list[str]:
    return [
        f"{slug}: onboarded by hand, imported from the live backends on {today.isoformat()}",
        "by `gpu-tenants import`. Every value was read from a backend unless a",
        "comment says it was inferred (with the rule) or is a TODO (no backend holds it).",
        "",
    ]


def _validated(document: dict[str, Any], spec_path: Path, platform: Platform) -> list[Problem]:
    try:
        spec = TenantSpec.model_validate(document)
    except ValidationError as error:
        return problems_from(error)
    return (
        check_spec(spec, platform)
        + refusals_beside(spec, spec_path, platform, load_fleet(spec_path.parent, platform))[0]
    )


def import_tenant(
    slug: str,
    tenants: Path,
    platform: Platform,
    contract: Contract,
    *,
    org_admin: Credentials | None = None,
    today: date | None = None,
) -> ImportReport:
    """Reads `slug` from the backends and writes its spec, or reports why it cannot."""
    today = today or date.today()
    path = tenants / f"{slug}.yaml"
    report = ImportReport(slug, path)
    if path.exists():
        report.refusals.append(
            Problem(
                "",
                f"{path} exists: the tenant is managed already (import is for tenants "
                "onboarded by hand)",
            )
        )
        return report
    live = read_tenant(slug, platform, org_admin)
    if live.kubernetes.namespace is None and live.slurm.account is None:
        report.refusals.append(
            Problem("", f"no tenant '{slug}' in the cluster: neither namespace nor Slurm account")
        )
        return report
    report.refusals += contradictions(live)
    report.first_up = first_up_changes(live)
    inferred = infer_spec(live, platform, contract, today)
    report.notes = inferred.notes
    report.refusals += inferred.missing
    if report.refusals:
        return report
    text = render(inferred.document, inferred.notes, _header(slug, today))
    report.refusals += _validated(yaml.safe_load(text), path, platform)
    if report.refusals:
        return report
    path.write_text(text)
    record_found(slug, Found.model_validate(inferred.document["imported"]["found"]), getuser())
    report.written = True
    return report
