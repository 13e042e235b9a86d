"""`gpu-tenants smoke` (runbook step 7) on the tests' sandbox: tenant-bar, onboarded as a rehearsal
on the sandbox's two slurmd nodes (gpu-14 and gpu-15: 16 GPUs) with its scratch a directory of
Weka's shared scratch filesystem, which each node mounts at /scratch. The smoke tests pass as
dave; then each check fails, with its cause and the runbook's fix, when the test breaks what the
runbook warns of: another node in the partition, scratch not mounted on the nodes, more GPUs
visible to a job than it asked for. The handover sheet shows the last run. A job's earlier run
of the same id, which slurmdbd keeps once Slurm gives ids again, is never taken for its own.

The sandbox has no GPUs: the jobs' nvidia-smi and all_reduce_perf are the sandbox's stand-ins
(sandbox/slurm/stand_ins), which print what the real tools print for the GPUs Slurm bound; the
judging itself is tested on real tools' output in tests/unit/test_smoke_judging.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from sandbox.slurm.settings import NODE_SCRATCH
from sandbox.slurm.users import ensure_user
from sandbox.supervisor import Supervisor
from tests.backends import (
    file_backend,
    operator_command,
    run,
    run_pulumi,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG, GROUP, GID = "tenant-bar", "tenant-bar", 4102
NODES = ["gpu-14", "gpu-15"]
# Enough to write and read back through the mount; the runbook's 10 GiB would only cost time.
WRITE_MIB = "64"


@dataclass
class Bar:
    project: Path
    env: dict[str, str]
    # Where the runs' output goes: in /tmp, which the nodes share with this host.
    outputs: Path

    def smoke(self, *args: str) -> subprocess.CompletedProcess[str]:
        output = self.outputs / f"run-{len(list(self.outputs.iterdir()))}"
        return operator_command(
            "smoke", SLUG, "--write-mib", WRITE_MIB, "--timeout", "300", "--output-dir", output,
            "--project", self.project, *args, env=self.env,
        )  # fmt: skip

    def smoke_report(self) -> tuple[int, dict[str, dict[str, Any]]]:
        said = self.smoke("--json")
        assert said.returncode in (0, 1), f"{said.stdout}\n{said.stderr}"
        checks = {c["check"]: c for c in json.loads(said.stdout)["checks"]}
        return said.returncode, checks


@pytest.fixture(scope="module")
def bar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bar]:
    for user, uid in (("dave", 2201), ("erin", 2202)):
        ensure_user(user, uid, GID, GROUP)
    work = tmp_path_factory.mktemp("smoke")
    # Like /scratch/<slug>: the tenant's group writes it, and each run's directory is its user's.
    outputs = Path(tempfile.mkdtemp(prefix="gpu-tenants-smoke-", dir="/tmp"))
    os.chown(outputs, 0, GID)
    outputs.chmod(0o2770)
    project = project_copy(work / "project", rehearsals=(SLUG,))
    tenant = Bar(project, file_backend(work / "backend"), outputs)
    path = tenant.project / "tenants" / f"{SLUG}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["contract"]["gpus"] = 16
    spec["reservation"]["nodes"] = NODES
    spec["slurm"]["qos"]["normal"]["gpus"] = 16
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    run_pulumi(tenant.env, tenant.project, "stack", "init", SLUG)
    run_pulumi(tenant.env, tenant.project, "up", "--yes", "--skip-preview", "--stack", SLUG,
               timeout=600)  # fmt: skip
    yield tenant
    run("scancel", f"--account={SLUG}")
    shutil.rmtree(outputs)
    run_pulumi(tenant.env, tenant.project, "destroy", "--yes", "--skip-preview", "--stack", SLUG,
               timeout=600)  # fmt: skip


def test_the_smoke_tests_pass_on_the_tenants_two_nodes(bar: Bar) -> None:
    said = bar.smoke()
    assert said.returncode == 0, f"{said.stdout}\n{said.stderr}"
    lines = said.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "JOB", "NODE", "RESULT", "EVIDENCE"]
    rows = {line[:14].strip(): line for line in lines[1:5]}
    assert "sinfo -p tenant-bar: gpu-14, gpu-15" in rows["7a partition"]
    assert "1 GPU seen: NVIDIA H100 80GB HBM3, 81559 MiB" in rows["7a GPUs"]
    assert "gpu-14, gpu-15" in rows["7b all-reduce"]
    assert "(the SKU's bar: 190 GB/s)" in rows["7b all-reduce"]
    assert f"wrote and read back {WRITE_MIB} MiB; df -h:" in rows["7c scratch"]
    assert " on /scratch" in rows["7c scratch"]
    # Progress on stderr, as the jobs went.
    assert "[smoke] submitted as dave: single-node-gpu.sh job " in said.stderr
    # The jobs ran as dave, in the tenant's account, as sacct has them.
    job = rows["7a GPUs"].split()[2]
    assert run("sacct", "-X", "-n", "-P", "-j", job, "-o", "User,Account,Partition,State") == (
        "dave|tenant-bar|tenant-bar|COMPLETED\n"
    )
    # The handover sheet says so (runbook step 8's checklist: smoke tests passed).
    sheet = operator_command("handover", SLUG, "--project", bar.project, env=bar.env)
    assert sheet.returncode == 0, sheet.stderr
    smoke = sheet.stdout.split("## Smoke tests (runbook step 7)\n\n", 1)[1]
    assert smoke.startswith("Last run ")
    assert (
        " UTC as dave: passed. 7a partition passed: sinfo -p tenant-bar: gpu-14, gpu-15;" in smoke
    )


def test_a_partition_with_another_node_fails_7a(bar: Bar) -> None:
    # gpu-13 drained first, so that no job waits for a CLOUD node that never powers up.
    run("scontrol", "update", "NodeName=gpu-13", "State=DRAIN", "Reason=smoke-test")
    run("scontrol", "update", f"PartitionName={SLUG}", "Nodes=gpu-[13-15]")
    try:
        status, checks = bar.smoke_report()
    finally:
        run("scontrol", "update", f"PartitionName={SLUG}", "Nodes=gpu-[14-15]")
        run("scontrol", "update", "NodeName=gpu-13", "State=RESUME")
    assert status == 1
    partition = checks["7a partition"]
    assert partition["result"] == "FAILED"
    assert partition["evidence"] == (
        "sinfo -p tenant-bar: gpu-13, gpu-14, gpu-15 (not reserved for it: gpu-13)"
    )
    assert "gpu-tenants diagnose tenant-bar" in partition["fix"]
    assert all(c["passed"] for name, c in checks.items() if name != "7a partition"), checks


def test_scratch_not_mounted_on_the_nodes_fails_7c(bar: Bar, sandbox: SandboxLayout) -> None:
    supervisor = Supervisor(sandbox.root)
    pids = [str(supervisor.pid(f"slurmd-{node}")) for node in NODES]

    def in_node(pid: str, *argv: str) -> None:
        run("nsenter", f"--target={pid}", "--mount", "--", *argv)

    for pid in pids:
        in_node(pid, "umount", str(NODE_SCRATCH))
    try:
        status, checks = bar.smoke_report()
    finally:
        for pid in pids:
            in_node(pid, "mount", "--bind", str(sandbox.node_scratch), str(NODE_SCRATCH))
    assert status == 1
    scratch = checks["7c scratch"]
    assert scratch["result"] == "FAILED"
    assert scratch["evidence"] == "/scratch/tenant-bar does not exist on the node"
    assert "NodeSet template" in scratch["fix"]
    assert checks["7a GPUs"]["passed"]


def test_more_gpus_visible_than_asked_fails_7a(bar: Bar, sandbox: SandboxLayout) -> None:
    cgroup = sandbox.slurm.cgroup_conf
    rendered = cgroup.read_text()
    cgroup.write_text(rendered.replace("ConstrainDevices=yes", "ConstrainDevices=no"))
    try:
        status, checks = bar.smoke_report()
    finally:
        cgroup.write_text(rendered)
    assert status == 1
    gpus = checks["7a GPUs"]
    assert gpus["result"] == "FAILED"
    assert gpus["evidence"] == "nvidia-smi -L lists 8 GPUs to a job that asked for 1"
    assert "ConstrainDevices=yes is missing in cgroup.conf" in gpus["fix"]
    assert checks["7c scratch"]["passed"]


def test_an_unknown_user_is_refused_before_anything_runs(bar: Bar) -> None:
    said = bar.smoke("--user", "mallory")
    assert said.returncode == 2
    assert "--user mallory: not a user of tenant-bar (dave, erin)" in said.stderr
