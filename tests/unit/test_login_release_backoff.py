"""The sandbox's login release controller (sandbox/kubernetes/login_release.py) backs off from a
release it cannot render, as a controller's work queue does, and logs each distinct failure
once. On the sandbox, tests/e2e/test_onboarding_layers.py logs in to the pods it renders."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sandbox.kubernetes import login_release
from sandbox.kubernetes.client import JSON, KubeError
from sandbox.kubernetes.login_release import Cluster, LoginReleaseController


def _release(version: str) -> JSON:
    return {
        "metadata": {
            "namespace": "tenant-foo",
            "name": "login-tenant-foo",
            "resourceVersion": version,
        },
        "spec": {"chart": {"name": "sunk-login"}},
    }


class FailingApi:
    """Lists one release and refuses to read its host keys, so every render fails."""

    def __init__(self) -> None:
        self.release = _release("7")
        self.reads = 0

    def get(self, path: str) -> JSON:
        if path == login_release.RELEASES:
            return {"items": [self.release]}
        self.reads += 1
        raise KubeError("GET", path, 503, "etcd is not ready")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


def test_a_failing_release_is_tried_less_often_and_logged_once(
    clock: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    api = FailingApi()
    cluster = Cluster("sandbox.local/login:1", "production", 6817, Path("/run/munge"))
    controller = LoginReleaseController(api, cluster)  # type: ignore[arg-type]
    tried_at = []
    for _ in range(70):  # 70 polls a second apart
        before = api.reads
        controller.reconcile_all()
        if api.reads > before:
            tried_at.append(clock[0] - 1000)
        clock[0] += 1
    # After 1, 2, 4, 8 and 16 seconds, then every 30 (RESYNC_SECONDS).
    assert tried_at == [0, 1, 3, 7, 15, 31, 61]
    logged = capsys.readouterr().out.splitlines()
    assert len(logged) == 1
    assert "release tenant-foo/login-tenant-foo: KubeError" in logged[0]
    assert "etcd is not ready" in logged[0]
    # A change to the release is tried at once, from the shortest wait again.
    api.release = _release("8")
    before = api.reads
    controller.reconcile_all()
    assert api.reads == before + 1
    assert controller.failing[("tenant-foo", "login-tenant-foo")].delay == 1.0
