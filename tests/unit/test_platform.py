"""The platform config: Pulumi.prod.yaml loads, and every way it can be wrong names key and file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tenant_stack.errors import PlatformError
from tenant_stack.platform import load_platform
from tenant_stack.strict_yaml import parse_yaml
from tests.conftest import ROOT

PROD = ROOT / "Pulumi.prod.yaml"


def _document() -> dict[str, Any]:
    document = parse_yaml(PROD.read_text())
    assert isinstance(document, dict)
    return document


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _locations(error: PlatformError) -> dict[str, str]:
    return {problem.location: problem.message for problem in error.problems}


def test_the_prod_config_loads() -> None:
    platform = load_platform(PROD)
    assert platform.cluster_name == "production"
    assert platform.skus["h100-8x"].gpus_per_node == 8
    assert platform.skus["h100-8x"].gpu_model == "H100-80GB"
    assert platform.node_pools["gpu-h100-rack-a"].sku == "h100-8x"
    assert platform.kubernetes.auth_namespace == "auth"
    assert platform.kubernetes.ldap_bind_secret == "ldap-bind-creds"
    assert platform.kubernetes.slurm_namespace == "slurm-control"
    assert platform.ldap.uri == "ldaps://authentik-ldap-outpost.auth.svc:636"
    assert (platform.ldap.uid_start_number, platform.ldap.gid_start_number) == (2000, 4000)
    assert platform.authentik.tenants_group == "tenants"
    assert platform.slurm.controller_host == "slurmctld.slurm-control.svc"
    assert platform.login_chart.name == "sunk-login"
    assert platform.dns_domain == "example.internal"
    assert platform.gpu_inventory() == {"h100-8x": 144, "a100-8x": 0}


def test_a_missing_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    document = _document()
    del document["config"]["gpu-tenants:ldap"]
    path = _write(tmp_path, document)
    with pytest.raises(PlatformError) as caught:
        load_platform(path)
    assert "required config key is missing" in _locations(caught.value)["gpu-tenants:ldap"]
    assert f"{path}: gpu-tenants:ldap: required config key is missing" in str(caught.value)


def test_a_missing_nested_field_is_located(tmp_path: Path) -> None:
    document = _document()
    del document["config"]["gpu-tenants:ldap"]["base_dn"]
    with pytest.raises(PlatformError) as caught:
        load_platform(_write(tmp_path, document))
    assert _locations(caught.value) == {"gpu-tenants:ldap.base_dn": "required field is missing"}


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.prod.yaml"
    with pytest.raises(PlatformError, match="file not found") as caught:
        load_platform(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("key", "value", "location", "phrase"),
    [
        ("gpu-tenants:ldap", {"uri": "ldap://x.y:389"}, "gpu-tenants:ldap.uri", "ldaps://"),
        ("gpu-tenants:colour", "blue", "gpu-tenants:colour", "unknown field"),
        ("cluster_name", "production", "cluster_name", "namespaced"),
        ("gpu-tenants:dns_domain", "Example", "gpu-tenants:dns_domain", "DNS name"),
        ("gpu-tenants:login_chart", {"version": "x"}, "gpu-tenants:login_chart.version", "chart"),
        ("gpu-tenants:support", {"email": "help"}, "gpu-tenants:support.email", "email address"),
        (
            "gpu-tenants:kubernetes",
            {"cluster_cidr": "10.42.0.1/16"},
            "gpu-tenants:kubernetes.cluster_cidr",
            "not an IPv4 network such as '10.42.0.0/16'",
        ),
    ],
)
def test_bad_values_are_located(
    tmp_path: Path, key: str, value: Any, location: str, phrase: str
) -> None:
    document = _document()
    current = document["config"].get(key)
    if isinstance(current, dict) and isinstance(value, dict):
        value = {**current, **value}
    document["config"][key] = value
    with pytest.raises(PlatformError) as caught:
        load_platform(_write(tmp_path, document))
    assert phrase in _locations(caught.value)[location]


def test_rules_across_fields(tmp_path: Path) -> None:
    document = _document()
    config = document["config"]
    config["gpu-tenants:node_pools"]["gpu-b200-rack-b"] = {"sku": "b200-8x", "nodes": ["gpu-03"]}
    config["gpu-tenants:ldap"]["bind_dn"] = "cn=ldap-bind,dc=elsewhere"
    with pytest.raises(PlatformError) as caught:
        load_platform(_write(tmp_path, document))
    problems = _locations(caught.value)
    pool = "gpu-tenants:node_pools.gpu-b200-rack-b"
    assert "'b200-8x' is not in gpu-tenants:skus" in problems[f"{pool}.sku"]
    assert "already in pool gpu-h100-rack-a" in problems[f"{pool}.nodes.0"]
    assert "not under base_dn" in problems["gpu-tenants:ldap.bind_dn"]


def test_secrets_and_other_namespaces_are_not_platform_values(tmp_path: Path) -> None:
    document = _document()
    document["config"]["gpu-tenants:weka_password"] = {"secure": "v1:abc"}
    document["config"]["kubernetes:context"] = "prod"
    assert load_platform(_write(tmp_path, document)).cluster_name == "production"


def test_yaml_reads_as_a_reviewer_reads_it() -> None:
    assert parse_yaml("a: off\nb: 24:00:00\nc: 010\nd: no\ne: true\nf: 0x10\ng: 2026-01-05\n") == {
        "a": "off",
        "b": "24:00:00",
        "c": "010",
        "d": "no",
        "e": True,
        "f": 16,
        "g": parse_yaml("x: 2026-01-05")["x"],
    }
    assert parse_yaml("a:\nb: ~\n") == {"a": None, "b": None}


def test_duplicate_keys_and_syntax_errors_give_the_line(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text("config:\n  gpu-tenants:cluster_name: a\n  gpu-tenants:cluster_name: b\n")
    with pytest.raises(PlatformError, match=r"line 3, column 3.*duplicate key.*line 2"):
        load_platform(path)
    path.write_text("config:\n  a: [1, 2\n")
    with pytest.raises(PlatformError, match=r"line \d+, column \d+: not valid YAML"):
        load_platform(path)


def test_network_ports_default_to_the_products_and_may_be_set(tmp_path: Path) -> None:
    platform = load_platform(PROD)
    ports = platform.slurm.ports
    assert (ports.slurmctld, ports.slurmd, ports.slurmdbd, platform.ldap.port) == (
        6817,
        6818,
        6819,
        636,
    )
    document = _document()
    document["config"]["gpu-tenants:slurm"]["ports"] = {"slurmctld": 7817}
    document["config"]["gpu-tenants:ldap"]["uri"] = "ldaps://ldap.auth.svc:1636"
    changed = load_platform(_write(tmp_path, document))
    assert (changed.slurm.ports.slurmctld, changed.slurm.ports.slurmd) == (7817, 6818)
    assert changed.ldap.port == 1636
    document["config"]["gpu-tenants:slurm"]["ports"] = {"slurmctld": 0}
    with pytest.raises(PlatformError) as caught:
        load_platform(_write(tmp_path, document))
    assert "gpu-tenants:slurm.ports.slurmctld" in _locations(caught.value)
