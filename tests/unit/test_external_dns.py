"""The sandbox's external-dns (sandbox/kubernetes/external_dns.py): which Services' names get
records, pointing where, and what the zone's DNS server (the built CoreDNS) answers from them.
On the sandbox, tests/e2e/test_onboarding_layers.py logs in at the login host's name."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.kubernetes.client import JSON
from sandbox.kubernetes.external_dns import (
    HOSTNAME_ANNOTATION,
    ExternalDns,
    Record,
    corefile,
    owners_in,
    records,
    zone_text,
)
from sandbox.service import built_tool
from tests.backends import nslookup, wait_for

DOMAIN = "example.internal"


def _service(
    name: str,
    hostname: str | None,
    address: str | None,
    created: str = "2026-12-01T00:00:00Z",
    namespace: str = "tenant-foo",
    kind: str = "LoadBalancer",
) -> JSON:
    annotations = {HOSTNAME_ANNOTATION: hostname} if hostname is not None else {}
    ingress = [{"ip": address}] if address else []
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": created,
            "annotations": annotations,
        },
        "spec": {"type": kind},
        "status": {"loadBalancer": {"ingress": ingress}},
    }


def test_a_balanced_service_gets_a_record_per_name_of_its_annotation_in_the_domain() -> None:
    login = _service(
        "login-tenant-foo",
        "login.tenant-foo.example.internal, Alt.Tenant-Foo.example.internal.,elsewhere.example.com",
        "10.233.1.10",
    )
    assert records([login], DOMAIN) == [
        Record("alt.tenant-foo.example.internal", "10.233.1.10", "tenant-foo/login-tenant-foo"),
        Record("login.tenant-foo.example.internal", "10.233.1.10", "tenant-foo/login-tenant-foo"),
    ]


@pytest.mark.parametrize(
    "service",
    [
        _service("no-address-yet", "login.tenant-foo.example.internal", None),
        _service("cluster-ip", "login.tenant-foo.example.internal", "10.43.0.7", kind="ClusterIP"),
        _service("no-annotation", None, "10.233.1.11"),
        _service("outside", "login.tenant-foo.example.internal.evil.com", "10.233.1.12"),
        _service("no-host-name", "login tenant-foo.example.internal", "10.233.1.13"),
        _service("zone-file-syntax", 'x.example.internal" IN A 1.2.3.4', "10.233.1.14"),
    ],
)
def test_nothing_is_published_without_an_address_a_balancer_a_name_or_the_domain(
    service: JSON,
) -> None:
    assert records([service], DOMAIN) == []


def test_a_name_two_services_claim_stays_with_the_one_that_has_it() -> None:
    name = "login.tenant-foo.example.internal"
    login = _service("login-tenant-foo", name, "10.233.1.10")
    # Made earlier, and without an address when the name was published: it had no claim then.
    taker = _service("grab", name, "10.233.1.20", "2026-11-01T00:00:00Z", "tenant-evil")
    [published] = records([login, {**taker, "status": {}}], DOMAIN)
    assert published.owner == "tenant-foo/login-tenant-foo"
    held = owners_in(zone_text(DOMAIN, [published], 1))
    assert held == {name: "tenant-foo/login-tenant-foo"}
    # Its address given later, it takes nothing from the name's owner; the owner gone, the
    # name is its.
    assert records([login, taker], DOMAIN, held) == [published]
    assert [r.owner for r in records([taker], DOMAIN, held)] == ["tenant-evil/grab"]
    # With no owner yet, the claimant made first gets it.
    assert [r.owner for r in records([login, taker], DOMAIN)] == ["tenant-evil/grab"]


@pytest.fixture
def zone(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """The built CoreDNS serving DOMAIN from a zone file, as the sandbox's dns-zone does."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    zone_file = tmp_path / "zone"
    zone_file.write_text(zone_text(DOMAIN, [], 1))
    (tmp_path / "Corefile").write_text(corefile(DOMAIN, port, zone_file))
    server = subprocess.Popen(
        [built_tool("coredns"), f"-conf={tmp_path / 'Corefile'}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield zone_file, port
    finally:
        server.kill()
        server.wait()


class Api:
    def __init__(self, services: list[JSON]) -> None:
        self.services = services

    def get(self, path: str) -> Any:
        assert path == "/api/v1/services"
        return {"items": self.services}


def test_the_zone_answers_what_the_controller_wrote_and_nothing_else(
    zone: tuple[Path, int],
) -> None:
    zone_file, port = zone
    server = f"127.0.0.1:{port}"
    name = "login.tenant-foo.example.internal"
    api = Api([_service("login-tenant-foo", name, "10.233.1.10")])
    ExternalDns(api, DOMAIN, zone_file).reconcile_all()  # type: ignore[arg-type]
    wait_for("the record to be served", lambda: "10.233.1.10" in nslookup(name, server), 10)
    # A name of the domain with no record is unknown; one outside it is not answered.
    assert "NXDOMAIN" in nslookup("login.tenant-bar.example.internal", server)
    assert "REFUSED" in nslookup("example.com", server)
    # The Service gone, its record goes too.
    api.services = []
    ExternalDns(api, DOMAIN, zone_file).reconcile_all()  # type: ignore[arg-type]
    wait_for("the record to be withdrawn", lambda: "NXDOMAIN" in nslookup(name, server), 10)
