"""What `status` makes of `diagnose`'s findings: a condition per layer (False with the first
finding's reason, Unknown where the backend did not answer), an overall Ready, and what the next
offboarding stage waits for. Needs nothing running."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from providers.errors import AuthentikError, KubernetesError
from providers.notices.delivery import Sent
from tenant_stack.commands.status import status_text
from tenant_stack.diagnosis.checks import Check
from tenant_stack.diagnosis.findings import Finding
from tenant_stack.diagnosis.run import diagnose, status
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = load_platform(ROOT / "Pulumi.prod.yaml")


def spec_at(tmp_path: Path, **lifecycle: Any) -> Any:
    spec = yaml.safe_load((ROOT / "tenants" / "tenant-foo.yaml").read_text())
    spec["lifecycle"].update(lifecycle)
    (tmp_path / "tenant-foo.yaml").write_text(yaml.safe_dump(spec))
    return load_spec(tmp_path, "tenant-foo", PLATFORM)


def finding(check: str, layer: str, evidence: str = "x: y") -> Finding:
    return Finding(check, layer, 40, evidence, f"because of {check}", "fix it")


def test_a_layer_with_a_finding_is_false_and_ready_says_which(tmp_path: Path) -> None:
    report = status(
        spec_at(tmp_path), PLATFORM, [finding("binding-misses-workloads", "TenantNamespace")]
    )
    conditions = {c.type: c for c in report.conditions}
    assert (
        conditions["TenantNamespaceReady"].status,
        conditions["TenantNamespaceReady"].reason,
    ) == (
        "False",
        "BindingMissesWorkloads",
    )
    assert conditions["TenantNamespaceReady"].message == "because of binding-misses-workloads"
    assert (conditions["Ready"].status, conditions["Ready"].message) == (
        "False",
        "not ready: TenantNamespace",
    )
    assert report.blockers == [
        "the tenant is not Ready: make it Ready first (diagnose says how)",
        "a reviewed pull request setting lifecycle.stage: frozen",
    ]


def test_an_unreachable_backend_makes_its_layers_unknown(tmp_path: Path) -> None:
    down = finding("backend-unreachable", "SlurmAccounting", "slurm: sacctmgr timed out")
    report = status(spec_at(tmp_path), PLATFORM, [down])
    unknown = [c.type for c in report.conditions if c.status == "Unknown"]
    assert unknown == ["Ready", "SlurmAccountingReady", "NotOversubscribed"]


def test_a_check_of_two_backends_names_the_one_that_failed(tmp_path: Path) -> None:
    """gpus is Slurm's check, and reads the pods too: kubectl's failure is Kubernetes', and
    without the pods no scope's usage is known."""

    def reads_the_pods(spec: Any, platform: Any) -> Iterator[Finding]:
        raise KubernetesError("listing the pods of tenant-foo", "connection refused", "")
        yield

    spec = spec_at(tmp_path)
    found = diagnose(spec, PLATFORM, [Check("gpus", "slurm", reads_the_pods)])
    assert [(f.check, f.layer, f.evidence) for f in found] == [
        ("backend-unreachable", "CapacityReservation",
         "kubernetes: listing the pods of tenant-foo failed: connection refused"),
    ]  # fmt: skip
    assert found[0].cause.startswith("kubernetes did not answer;")
    report = status(spec, PLATFORM, found)
    unknown = {c.type: c.message for c in report.conditions if c.status == "Unknown"}
    assert unknown == {
        "Ready": "not ready: CapacityReservation, TenantNamespace, LoginPod, NotOversubscribed",
        "CapacityReservationReady": "kubernetes did not answer",
        "TenantNamespaceReady": "kubernetes did not answer",
        "LoginPodReady": "kubernetes did not answer",
        "NotOversubscribed": "kubernetes",
    }


def test_a_refused_read_is_a_matter_of_rights_not_of_reaching_the_backend(
    tmp_path: Path,
) -> None:
    def refused(spec: Any, platform: Any) -> Iterator[Finding]:
        raise AuthentikError(
            "reading Authentik group tenant-foo (GET /api/v3/core/groups/)",
            'HTTP 403: {"detail": "Token invalid/expired"}',
            "",
            refused=True,
        )
        yield

    spec = spec_at(tmp_path)
    [found] = diagnose(spec, PLATFORM, [Check("identity", "authentik", refused)])
    assert (found.check, found.layer) == ("backend-refused", "IdentityGroup")
    assert found.cause.startswith("authentik answered and refused the credentials")
    assert found.fix.startswith("set AUTHENTIK_TOKEN to a valid token")
    conditions = {c.type: c for c in status(spec, PLATFORM, [found]).conditions}
    identity = conditions["IdentityGroupReady"]
    assert (identity.status, identity.reason, identity.message) == (
        "Unknown",
        "BackendRefused",
        "authentik refused the read",
    )


def test_the_next_stage_and_what_it_waits_for(tmp_path: Path) -> None:
    report = status(spec_at(tmp_path, stage="snapshotted"), PLATFORM, [])
    assert report.ready
    assert (report.stage, report.next_stage) == ("snapshotted", "destroy")
    assert report.blockers == [
        "a reviewed pull request setting lifecycle.stage: destroy, with lifecycle.sign_off "
        "(by, date, ticket, confirmation)"
    ]


def test_what_the_cluster_holds_up_comes_before_the_pull_request(tmp_path: Path) -> None:
    in_use = finding("filesystem-in-use", "WekaStorage", "volumeattachments: pv-1 on gpu-03")
    blockers = ["runbook step 4d: 1 jobs in the queue: 7 (dave, running)"]
    report = status(spec_at(tmp_path, stage="snapshotted"), PLATFORM, [in_use], None, blockers)
    # A stage's blocker is not a layer's failure: the layers stay Ready.
    assert report.ready
    assert report.blockers == [
        *blockers,
        "a reviewed pull request setting lifecycle.stage: destroy, with lifecycle.sign_off "
        "(by, date, ticket, confirmation)",
    ]


def test_a_scope_over_its_cap_is_oversubscribed_and_not_a_layer_problem(tmp_path: Path) -> None:
    over = finding("gpus-oversubscribed", "SlurmAccounting", "team ml-team-foo: 4 GPUs in use")
    report = status(spec_at(tmp_path), PLATFORM, [over])
    conditions = {c.type: (c.status, c.reason) for c in report.conditions}
    assert conditions["NotOversubscribed"] == ("False", "TeamOverCap")
    assert conditions["SlurmAccountingReady"] == ("True", "AsDeclared")
    assert conditions["Ready"][0] == "False"


def test_days_left_in_the_term_and_what_to_do_once_it_has_ended(tmp_path: Path) -> None:
    spec = spec_at(tmp_path)
    report = status(spec, PLATFORM, [], today=date(2027, 12, 5))
    assert (report.days_left, report.as_json()["term_end"]) == (30, "2028-01-04")
    text = status_text([report], colour=False)
    assert text.splitlines()[0].split()[-2:] == ["DAYS", "LEFT"]
    assert text.splitlines()[1].split()[-1] == "30"
    assert "term ended" not in text
    ended = status(spec, PLATFORM, [], today=date(2028, 1, 6))
    assert ended.as_json()["days_left"] == -2
    assert "the contract term ended 2028-01-04: `gpu-tenants stage tenant-foo frozen`" in (
        status_text([ended], colour=False)
    )


def test_the_notices_sent_are_listed_with_when_and_to_whom(tmp_path: Path) -> None:
    sent = Sent(
        "start",
        "Lee Chen <lee.chen@tenant-foo.example>",
        datetime(2026, 12, 7, 18, 30, tzinfo=UTC),
        "<1@relay>",
        "d1",
    )
    report = replace(status(spec_at(tmp_path, stage="frozen"), PLATFORM, []), notices=[sent])
    assert (
        "tenant-foo: start notice sent 2026-12-07 18:30 UTC to Lee Chen "
        "<lee.chen@tenant-foo.example>"
    ) in status_text([report], colour=False).splitlines()
    assert report.as_json()["notices"] == [
        {
            "kind": "start",
            "to": "Lee Chen <lee.chen@tenant-foo.example>",
            "sent_at": "2026-12-07T18:30:00+00:00",
            "message_id": "<1@relay>",
        }
    ]
