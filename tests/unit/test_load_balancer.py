"""The sandbox's load balancer (sandbox/kubernetes/load_balancer.py): which Services get an
address, which one, and what it writes. On the sandbox, tests/e2e/test_onboarding_layers.py
logs in at the address it gave the login Service."""

from __future__ import annotations

import ipaddress
from typing import Any

from sandbox.kubernetes.client import JSON
from sandbox.kubernetes.load_balancer import LoadBalancer


def _service(name: str, kind: str = "LoadBalancer", **spec: Any) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "tenant-foo", "resourceVersion": "7"},
        "spec": {"type": kind, **spec},
        "status": {"loadBalancer": {}},
    }


class FakeApi:
    def __init__(self, services: list[JSON]) -> None:
        self.services = services
        self.patches: list[tuple[str, list[JSON]]] = []

    def get(self, path: str) -> JSON:
        assert path == "/api/v1/services"
        return {"items": self.services}

    def json_patch(self, path: str, operations: list[JSON]) -> JSON:
        self.patches.append((path, operations))
        return {}


def _given(api: FakeApi) -> dict[str, str]:
    return {path.split("/")[-2]: ops[1]["value"]["ingress"][0]["ip"] for path, ops in api.patches}


def test_each_load_balancer_service_of_no_other_class_gets_a_free_address_of_the_pool() -> None:
    held = _service("kept")
    held["status"]["loadBalancer"] = {"ingress": [{"ip": "10.233.3.10"}]}
    api = FakeApi([
        held,
        _service("login-tenant-foo"),
        _service("internal", kind="ClusterIP"),
        _service("other-class", loadBalancerClass="example.io/other"),
        _service("second"),
    ])  # fmt: skip
    LoadBalancer(api, ipaddress.IPv4Network("10.233.3.0/24")).reconcile_all()  # type: ignore[arg-type]
    # The first nine addresses stay out of the pool; the one held is kept and skipped.
    assert _given(api) == {"login-tenant-foo": "10.233.3.11", "second": "10.233.3.12"}
    path, operations = api.patches[0]
    assert path == "/api/v1/namespaces/tenant-foo/services/login-tenant-foo/status"
    # Written only over the version read.
    assert operations[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}


def test_a_full_pool_gives_nothing_and_writes_nothing() -> None:
    api = FakeApi([_service(f"s{n}") for n in range(3)])
    LoadBalancer(api, ipaddress.IPv4Network("10.233.3.0/28")).reconcile_all()  # type: ignore[arg-type]
    # A /28's 14 hosts less the 13 kept out leave one address.
    assert list(_given(api).values()) == ["10.233.3.10"]
