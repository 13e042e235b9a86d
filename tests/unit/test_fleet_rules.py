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
from tenant_stack.spec.fleet import find_collisions, load_fleet

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
    found = find_collisions(specs, platform)
    return [(c.rule, [str(p) for p in c.places], c.message) for c in found]


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
            stage="destroy",
            sign_off={
                "by": "Ops",
                "date": "2027-01-05",
                "ticket": "OPS-1",
                "confirmation": {"kind": "customer", "by": "Lee Chen"},
            },
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


def renamed(tenants: Path, old: str, slug: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Makes the spec `old` into one of slug `slug` (its file renamed, its hostname its own)."""
    spec = yaml.safe_load((tenants / old).read_text())
    spec["slug"] = slug
    spec["login"]["hostname"] = f"login.{slug}.example.internal"
    change(spec)
    (tenants / old).unlink()
    (tenants / f"{slug}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def test_two_slugs_of_one_short_name_are_refused_for_their_shared_qos(
    tenants: Path, platform: Platform
) -> None:
    renamed(tenants, BAR, "foo", lambda spec: None)  # short name foo, as tenant-foo's
    found = findings(tenants, platform)
    assert [(rule, sorted(places)) for rule, places, _ in found] == [
        ("names", ["foo.yaml slug", f"{FOO} slug"]),
        # and tenant-foo's team ml-team-foo now reads as tenant foo's
        ("teams", ["foo.yaml slug", f"{FOO} slurm.teams.0.name"]),
    ]
    assert found[0][2].startswith("short name 'foo' would be both tenants'")


def test_a_slug_equal_to_another_tenants_admins_group_or_team_is_refused(
    tenants: Path, platform: Platform
) -> None:
    renamed(tenants, BAR, "tenant-foo-admins", lambda spec: None)
    found = findings(tenants, platform)
    assert ("names", ["tenant-foo-admins.yaml slug", f"{FOO} slug"]) in [
        (rule, sorted(places)) for rule, places, _ in found
    ]
    assert any("Authentik group 'tenant-foo-admins' would be both" in m for *_, m in found)

    shutil.copy(ROOT / "tenants" / BAR, tenants / BAR)
    (tenants / "tenant-foo-admins.yaml").unlink()
    renamed(tenants, BAR, "ml-team-foo", lambda spec: None)  # tenant-foo's team's account
    found = findings(tenants, platform)
    assert ("names", ["ml-team-foo.yaml slug", f"{FOO} slurm.teams.0.name"]) in [
        (rule, sorted(places)) for rule, places, _ in found
    ]


def test_a_team_ending_in_another_tenants_short_name_is_refused(
    tenants: Path, platform: Platform
) -> None:
    # tenant-team-foo's own team: it ends in '-team-foo', and so in tenant-foo's '-foo' too.
    def with_team(spec: dict[str, Any]) -> None:
        spec["slurm"]["teams"] = [{"name": "ml-team-foo", "description": "ML", "fairshare": 1}]

    renamed(tenants, BAR, "tenant-team-foo", with_team)
    found = findings(tenants, platform)
    rules = {(rule, tuple(places)) for rule, places, _ in found}
    assert ("teams", ("tenant-team-foo.yaml slurm.teams.0.name", f"{FOO} slug")) in rules
    assert (
        "names",
        ("tenant-team-foo.yaml slurm.teams.0.name", f"{FOO} slurm.teams.0.name"),
    ) in rules


def test_two_tenants_may_not_claim_one_login_hostname(tenants: Path, platform: Platform) -> None:
    shared = "login.tenant-foo.tenant-bar.example.internal"  # names both slugs
    for name in (FOO, BAR):
        edit(tenants, name, lambda spec: spec["login"].update(hostname=shared))
    [(rule, places, message)] = findings(tenants, platform)
    assert (rule, sorted(places)) == ("names", [f"{BAR} login.hostname", f"{FOO} login.hostname"])
    assert f"login hostname {shared!r} would be both tenants'" in message


def test_two_tenants_may_not_share_an_infiniband_partition(
    tenants: Path, platform: Platform
) -> None:
    edit(tenants, FOO, lambda spec: spec["network"].update(isolation="pkey", pkey=0x0102))
    [(rule, places, message)] = findings(tenants, platform)
    assert (rule, sorted(places)) == ("pkeys", [f"{BAR} network.pkey", f"{FOO} network.pkey"])
    assert message == (
        "InfiniBand partition key 0x0102 is claimed by both tenants (a partition is one "
        "tenant's: every port in it reaches every other); pin another in one of them"
    )
