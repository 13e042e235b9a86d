"""Contract tests of the partition provider's ConfigMap form (runbook 4d: the partition line goes
into the Slurm operator's ConfigMap, the kubelet copies it into the controller pod, then
`scontrol reconfigure`), against the sandbox's real kube-apiserver and slurmctld. The sandbox's
stand-in for the kubelet's ConfigMap volume is sandbox/kubernetes/configmap_volume.py.

The file form is tested in test_slurm_provider.py.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.errors import SlurmError
from providers.slurm import partitions
from providers.slurm.partition_store import FileStore, StaleWriteError
from providers.slurm.provider import SlurmPartitionProvider
from providers.slurm.settings import Settings
from sandbox.layout import SandboxLayout
from tests.backends import show_partition

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

PARTITIONS = SlurmPartitionProvider()
CONFIGMAP = ("slurm-control", "slurm-partitions")


def configmap_text() -> str:
    result = subprocess.run(
        ["kubectl", "-n", CONFIGMAP[0], "get", "configmap", CONFIGMAP[1], "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    data: dict[str, str] = json.loads(result.stdout).get("data") or {}
    return data.get("partitions.conf", "")


def partition_inputs(slug: str, **changes: Any) -> dict[str, Any]:
    inputs = {
        "name": slug, "tenant": slug, "nodes": "gpu-[13-14]", "allow_accounts": [slug],
        "max_time": "24:00:00", "default_time": "01:00:00", "preempt_mode": "OFF",
        "oversubscribe": "EXCLUSIVE", "state": "UP", **changes,
    }  # fmt: skip
    result = PARTITIONS.check({}, inputs)
    assert result.failures == [], result.failures
    return dict(result.inputs)


@pytest.fixture
def slug() -> Iterator[str]:
    """A fresh partition name, whose line is taken out of the ConfigMap again afterwards."""
    name = f"tenant-{uuid.uuid4().hex[:8]}"
    yield name
    settings = Settings.from_environment()
    store = settings.partition_store("cleaning up")
    read = store.read("cleaning up")
    kept = partitions.set_partition(read.text, name, None)
    if kept != read.text:
        store.write(kept, read, "cleaning up")
        store.wait_visible(name, None, "cleaning up")
        subprocess.run(["scontrol", "reconfigure"], timeout=30, check=True)


def test_the_sandbox_puts_partitions_through_the_slurm_operators_configmap() -> None:
    settings = Settings.from_environment()
    assert settings.partitions_configmap == CONFIGMAP
    assert Path(str(settings.partitions_file)).name == "partitions-configmap.conf"


def test_create_update_and_delete_go_through_the_configmap_to_slurmctld(slug: str) -> None:
    created = PARTITIONS.create(partition_inputs(slug))
    assert created.id == slug
    line = partitions.find_partition(configmap_text(), slug)
    assert line is not None
    assert (line["Nodes"], line["AllowAccounts"], line["MaxTime"]) == (
        "gpu-[13-14]",
        slug,
        "1-00:00:00",  # as Slurm spells 24:00:00
    )
    # The controller's copy shows it, and slurmctld was reconfigured after that, not before.
    controller_copy = Settings.from_environment().partitions_file
    assert controller_copy is not None
    assert controller_copy.read_text() == configmap_text()
    assert "MaxTime=1-00:00:00" in show_partition(slug)

    olds = created.outs or {}
    PARTITIONS.update(slug, olds, partition_inputs(slug, max_time="12:00:00"))
    assert "MaxTime=12:00:00" in show_partition(slug)
    assert (partitions.find_partition(configmap_text(), slug) or {})["MaxTime"] == "12:00:00"

    PARTITIONS.delete(slug, olds)
    assert partitions.find_partition(configmap_text(), slug) is None
    assert f"Partition {slug} not found" in show_partition(slug)


def test_a_write_over_a_changed_configmap_is_refused_as_stale(slug: str) -> None:
    store = Settings.from_environment().partition_store("writing")
    read = store.read("writing")
    # Someone else's write in between (another stack, an operator's kubectl edit).
    line = f"PartitionName={slug} Nodes=gpu-13 AllowAccounts={slug} State=UP\n"
    store.write(read.text + line, read, "writing")
    with pytest.raises(StaleWriteError):
        store.write(read.text, read, "writing")
    assert line in configmap_text()


def test_a_controller_that_never_sees_the_change_is_an_error_that_says_why(
    slug: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A subPath mount: the controller's file never changes after the pod started.
    frozen = tmp_path / "partitions.conf"
    frozen.write_text("# frozen\n")
    monkeypatch.setenv("SLURM_PARTITIONS_FILE", str(frozen))
    monkeypatch.setenv("SLURM_PARTITIONS_SYNC_TIMEOUT", "0.5")  # looks every 0.2 s meanwhile
    with pytest.raises(SlurmError) as failed:
        PARTITIONS.create(partition_inputs(slug))
    message = str(failed.value)
    assert f"{frozen} in the controller did not show the change" in message
    assert "subPath mounts never update" in message
    # Nothing was reconfigured: slurmctld never got a partition it was not shown.
    assert f"Partition {slug} not found" in show_partition(slug)


def test_a_missing_configmap_is_named(slug: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_PARTITIONS_CONFIGMAP", "slurm-control/no-such-partitions")
    with pytest.raises(SlurmError) as failed:
        PARTITIONS.create(partition_inputs(slug))
    message = str(failed.value)
    assert "ConfigMap slurm-control/no-such-partitions (key partitions.conf)" in message
    assert "NotFound" in message or "not found" in message
    assert "create it, or set SLURM_PARTITIONS_CONFIGMAP" in message


def test_a_partition_defined_outside_the_configmap_is_neither_doubled_nor_left_behind(
    slug: str, sandbox: SandboxLayout
) -> None:
    # Left in the file form's include, as after switching a cluster to the ConfigMap form.
    file_form = FileStore(sandbox.slurm.partitions_conf)
    line = f"PartitionName={slug} Nodes=gpu-15 AllowAccounts={slug} State=UP\n"
    with file_form.lock():
        before = file_form.read("test")
        file_form.write(before.text + line, before, "test")
    subprocess.run(["scontrol", "reconfigure"], timeout=30, check=True)
    try:
        inputs = partition_inputs(slug)
        for attempt in (
            lambda: PARTITIONS.update(slug, inputs, inputs),
            lambda: PARTITIONS.delete(slug, inputs),
        ):
            with pytest.raises(SlurmError) as refused:
                attempt()
            message = str(refused.value)
            assert f"partition '{slug}' exists in slurmctld but not in ConfigMap" in message
            assert "move its line into ConfigMap slurm-control/slurm-partitions" in message
        assert partitions.find_partition(configmap_text(), slug) is None
        assert "Nodes=gpu-15" in show_partition(slug)
    finally:
        with file_form.lock():
            now = file_form.read("cleanup")
            file_form.write(partitions.set_partition(now.text, slug, None), now, "cleanup")
        subprocess.run(["scontrol", "reconfigure"], timeout=30, check=True)
