"""Tenants of any number of users, generated for the sandbox's tests and benchmarks: on-demand (no
reserved nodes, so as many as wanted fit the sandbox's 16), on the shared filesystems, shaped like
tenant-bar, with the names and numbers the caller gives them, so that no two runs collide on a
sandbox that keeps a destroyed tenant's users (Authentik deactivates them, their numbers held)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import yaml

from sandbox.project import ROOT

TEAMS = 4


def ssh_key(seed: str) -> str:
    """An ed25519 public key line of 32 bytes derived from `seed` (the spec parses its blob)."""

    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    blob = string(b"ssh-ed25519") + string(hashlib.sha256(seed.encode()).digest())
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {seed}"


def sized_tenant(slug: str, users: int, *, short: str, uid_start: int, gid: int) -> dict[str, Any]:
    """A rehearsal tenant `slug` of `users` users `<short>u000`... (uids from `uid_start`) in
    TEAMS teams, each user with 2 SSH keys and a home with its quota; its group `gid`, its admins'
    `gid + 1`."""
    spec: dict[str, Any] = yaml.safe_load((ROOT / "tenants" / "tenant-bar.yaml").read_text())
    spec.update(slug=slug, display_name=f"Generated {slug}")
    spec["contract"].update(partition_type="on-demand", gpus=1, gpu_minutes=1000 * users)
    spec["contract"]["contact"] = {"name": "Pat Contact", "email": f"contact@{slug}.example"}
    spec["reservation"]["nodes"] = []
    spec["identity"] = {"gid": gid, "admins": [f"{short}u000"], "admins_gid": gid + 1}
    teams = [f"t{n}-{slug}" for n in range(TEAMS)]
    spec["slurm"]["teams"] = [
        {"name": team, "description": f"Team {n}", "fairshare": 10} for n, team in enumerate(teams)
    ]
    spec["users"] = [
        {
            "username": f"{short}u{n:03d}",
            "name": f"User {n}",
            "email": f"{short}u{n:03d}@{slug}.example",
            "uid": uid_start + n,
            "team": teams[n % TEAMS],
            "ssh_keys": [ssh_key(f"{short}u{n:03d}@{host}") for host in ("laptop", "ws")],
        }
        for n in range(users)
    ]
    spec["slurm"]["qos"]["normal"]["gpus"] = 1
    spec["slurm"]["qos"]["interactive"]["gpus"] = 1
    spec["storage"].update(
        pvcs=[], home_per_user={"soft": "9GB", "hard": "10GB"}, home_capacity=f"{10 * users}GB"
    )
    spec["lifecycle"].update(stage="active", rehearsal=True)
    # tenant-bar's InfiniBand partition is its own: a partition key is one tenant's.
    spec["network"] = {"isolation": "networkpolicy"}
    spec["login"]["hostname"] = f"login.{slug}.example.internal"
    return spec
