"""The one kubectl runner (`providers.kubectl`) through a stand-in kubectl on PATH: what it runs,
a missing object told by kubectl's answer (not its words), an answer whatever the exit status,
and kubectl's own words in its error. The cluster read through it: tests/unit/test_preflight.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from providers.command import kubectl
from providers.errors import KubernetesError
from providers.kubectl import Kubectl, kubectl_get, kubectl_json


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
