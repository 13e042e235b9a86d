"""The one kubectl runner (`providers.kubectl`) through a stand-in kubectl on PATH: what it runs,
a missing object told by kubectl's answer (not its words), an answer whatever the exit status,
kubectl's own words in its error with what was being done, its wait and its call log; and its
callers among the providers and the doctor (offboarding's workloads, the write Lease, `auth
can-i`, `version` within the doctor's timeout). The cluster read through it:
tests/unit/test_preflight.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from providers.call_log import VARIABLE as CALL_LOG
from providers.call_log import read_log
from providers.command import kubectl
from providers.errors import KubernetesError
from providers.kubectl import Kubectl, kubectl_get, kubectl_json
from providers.kubernetes.lease import LeaseLock
from providers.kubernetes.workloads import Workloads
from tenant_stack.doctor import FAILED, NOT_RUN
from tenant_stack.doctor.kubernetes import Question, _can_i, check_kubernetes
from tenant_stack.doctor.report import CheckFailedError


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the stand-in kubectl (`answering`) records its arguments."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "argv"


def answering(argv: Path, body: str) -> None:
    """A `kubectl` beside `argv` that records its arguments there and then runs `body` (sh)."""
    script = argv.parent / "kubectl"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{argv}"\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_the_argv_is_built_in_one_place() -> None:
    assert kubectl("get", "nodes") == ["kubectl", "get", "nodes"]
    assert kubectl("exec", "pod/x", "--", "ls", namespace="ns") == [
        *("kubectl", "-n", "ns", "exec", "pod/x", "--", "ls"),
    ]


def test_a_read_asks_for_json_within_the_request_timeout(stand_in: Path) -> None:
    answering(stand_in, """echo '{"kind": "Namespace"}'""")
    assert kubectl_json("get", "namespace", "tenant-foo") == {"kind": "Namespace"}
    assert stand_in.read_text().split() == [
        *("get", "namespace", "tenant-foo", "--output=json", "--request-timeout=30s"),
    ]


def test_an_object_that_is_not_there_is_none_as_kubectl_answers(stand_in: Path) -> None:
    # kubectl --ignore-not-found answers nothing and exits 0; no message is matched.
    answering(stand_in, 'case "$*" in *--ignore-not-found*) exit 0;; esac\nexit 1')
    assert kubectl_get("secret", "gone", namespace="auth") is None
    assert "--ignore-not-found" in stand_in.read_text().split()


def test_an_object_that_is_there_is_its_json(stand_in: Path) -> None:
    answering(stand_in, """echo '{"metadata": {"name": "tenant-foo"}}'""")
    assert kubectl_get("namespace", "tenant-foo") == {"metadata": {"name": "tenant-foo"}}


def test_a_failure_is_a_kubernetes_error_with_kubectls_words(stand_in: Path) -> None:
    words = 'error: the server does not have a resource type "reservation"'
    answering(stand_in, f"echo '{words}' >&2\nexit 1")
    with pytest.raises(KubernetesError) as caught:
        kubectl_get("reservation", "tenant-foo-reservation")
    assert caught.value.backend_says == words
    assert caught.value.doing.startswith("`kubectl get reservation tenant-foo-reservation ")


def test_an_answer_is_taken_whatever_the_exit_status(stand_in: Path) -> None:
    # `kubectl auth can-i` says "no" with exit status 1.
    answering(stand_in, "echo no\nexit 1")
    assert Kubectl("auth", "can-i", "get", "secrets").answer().stdout.strip() == "no"


def test_no_answer_is_a_kubernetes_error(stand_in: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answering(stand_in, "exec sleep 30")
    monkeypatch.setattr("providers.kubectl.TIMEOUT", 0.5)
    with pytest.raises(KubernetesError, match=r"kubectl gave no answer within 0\.5 s"):
        Kubectl("auth", "can-i", "get", "secrets").answer()


def test_a_failure_names_what_was_being_done(stand_in: Path) -> None:
    answering(stand_in, "echo 'error: forbidden' >&2\nexit 1")
    with pytest.raises(KubernetesError) as caught:
        kubectl_json("get", "pods", doing="listing pods in tenant-foo")
    assert str(caught.value).startswith("listing pods in tenant-foo failed: error: forbidden;")


def test_a_caller_may_wait_less(stand_in: Path) -> None:
    answering(stand_in, "exec sleep 30")
    with pytest.raises(KubernetesError, match=r"kubectl gave no answer within 0\.5 s"):
        Kubectl("get", "configmap", "x", timeout=0.5).output()


def test_a_backends_command_is_in_the_call_log(
    stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG, str(log))
    answering(stand_in, "echo '{}'")
    kubectl_json("get", "configmap", "x", namespace="slurm-control", backend="slurm")
    kubectl_json("get", "nodes")  # the program's own reads are not a backend's calls
    assert [(c.backend, c.call) for c in read_log(log)] == [("slurm", "kubectl get configmap")]


def test_workloads_are_scaled_in_their_namespace_and_a_failure_says_which(stand_in: Path) -> None:
    answering(stand_in, "echo 'error: not allowed' >&2\nexit 1")
    with pytest.raises(KubernetesError) as caught:
        Workloads("tenant-foo").scale({"deployments/train": 0})
    assert stand_in.read_text().split()[:5] == ["-n", "tenant-foo", "scale", "deployments/train",
                                                "--replicas=0"]  # fmt: skip
    assert caught.value.doing == "scaling deployments/train to 0"
    assert caught.value.backend_says == "error: not allowed"


def test_a_lease_that_is_not_there_is_created(stand_in: Path) -> None:
    # kubectl answers the read with nothing (--ignore-not-found); the create is then recorded.
    answering(stand_in, "exit 0")
    with LeaseLock("locks", "writes", "me:1", 30).held(1):
        assert stand_in.read_text().split()[:4] == ["-n", "locks", "create", "--filename"]


def test_a_lease_read_that_fails_names_the_lease_and_its_holder(stand_in: Path) -> None:
    answering(stand_in, "echo 'error: Unauthorized' >&2\nexit 1")
    with pytest.raises(KubernetesError) as caught, LeaseLock("locks", "writes", "me:1", 30).held(1):
        pass
    assert caught.value.doing == "taking Lease locks/writes for me:1"
    assert caught.value.backend_says == "error: Unauthorized"


@pytest.mark.parametrize(("said", "allowed"), [("echo yes", True), ("echo no\nexit 1", False)])
def test_auth_can_i_is_read_whatever_its_exit_status(
    stand_in: Path, said: str, allowed: bool
) -> None:
    answering(stand_in, said)
    question = Question("patch", "leases.coordination.k8s.io", "locks", "the write Lease")
    assert _can_i(question, 5) is allowed
    assert stand_in.read_text().split()[:6] == [
        *("-n", "locks", "auth", "can-i", "patch", "leases.coordination.k8s.io"),
    ]


def test_auth_can_i_that_answers_neither_yes_nor_no_fails_with_its_words(stand_in: Path) -> None:
    answering(stand_in, "echo 'error: You must be logged in' >&2\nexit 1")
    with pytest.raises(CheckFailedError, match="You must be logged in"):
        _can_i(Question("get", "secrets", None, "the bind Secret"), 5)


def test_the_doctors_reachable_waits_its_timeout_not_kubectls(stand_in: Path) -> None:
    answering(stand_in, "exec sleep 30")
    reachable, version, access = check_kubernetes(0.5)
    assert (reachable.status, version.status, access.status) == (FAILED, NOT_RUN, NOT_RUN)
    assert "kubectl gave no answer within 0.5 s" in reachable.detail
