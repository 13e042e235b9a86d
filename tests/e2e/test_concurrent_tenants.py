"""Tenants applied at the same moment, as a fleet's operators do: new reserved tenants brought up
at once and torn down at once, each writing the shared objects (the Slurm partitions ConfigMap,
sacctmgr, the Authentik `tenants` group, Weka's Root organization and its shared filesystems)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.project import project_copy
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec
from tests.backends import kubectl_json, labelled, sacctmgr, show_partition

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

# Nodes no other spec in the project names (the rules across tenants refuse a node twice).
NODES = ("gpu-13", "gpu-14", "gpu-15", "gpu-16")


def one_node_tenant(project: Path, index: int) -> str:
    """A new reserved tenant on one node, shaped like tenant-bar, with names and numbers of its
    own; odd ones get a Weka organization, even ones directories on the shared filesystems."""
    slug = f"tenant-p{index}"
    spec: dict[str, Any] = yaml.safe_load((project / "tenants" / "tenant-bar.yaml").read_text())
    users = [f"p{index}ann", f"p{index}ben"]
    spec["slug"] = slug
    spec["display_name"] = f"Parallel Tenant {index}"
    spec["contract"].update(gpus=8, gpu_minutes=200000)
    spec["reservation"]["nodes"] = [NODES[index - 1]]
    spec["identity"] = {
        "gid": 4200 + 2 * index,
        "admins": [users[0]],
        "admins_gid": 4201 + 2 * index,
    }
    for number, (user, username) in enumerate(zip(spec["users"], users, strict=True)):
        user.update(
            username=username, email=f"{username}@{slug}.example", uid=2300 + 10 * index + number
        )
    spec["slurm"]["qos"]["normal"]["gpus"] = 8
    spec["storage"]["isolation"] = "org" if index % 2 else "directory"
    spec["lifecycle"]["rehearsal"] = True
    spec["network"] = {"isolation": "networkpolicy"}
    spec["login"]["hostname"] = f"login.{slug}.example.internal"
    (project / "tenants" / f"{slug}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    load_spec(project / "tenants", slug, load_platform(project / "Pulumi.prod.yaml"))
    return slug


def all_at_once(project: Path, env: dict[str, str], slugs: list[str], *args: str) -> None:
    """Runs `pulumi <args> --stack <slug>` for every slug at the same time; all must succeed."""
    running = {
        slug: subprocess.Popen(
            ["pulumi", *args, "--stack", slug, "--non-interactive"],
            cwd=project,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for slug in slugs
    }
    failed = {}
    for slug, process in running.items():
        output, _ = process.communicate(timeout=900)
        if process.returncode != 0:
            failed[slug] = output
    assert not failed, "\n\n".join(f"{slug}:\n{out}" for slug, out in failed.items())


def partitions_configmap() -> str:
    configmap = kubectl_json("-n", "slurm-control", "get", "configmap", "slurm-partitions")
    return str((configmap.get("data") or {}).get("partitions.conf", ""))


@pytest.mark.parametrize("count", [2, 4])
def test_new_tenants_brought_up_and_torn_down_at_once(
    tmp_path: Path, pulumi_backend: dict[str, str], count: int
) -> None:
    project = project_copy(tmp_path / "project")
    slugs = [one_node_tenant(project, index) for index in range(1, count + 1)]
    for slug in slugs:
        subprocess.run(
            ["pulumi", "stack", "init", slug, "--non-interactive"],
            cwd=project,
            env={**os.environ, **pulumi_backend},
            capture_output=True,
            check=True,
        )
    try:
        all_at_once(project, pulumi_backend, slugs, "up", "--yes", "--skip-preview")
        for index, slug in enumerate(slugs):
            assert f"PartitionName={slug} " in partitions_configmap()
            assert f"Nodes={NODES[index]}" in show_partition(slug)
            assert labelled(slug) == [NODES[index]]
            assert sacctmgr("show", "account", slug, "format=Account") == [slug]
        all_at_once(project, pulumi_backend, slugs, "preview", "--expect-no-changes")
    finally:
        all_at_once(project, pulumi_backend, slugs, "destroy", "--yes", "--skip-preview")
    for slug in slugs:
        assert f"PartitionName={slug} " not in partitions_configmap()
        assert "not found" in show_partition(slug)
        assert labelled(slug) == []
        assert sacctmgr("show", "account", slug, "format=Account") == []
