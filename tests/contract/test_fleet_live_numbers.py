"""`check --live` against the Authentik emulator: a spec's pinned number that the directory
already hands to someone else (a user or group made by hand, numbered by an attribute or by the
outpost's 2000 + pk) is a finding naming the spec, the field and the directory's holder; a
tenant's own users and groups holding their own numbers are not, and a group named like a user
(or a user like a group) is not that user (or group)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.backends import ROOT, operator_command
from tests.contract.conftest_authentik import BOOTSTRAP_KEY, Emulator, emulator

__all__ = ["emulator"]


@pytest.fixture
def admin(emulator: Emulator) -> Iterator[httpx.Client]:
    with emulator.client() as client:
        yield client


def check_live(emulator: Emulator, tenants: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "AUTHENTIK_URL": emulator.url,
        "AUTHENTIK_TOKEN": BOOTSTRAP_KEY,
        "AUTHENTIK_TOKEN_FILE": "",
    }
    return operator_command("check", "--live", "--json", "--tenants", tenants, env=env, timeout=60)


def test_numbers_the_directory_already_hands_out_are_findings(
    emulator: Emulator, admin: httpx.Client, tmp_path: Path
) -> None:
    tenants = tmp_path / "tenants"
    shutil.copytree(ROOT / "tenants", tenants)
    assert check_live(emulator, tenants).returncode == 0

    # Made by hand: a user pinned to alice's uid, a group on tenant-bar's gid, a user numbered
    # by the outpost alone; and tenant-foo's own alice, holding her own number.
    def create(path: str, body: dict[str, object]) -> dict[str, object]:
        reply = admin.post(path, json=body)
        assert reply.status_code == 201, reply.text
        created: dict[str, object] = reply.json()
        return created

    pinned = {"uidNumber": "2147"}
    create("/core/users/", {"username": "legacy", "name": "L", "attributes": pinned})
    create("/core/groups/", {"name": "old-lab", "attributes": {"gidNumber": "4102"}})
    plain = create("/core/users/", {"username": "plain", "name": "P"})
    create("/core/users/", {"username": "alice", "name": "A", "attributes": pinned})
    # Named like tenant-bar's dave and like tenant-foo's group, holding their numbers.
    create("/core/groups/", {"name": "dave", "attributes": {"gidNumber": "2201"}})
    create(
        "/core/users/", {"username": "tenant-foo", "name": "T", "attributes": {"uidNumber": "4099"}}
    )
    spec = yaml.safe_load((tenants / "tenant-foo.yaml").read_text())
    spec["users"][1]["uid"] = 2000 + int(str(plain["pk"]))
    (tenants / "tenant-foo.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))

    checked = check_live(emulator, tenants)
    assert checked.returncode == 1, checked.stderr
    found = {
        (c["places"][0]["spec"], c["places"][0]["field"], c["message"].split(" in the ")[0])
        for c in json.loads(checked.stdout)["collisions"]
    }
    bob = 2000 + int(str(plain["pk"]))
    holds = "is already the number of Authentik"
    assert found == {
        ("tenant-foo.yaml", "users.0.uid", f"2147 {holds} user 'legacy'"),
        ("tenant-bar.yaml", "identity.gid", f"4102 {holds} group 'old-lab'"),
        ("tenant-foo.yaml", "users.1.uid", f"{bob} {holds} user 'plain'"),
        ("tenant-bar.yaml", "users.0.uid", f"2201 {holds} group 'dave'"),
        ("tenant-foo.yaml", "identity.gid", f"4099 {holds} user 'tenant-foo'"),
    }
