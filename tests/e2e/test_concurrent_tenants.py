"""Tenants applied at the same moment, as a fleet's operators do: new reserved tenants brought up
at once and torn down at once, each writing the shared objects (the Slurm partitions ConfigMap,
sacctmgr, the Authentik `tenants` group, Weka's Root organization and its shared filesystems)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox.project import project_copy
from tests.backends import (
    all_at_once,
    kubectl_json,
    labelled,
    one_node_tenant,
    sacctmgr,
    show_partition,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

# Nodes no other spec in the project names (the rules across tenants refuse a node twice).
NODES = ("gpu-13", "gpu-14", "gpu-15", "gpu-16")


def partitions_configmap() -> str:
    configmap = kubectl_json("-n", "slurm-control", "get", "configmap", "slurm-partitions")
    return str((configmap.get("data") or {}).get("partitions.conf", ""))


def test_new_tenants_brought_up_and_torn_down_at_once(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    """Four at once: every pair of them races as two alone would."""
    project = project_copy(tmp_path / "project")
    slugs = [one_node_tenant(project, index, NODES[index - 1]) for index in range(1, 5)]
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
