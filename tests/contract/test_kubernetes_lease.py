"""The Lease that serializes writes across hosts, against the sandbox's real kube-apiserver: a
second holder waits for the first, a holder that stopped renewing is taken over, one that holds
past the wait is named; and sacctmgr writes (slurmdbd's real ones) wait for a Lease another host
holds when SLURM_WRITE_LEASE is set."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from providers.errors import KubernetesError
from providers.kubernetes.lease import LeaseLock
from providers.slurm.settings import Settings
from tests.backends import kubectl_json, sacctmgr

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

NAMESPACE = "default"


@pytest.fixture
def name() -> Iterator[str]:
    lease = f"writes-{uuid.uuid4().hex[:8]}"
    yield lease
    subprocess.run(
        ["kubectl", "-n", NAMESPACE, "delete", "lease", lease, "--ignore-not-found"],
        capture_output=True,
        timeout=30,
        check=True,
    )


def holder_of(name: str) -> str | None:
    spec = kubectl_json("-n", NAMESPACE, "get", "lease", name).get("spec") or {}
    return spec.get("holderIdentity")


def held_by_another(name: str, holder: str, renewed: datetime, duration: int) -> None:
    """A Lease another host took, as kubectl writes it."""
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 "acquireTime": stamp, "renewTime": stamp},
    }  # fmt: skip
    subprocess.run(["kubectl", "create", "-f", "-"], input=json.dumps(lease), text=True,
                   capture_output=True, timeout=30, check=True)  # fmt: skip


def test_a_second_holder_waits_until_the_first_gives_the_lease_back(name: str) -> None:
    first = LeaseLock(NAMESPACE, name, "host-a:1", 30)
    second = LeaseLock(NAMESPACE, name, "host-b:2", 30)
    taken: list[tuple[str | None, float]] = []

    def take_second() -> None:
        with second.held(30):
            taken.append((holder_of(name), time.monotonic()))

    with first.held(10):
        assert holder_of(name) == "host-a:1"
        waiting = threading.Thread(target=take_second)
        waiting.start()
        time.sleep(1.5)
        assert taken == []
        assert holder_of(name) == "host-a:1"
        given_back = time.monotonic()
    waiting.join(timeout=30)
    ((holder, at),) = taken
    assert holder == "host-b:2"
    assert at > given_back
    assert holder_of(name) is None


def test_a_holder_that_stopped_renewing_is_taken_over(name: str) -> None:
    held_by_another(name, "gone-host:9", datetime.now(UTC) - timedelta(minutes=2), 10)
    with LeaseLock(NAMESPACE, name, "host-b:2", 30).held(5):
        assert holder_of(name) == "host-b:2"


def test_a_holder_past_the_wait_is_named_with_what_to_do(name: str) -> None:
    held_by_another(name, "busy-host:7", datetime.now(UTC), 600)
    with pytest.raises(KubernetesError) as raised, LeaseLock(NAMESPACE, name, "me:1", 30).held(1):
        pass
    said = str(raised.value)
    assert f"taking Lease {NAMESPACE}/{name} for me:1 failed: held by busy-host:7" in said
    assert f"`kubectl -n {NAMESPACE} delete lease {name}`" in said
    assert holder_of(name) == "busy-host:7"


def test_sacctmgr_writes_wait_for_the_lease_another_host_holds(name: str) -> None:
    settings = Settings.from_environment({**os.environ, "SLURM_WRITE_LEASE": f"{NAMESPACE}/{name}"})
    client = settings.client()
    qos = f"lease-{uuid.uuid4().hex[:8]}"
    added: list[float] = []

    def add() -> None:
        client.add_qos({"name": qos, "tenant": "lease-test", "priority": 1})
        added.append(time.monotonic())

    try:
        with LeaseLock(NAMESPACE, name, "other-host:1", 30).held(10):
            writing = threading.Thread(target=add)
            writing.start()
            time.sleep(2)
            assert sacctmgr("show", "qos", qos, "format=Name") == []
            given_back = time.monotonic()
        writing.join(timeout=60)
        assert len(added) == 1
        assert added[0] > given_back
        assert sacctmgr("show", "qos", qos, "format=Name") == [qos]
        assert holder_of(name) is None
    finally:
        sacctmgr("-i", "delete", "qos", qos)
