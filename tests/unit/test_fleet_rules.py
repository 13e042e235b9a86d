"""The rules across tenants (`tenant_stack.spec.fleet`), on copies of the example specs with one
collision made at a time; each finding names both specs and both field paths."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tenant_stack.platform import Platform, load_platform
from tenant_stack.spec.fleet import check_fleet, load_fleet

ROOT = Path(__file__).resolve().parents[2]
FOO, BAR = "tenant-foo.yaml", "tenant-bar.yaml"


@pytest.fixture(scope="module")
def platform() -> Platform:
    return load_platform(ROOT / "Pulumi.prod.yaml")


@pytest.fixture
def tenants(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "tenants", tmp_path / "tenants")
    return tmp_path / "tenants"


def edit(tenants: Path, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    spec = yaml.safe_load((tenants / name).read_text())
    change(spec)
    (tenants / name).write_text(yaml.safe_dump(spec, sort_keys=False))


def findings(tenants: Path, platform: Platform) -> list[tuple[str, list[str], str]]:
    specs, broken = load_fleet(tenants, platform)
    assert broken == {}
    return [(c.rule, [str(p) for p in c.places], c.message) for c in check_fleet(specs, platform)]


def test_the_example_specs_collide_nowhere(tenants: Path, platform: Platform) -> None:
    assert findings(tenants, platform) == []


def test_a_username_uid_or_gid_of_another_tenant_is_named_in_both_specs(
    tenants: Path, platform: Platform
) -> None:
    def collide(spec: dict[str, Any]) -> None:
        spec["users"][1]["username"] = "alice"  # erin, renamed
        spec["users"][1]["uid"] = 2148  # bob's, in tenant-foo
        spec["identity"]["gid"] = 4099  # tenant-foo's group

    edit(tenants, BAR, collide)
    found = findings(tenants, platform)
    assert [(rule, sorted(places)) for rule, places, _ in found] == [
        ("usernames", [f"{BAR} users.1.username", f"{FOO} users.0.username"]),
        ("uids", [f"{BAR} users.1.uid", f"{FOO} users.1.uid"]),
        ("gids", [f"{BAR} identity.gid", f"{FOO} identity.gid"]),
    ]
    assert "uid 2148 is claimed by both tenants" in found[1][2]


def test_a_uid_equal_to_a_gid_is_refused_even_within_one_tenant(
    tenants: Path, platform: Platform
) -> None:
    edit(tenants, BAR, lambda spec: spec["users"][0].update(uid=4099))
    [(rule, places, message)] = findings(tenants, platform)
    assert (rule, places) == ("uid-gid", [f"{BAR} users.0.uid", f"{FOO} identity.gid"])
    assert "gidNumber is the uid" in message


def test_a_node_in_two_live_reservations_is_refused_and_a_released_one_is_free(
    tenants: Path, platform: Platform
) -> None:
    edit(
        tenants,
        BAR,
        lambda spec: spec["reservation"].update(nodes=["gpu-09", "gpu-10", "gpu-11", "gpu-08"]),
    )
    [(rule, places, message)] = findings(tenants, platform)
    assert (rule, sorted(places)) == (
        "nodes",
        [f"{BAR} reservation.nodes.3", f"{FOO} reservation.nodes.7"],
    )
    assert "node gpu-08" in message

    def offboarded(spec: dict[str, Any]) -> None:
        spec["lifecycle"].update(
            stage="destroy", sign_off={"by": "Ops", "date": "2027-01-05", "ticket": "OPS-1"}
        )

    edit(tenants, FOO, offboarded)
    assert findings(tenants, platform) == []


def test_the_live_tenants_of_a_pool_may_not_be_sold_more_gpus_than_it_has(
    tenants: Path, platform: Platform
) -> None:
    # tenant-foo holds 64 of the pool's 144 GPUs; tenant-bar, with no nodes named, asks for 96.
    def unpinned(spec: dict[str, Any]) -> None:
        spec["reservation"]["nodes"] = []
        spec["contract"].update(gpus=96, partition_type="on-demand")

    edit(tenants, BAR, unpinned)
    [(rule, places, message)] = findings(tenants, platform)
    assert (rule, sorted(places)) == ("gpus", [f"{BAR} contract.gpus", f"{FOO} contract.gpus"])
    assert "160 GPUs together" in message
    assert "has 144" in message


def test_a_spec_that_does_not_load_is_kept_apart(tenants: Path, platform: Platform) -> None:
    (tenants / "tenant-baz.yaml").write_text("slug: tenant-baz\n")
    specs, broken = load_fleet(tenants, platform)
    assert sorted(p.name for p in specs) == [BAR, FOO]
    assert [p.name for p in broken] == ["tenant-baz.yaml"]
