"""The mapping from a validated spec to component args: Kubernetes quantities and CPU values as the
runbook writes them, the Weka filesystems per isolation, and the args that need no Pulumi."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from tenant_stack.components.tenant_namespace import InfiniBandPartition, partition_network
from tenant_stack.mapping import filesystems, namespace_args, reservation_args, retention_args
from tenant_stack.platform import load_platform
from tenant_stack.spec import TenantSpec, load_spec, parse_cpu, parse_size
from tenant_stack.spec.quantities import format_cpu, kubernetes_quantity
from tests.conftest import ROOT

PLATFORM = load_platform(ROOT / "Pulumi.prod.yaml")
FOO = load_spec(ROOT / "tenants", "tenant-foo", PLATFORM)
BAR = load_spec(ROOT / "tenants", "tenant-bar", PLATFORM)

# Kubernetes' quantity suffixes (k8s.io/apimachinery resource.Quantity), binary and decimal.
_K8S_SUFFIXES: dict[str, int] = {
    "": 1,
    **{s: 1024**i for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)},
    **{s: 1000**i for i, s in enumerate(("k", "M", "G", "T", "P", "E"), 1)},
}


def k8s_bytes(text: str) -> int:
    """What Kubernetes reads a whole-number quantity as."""
    match = re.fullmatch(r"([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|)", text)
    assert match, f"{text!r} is not a Kubernetes quantity"
    return int(match.group(1)) * _K8S_SUFFIXES[match.group(2)]


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ("8Ti", "8Ti"),
        ("10Ti", "10Ti"),
        ("16Gi", "16Gi"),
        ("4Gi", "4Gi"),
        ("100Ti", "100Ti"),
        ("16GiB", "16Gi"),
        ("1Pi", "1Pi"),
        ("50TB", "50T"),
        ("5TB", "5T"),
        ("100GB", "100G"),
        ("100G", "100G"),
        ("3kB", "3k"),
        ("1.5Ti", "1536Gi"),
        ("1000Ki", "1000Ki"),  # also 1024k: either is exact
        ("1024GB", "1024G"),
    ],
)
def test_quantity_of_a_spec_size_is_as_written(size: str, expected: str) -> None:
    assert kubernetes_quantity(parse_size(size)) == expected


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1, "1"), (999, "999"), (1000, "1k"), (1023, "1023"), (1024, "1Ki"), (1536, "1536")],
)
def test_quantity_of_small_and_odd_byte_counts(count: int, expected: str) -> None:
    assert kubernetes_quantity(count) == expected


@pytest.mark.parametrize(
    "count",
    [
        1,
        7,
        1500,
        123_456_789,
        2**40 + 1,
        10**12 + 1024,
        3 * 1024**3,
        50 * 10**12,
        10**12 * 2**40,
        10**18,
        1024**6,
        7 * 1024**6,
    ],
)
def test_quantity_is_exact_and_in_the_largest_unit_that_divides(count: int) -> None:
    text = kubernetes_quantity(count)
    assert k8s_bytes(text) == count
    number, suffix = re.fullmatch(r"([0-9]+)(\D*)", text).groups()  # type: ignore[union-attr]
    larger = [s for s, size in _K8S_SUFFIXES.items() if size > _K8S_SUFFIXES[suffix]]
    assert all(count % _K8S_SUFFIXES[s] for s in larger), (count, text)
    assert int(number) >= 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [(4, "4"), (1, "1"), (1024, "1024"), ("1.5", "1500m"), ("500m", "500m"), ("0.25", "250m")],
)
def test_cpu_is_whole_cores_or_millicores(value: int | str, expected: str) -> None:
    assert format_cpu(parse_cpu(value)) == expected
    assert Decimal(expected.removesuffix("m")) / (1000 if expected.endswith("m") else 1) == (
        Decimal(parse_cpu(value)) / 1000
    )


def test_org_tenant_mounts_its_own_filesystems() -> None:
    assert FOO.storage.isolation == "org"
    assert filesystems(FOO, PLATFORM) == ("tenant-foo-home", "tenant-foo-scratch")


def test_directory_tenant_mounts_its_home_directory_and_the_shared_scratch() -> None:
    assert BAR.storage.isolation == "directory"
    assert filesystems(BAR, PLATFORM) == ("cluster-home/tenant-bar", "cluster-scratch")


def test_reservation_args_name_the_runbooks_reservation() -> None:
    args = reservation_args(FOO, PLATFORM)
    assert (args.tenant, args.name, args.hardware_pool) == (
        "tenant-foo",
        "tenant-foo-reservation",
        "gpu-h100-rack-a",
    )
    assert args.nodes == [f"gpu-{n:02d}" for n in range(1, 9)]
    # Offboarding step 7 reads the platform's health condition before the nodes go back.
    assert args.health_condition == "GPUHealthy"
    unchecked = PLATFORM.model_copy(update={"node_health": None})
    assert reservation_args(FOO, unchecked).health_condition is None


def test_namespace_args_without_a_reservation() -> None:
    args = namespace_args(FOO, PLATFORM, None, {"password": "cGFzc3dvcmQ="}, None, [])
    assert args.reservation_name is None
    assert args.after == []
    assert args.ingress_from == ["slurm-control"]
    assert [(rule.namespace, rule.ports) for rule in args.egress] == [
        ("slurm-control", [(6817, "TCP"), (6818, "TCP"), (6819, "TCP")]),
        ("auth", [(636, "TCP"), (443, "TCP")]),
        ("kube-system", [(53, "UDP"), (53, "TCP")]),
    ]
    assert args.admins_group == "tenant-foo-admins"
    assert args.ldap_bind_secret_name == "ldap-bind-creds"
    assert args.ldap_bind_data == {"password": "cGFzc3dvcmQ="}
    quota = args.quota
    assert (quota.gpus, quota.requests_cpu, quota.requests_memory, quota.limits_memory) == (
        64,
        "1024",
        "8Ti",
        "10Ti",
    )
    assert (quota.persistent_volume_claims, quota.requests_storage) == (50, "100Ti")
    defaults = args.container_defaults
    assert (defaults.cpu_limit, defaults.memory_limit) == ("4", "16Gi")
    assert (defaults.cpu_request, defaults.memory_request) == ("1", "4Gi")


def test_a_pkey_tenant_gets_its_partition_as_an_ib_sriov_network() -> None:
    args = namespace_args(BAR, PLATFORM, None, {}, None, [])
    assert args.partition == InfiniBandPartition(0x0102, "nvidia.com/mlnxnics", "ib-tenants")
    config = json.loads(partition_network("tenant-bar", args.partition)["spec"]["config"])
    assert config == {
        "cniVersion": "0.3.1",
        "name": "tenant-bar-ib",
        "type": "ib-sriov",
        "pkey": "0x0102",
        "link_state": "enable",
        "rdmaIsolation": True,
        "ibKubernetesEnabled": True,
        "ipam": {"type": "nv-ipam", "poolName": "ib-tenants"},
    }
    assert namespace_args(FOO, PLATFORM, None, {}, None, []).partition is None  # networkpolicy


def _at(spec: TenantSpec, stage: str) -> TenantSpec:
    return spec.model_copy(update={"lifecycle": spec.lifecycle.model_copy(update={"stage": stage})})


def test_archives_are_declared_from_stage_archived_with_the_platforms_retention() -> None:
    assert retention_args(_at(FOO, "drained"), PLATFORM, []).archives == []
    archives = retention_args(_at(FOO, "archived"), PLATFORM, []).archives
    assert [(a.kind, a.retention_days) for a in archives] == [
        ("jobs", 2555),
        ("steps", 2555),
        ("associations", 2555),
        ("logs", 90),
    ]


def test_a_rollback_keeps_declaring_what_was_archived() -> None:
    args = retention_args(FOO, PLATFORM, ["jobs", "logs"])
    assert FOO.lifecycle.stage == "active"
    assert [a.kind for a in args.archives] == ["jobs", "logs"]
    assert args.accounts == ["tenant-foo", "ml-team-foo"]
