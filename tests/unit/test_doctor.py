"""The doctor's judging, with no backend: version ranges, what each backend's answer means, the
access the stacks need, the checks' order after a failure, the text and JSON, and the exit
statuses."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import pytest

from providers.authentik.client import AuthentikClient
from providers.errors import AuthentikError
from tenant_stack.commands.doctor import doctor_text
from tenant_stack.commands.doctor import run as run_doctor
from tenant_stack.doctor import FAILED, NOT_RUN, OK, Check, exit_status
from tenant_stack.doctor.backends import (
    authentik_user_may,
    slurm_config,
    slurm_operator_may,
    weka_user_may,
)
from tenant_stack.doctor.engine import PINS, pins
from tenant_stack.doctor.kubernetes import (
    ESCALATE,
    EVERY_NAMESPACE,
    Question,
    granted,
    judge_access,
    needed,
)
from tenant_stack.doctor.report import CheckFailedError, Steps
from tenant_stack.doctor.supported import SUPPORTED, judge, parse_version


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("v1.30.14+rke2r1", (1, 30, 14)),
        ("22.05.8", (22, 5, 8)),
        ("2024.10.5", (2024, 10, 5)),
        ("4.3.5", (4, 3, 5)),
        ("release", None),
        ("", None),
    ],
)
def test_versions_are_read_from_what_the_backends_report(
    text: str, version: tuple[int, ...] | None
) -> None:
    assert parse_version(text) == version


@pytest.mark.parametrize(
    ("backend", "reported", "holds"),
    [
        ("kubernetes", "v1.28.0", True),
        ("kubernetes", "v1.30.14+rke2r1", True),
        ("kubernetes", "v1.27.9", False),
        ("kubernetes", "v1.33.0", False),
        ("authentik", "2024.10.5", True),
        ("authentik", "2025.12.1", True),
        ("authentik", "2024.8.3", False),
        ("weka", "4.3.5", True),
        ("weka", "4.2.12", False),
        ("slurmctld", "22.05.8", True),
        ("slurmdbd", "23.02.1", False),
        ("temporal", "1.29.1", True),
    ],
)
def test_a_version_outside_its_range_fails_with_the_range(
    backend: str, reported: str, holds: bool
) -> None:
    if holds:
        assert reported in judge(backend, reported)
        return
    with pytest.raises(CheckFailedError) as raised:
        judge(backend, reported)
    assert str(SUPPORTED[backend]) in raised.value.detail
    assert "SUPPORTED" in raised.value.fix


def test_ranges_print_as_the_releases_are_named() -> None:
    assert str(SUPPORTED["slurmdbd"]) == ">= 22.05, < 23.00"
    assert str(SUPPORTED["authentik"]) == ">= 2024.10, < 2026.01"
    assert str(SUPPORTED["kubernetes"]) == ">= 1.28, < 1.33"


def test_text_that_is_no_version_fails() -> None:
    with pytest.raises(CheckFailedError, match="not a release number"):
        judge("weka", "")


def test_after_a_failed_step_the_rest_of_its_backend_do_not_run() -> None:
    steps = Steps("weka")

    def refused() -> str:
        raise AuthentikError("reading x", "HTTP 403: no", "check the token")

    steps.step("reachable", lambda: "answers")
    steps.step("token", refused)
    steps.step("version", lambda: "never asked")
    assert [(c.name, c.status) for c in steps.checks] == [
        ("weka reachable", OK),
        ("weka token", FAILED),
        ("weka version", NOT_RUN),
    ]
    assert steps.checks[1].detail == "reading x: HTTP 403: no"
    assert steps.checks[1].fix == "check the token"
    assert steps.checks[2].detail == "needs weka token"


@pytest.mark.parametrize(
    ("statuses", "status"),
    [((OK, OK), 0), ((OK, FAILED), 1), ((FAILED, NOT_RUN), 1), ((), 0)],
)
def test_the_exit_status_is_0_only_when_every_check_passed(
    statuses: tuple[str, ...], status: int
) -> None:
    assert exit_status(Check(f"c{i}", s, "d") for i, s in enumerate(statuses)) == status


def test_one_line_per_check_then_each_failures_fix() -> None:
    checks = [
        Check("kubernetes access", OK, "all 94 verbs allowed"),
        Check("authentik token", FAILED, "HTTP 403", "check AUTHENTIK_TOKEN"),
        Check("authentik version", NOT_RUN, "needs authentik token"),
    ]
    assert doctor_text(checks, colour=False).splitlines() == [
        "CHECK              STATUS   DETAIL",
        "kubernetes access  ok       all 94 verbs allowed",
        "authentik token    failed   HTTP 403",
        "authentik version  not run  needs authentik token",
        "",
        "To fix:",
        "  authentik token: check AUTHENTIK_TOKEN",
    ]
    assert "\033[31mfailed\033[0m" in doctor_text(checks, colour=True)
    assert checks[1].as_json() == {
        "check": "authentik token",
        "status": "failed",
        "detail": "HTTP 403",
        "fix": "check AUTHENTIK_TOKEN",
    }
    json.dumps([c.as_json() for c in checks])


def test_a_directory_that_is_no_pulumi_project_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(project=tmp_path, json=True, timeout=1.0)
    assert run_doctor(args) == 2
    assert "no Pulumi.yaml" in capsys.readouterr().err


def test_the_access_needed_follows_the_settings() -> None:
    plain = {str(q) for q in needed({})}
    assert "create namespaces" in plain
    assert "delete persistentvolumeclaims in every namespace" in plain
    assert "list nodes" in plain
    resources = {q.resource for q in needed({})}
    assert not resources & {"pods/exec", "configmaps", "leases.coordination.k8s.io"}
    configured = {
        str(q)
        for q in needed(
            {
                "SLURM_PARTITIONS_CONFIGMAP": "slurm-control/slurm-partitions",
                "SLURM_WRITE_LEASE": "locks/sacctmgr",
                "SLURM_TRANSPORT": "kubectl",
                "WEKA_MOUNT_TRANSPORT": "local",
            }
        )
    }
    assert configured - plain == {
        "get configmaps in slurm-control",
        "patch configmaps in slurm-control",
        "get leases.coordination.k8s.io in locks",
        "create leases.coordination.k8s.io in locks",
        "patch leases.coordination.k8s.io in locks",
        "create pods/exec in slurm-control",
    }


def test_each_question_is_one_kubectl_auth_can_i() -> None:
    asked = {q.resource: q for q in needed({}) if q.verb == "create"}
    assert asked["namespaces"].args() == ["auth", "can-i", "create", "namespaces"]
    assert asked["namespaces"].in_namespace is None
    assert asked["secrets"].namespace == EVERY_NAMESPACE
    assert asked["secrets"].args()[-1] == "--all-namespaces"
    assert asked["secrets"].in_namespace is None
    scale = next(q for q in needed({}) if q.resource == "deployments.apps/scale")
    assert scale.args() == ["auth", "can-i", "patch", "deployments.apps",
                            "--subresource=scale", "--all-namespaces"]  # fmt: skip
    lease = next(q for q in needed({"SLURM_WRITE_LEASE": "locks/writes"}) if q.verb == "create"
                 and q.resource == "leases.coordination.k8s.io")  # fmt: skip
    assert (lease.args()[-1], lease.in_namespace) == ("leases.coordination.k8s.io", "locks")


def test_the_authentik_token_must_be_a_superusers() -> None:
    assert "superuser" in authentik_user_may({"username": "akadmin", "is_superuser": True})
    with pytest.raises(CheckFailedError, match="'ops' is not a superuser") as raised:
        authentik_user_may({"username": "ops", "is_superuser": False, "system_permissions": []})
    assert "AUTHENTIK_TOKEN" in raised.value.fix


def test_the_weka_user_must_be_a_cluster_admin_of_root() -> None:
    me = {"username": "admin", "role": "ClusterAdmin", "org_name": "Root"}
    assert "ClusterAdmin" in weka_user_may(me, "admin")
    for role, org in (("OrgAdmin", "Root"), ("ReadOnly", "Root"), ("ClusterAdmin", "tenant-a")):
        with pytest.raises(CheckFailedError, match="needs ClusterAdmin"):
            weka_user_may({"role": role, "org_name": org}, "ops")


def test_the_slurm_operator_needs_an_admin_level() -> None:
    assert slurm_operator_may("ops", "Operator") == "'ops' is a Slurm Operator"
    assert slurm_operator_may("ops", "Administrator") == "'ops' is a Slurm Administrator"
    with pytest.raises(CheckFailedError) as raised:
        slurm_operator_may("ops", "None")
    assert (
        raised.value.fix == "sacctmgr -i modify user ops set AdminLevel=Operator (as a Slurm admin)"
    )


# `sacctmgr show configuration` of the sandbox's Slurm 22.05.8, shortened.
SACCTMGR_CONFIGURATION = """\
Configuration data as of 2026-12-04T06:43:28
AccountingStorageHost  = 127.0.0.1
AccountingStorageParameters = (null)
AccountingStorageType  = accounting_storage/slurmdbd
SLURM_VERSION          = 22.05.8

SlurmDBD configuration:
PidFile                = /run/slurmdbd.pid
SLURMDBD_VERSION       = 22.05.8
"""


def test_slurm_configuration_is_read_as_key_value_lines() -> None:
    config = slurm_config(SACCTMGR_CONFIGURATION)
    assert config["SLURMDBD_VERSION"] == "22.05.8"
    assert config["AccountingStorageParameters"] == "(null)"
    assert "SlurmDBD configuration:" not in config
    assert slurm_config("SlurmUser               = root(0)") == {"SlurmUser": "root(0)"}


def test_the_pins_are_toolchain_versions_sh() -> None:
    pinned = pins(PINS.read_text())
    assert pinned["PULUMI_VERSION"].count(".") == 2
    assert "KUBERNETES_PROVIDER_VERSION" in pinned
    assert pins("# X=1\nA_B=2\n") == {"A_B": "2"}


def test_the_authentik_client_reads_the_version_and_the_tokens_user() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v3/admin/version/":
            return httpx.Response(200, json={"version_current": "2024.10.5", "outdated": False})
        assert request.url.path == "/api/v3/core/users/me/"
        return httpx.Response(200, json={"user": {"username": "akadmin", "is_superuser": True}})

    api = AuthentikClient(
        base_url="http://authentik.test", token="t", transport=httpx.MockTransport(handler)
    )
    assert api.version() == "2024.10.5"
    assert api.me()["is_superuser"] is True


def test_the_authentik_client_names_a_reply_without_a_version() -> None:
    api = AuthentikClient(
        base_url="http://authentik.test",
        token="t",
        transport=httpx.MockTransport(lambda _: httpx.Response(200, json={"detail": "?"})),
    )
    with pytest.raises(AuthentikError, match="version"):
        api.version()


def answers(denied: set[str]) -> Callable[[Sequence[Question]], list[bool]]:
    """A fake `kubectl auth can-i` that says no to the questions named (as `str(question)`)."""
    return lambda questions: [str(q) not in denied for q in questions]


ESCALATE_ROLES = "escalate roles.rbac.authorization.k8s.io in every namespace"


def test_every_verb_allowed_with_escalate_on_roles() -> None:
    detail = judge_access(needed({}), answers(set()))
    assert detail.startswith(f"all {len(needed({}))} verbs the stacks use allowed")
    assert "may escalate and bind roles" in detail


def test_without_escalate_the_admins_role_grants_must_be_held() -> None:
    assert "holds all the admins' Role grants" in judge_access(
        needed({}), answers({ESCALATE_ROLES})
    )
    with pytest.raises(CheckFailedError) as raised:
        judge_access(needed({}), answers({ESCALATE_ROLES, "create pods/exec in every namespace"}))
    assert raised.value.detail.startswith("1 of ")
    assert "create pods/exec in every namespace (TenantNamespace: the admins' Role" in (
        raised.value.detail
    )
    assert "--resource=pods/exec" in raised.value.fix
    assert "escalate" not in raised.value.detail


def test_a_denied_verb_is_named_once_with_its_reason_and_fix() -> None:
    with pytest.raises(CheckFailedError) as raised:
        judge_access(needed({}), answers({"delete namespaces"}))
    assert raised.value.detail == (
        f"1 of {len(needed({})) + len(ESCALATE)} denied: delete namespaces "
        "(TenantNamespace: the tenant's namespace)"
    )
    assert "--verb=delete --resource=namespaces`" in raised.value.fix


def test_the_admins_role_is_asked_as_the_component_declares_it() -> None:
    role = {str(q) for q in granted()}
    assert "create pods/exec in every namespace" in role
    assert "patch deployments.apps/scale in every namespace" in role
    assert "list networkpolicies.networking.k8s.io in every namespace" in role
    assert "create networkpolicies.networking.k8s.io in every namespace" not in role
