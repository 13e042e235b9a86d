"""GPU usage on the tests' sandbox: first the GPU-hours `usage` reports for jobs that ran, against
sacct's own figures; then usage against the caps, as `status` and `diagnose` report it:
tenant-foo on the slurmd node (8 GPUs), its team ml-team-foo capped at 4 in the spec. alice runs
two 2-GPU jobs in the team; the team's cap is then lowered to 2 under them (Slurm keeps them
running), which oversubscribes the team; GPU-requesting pods in the namespace then take the
tenant over its contract."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from providers.retention.client import RetentionStore
from providers.retention.objects import archive_key
from providers.slurm.accounting_export import export
from providers.slurm.settings import Settings as SlurmSettings
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from sandbox.retention_store.service import seed_bucket
from sandbox.slurm.users import ensure_user
from tests.backends import (
    CHECKPOINTING_JOB,
    earlier_run,
    file_backend,
    operator_command,
    run,
    run_pulumi,
    sacct_job,
    sacctmgr,
    sbatch_as,
    scratch_directory,
    slurmdbd_paused,
    squeue_job,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG, TEAM, GROUP, GID = "tenant-foo", "ml-team-foo", "tenant-foo", 4099
# How long an export waits for slurmdbd after it continues: it takes the queued records at once.
DBD_WAIT = 60


@dataclass
class Foo:
    project: Path
    env: dict[str, str]

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def set_team_gpus(self, gpus: int) -> None:
        spec = yaml.safe_load(self.spec_file.read_text())
        spec["slurm"]["teams"][0]["gpus"] = gpus
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        run_pulumi(self.env, self.project, "up", "--yes", "--skip-preview", "--stack", SLUG,
                   timeout=600)  # fmt: skip

    def status(self) -> dict[str, Any]:
        said = operator_command("status", SLUG, "--json", "--project", self.project, env=self.env)
        assert said.returncode in (0, 1), said.stderr
        report: dict[str, Any] = json.loads(said.stdout)["tenants"][0]
        return report


@pytest.fixture(scope="module")
def foo(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Foo]:
    ensure_user("alice", 2147, GID, GROUP)
    work = tmp_path_factory.mktemp("gpu-usage")
    tenant = Foo(project_copy(work / "project", rehearsals=(SLUG,)), file_backend(work / "backend"))
    spec = yaml.safe_load(tenant.spec_file.read_text())
    spec["contract"]["gpus"] = 8
    spec["reservation"]["nodes"] = ["gpu-14"]  # the sandbox's slurmd node, with 8 GPUs
    for qos in ("normal", "interactive"):
        spec["slurm"]["qos"][qos]["gpus"] = 8
    spec["slurm"]["teams"][0]["gpus"] = 4
    spec["slurm"]["partition"]["oversubscribe"] = "no"  # jobs share the node (exclusive: whole)
    tenant.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    run_pulumi(tenant.env, tenant.project, "stack", "init", SLUG)
    tenant.set_team_gpus(4)
    yield tenant
    for account in (SLUG, TEAM):  # scancel 22.05 takes one account per --account
        run("scancel", f"--account={account}")
    run("kubectl", "-n", SLUG, "delete", "pods", "--all", "--wait=false")
    run_pulumi(tenant.env, tenant.project, "destroy", "--yes", "--skip-preview", "--stack", SLUG,
               timeout=600)  # fmt: skip


def running(job: int) -> bool:
    return squeue_job(job) == "RUNNING"


def scopes(report: dict[str, Any]) -> dict[str, tuple[int, int, bool]]:
    return {s["scope"]: (s["used"], s["cap"], s["over"]) for s in report["gpu_usage"]["scopes"]}


def condition(report: dict[str, Any]) -> tuple[str, str]:
    found = next(c for c in report["conditions"] if c["type"] == "NotOversubscribed")
    return found["status"], found["reason"]


def finished(jobs: list[int]) -> bool:
    """Whether slurmdbd has every job's whole record (each asked for GPUs): its start, its end
    and the GPUs it was given. sacct reads slurmdbd, which hears of them late, and may hear of a
    job's end before its start (providers/slurm/batch.py)."""
    ids = ",".join(map(str, jobs))
    lines = run("sacct", "-X", "-n", "-P", f"--jobs={ids}", "--format=Start,End,AllocTRES").split()
    records = [line.split("|") for line in lines]
    return len(records) == len(jobs) and all(
        not {"Unknown", "None"} & {start, end} and "gres/gpu=" in tres
        for start, end, tres in records
    )


def sacct_gpu_hours(day: date) -> dict[str, float]:
    """GPU-hours per user of the tenant's jobs on `day`, from sacct's own figures: each job's
    ElapsedRaw (seconds) times the GPUs in its AllocTRES."""
    lines = run(
        "sacct", "-X", "-D", "-n", "-P", "--allusers", f"--accounts={SLUG},{TEAM}",
        f"--starttime={day}", f"--endtime={day + timedelta(days=1)}",
        "--format=User,ElapsedRaw,AllocTRES,Start,End",
    ).splitlines()  # fmt: skip
    hours: dict[str, float] = {}
    for line in lines:
        user, elapsed, tres, start, end = line.split("|")
        gpus = sum(int(t.split("=")[1]) for t in tres.split(",") if t.startswith("gres/gpu"))
        if gpus and start != "Unknown":
            # A job of the window that ran over its midnight would be clipped by the report.
            assert start.startswith(str(day)), line
            assert end.startswith(str(day)), line
            hours[user] = hours.get(user, 0.0) + int(elapsed) * gpus / 3600
    return hours


def test_usage_gives_the_gpu_hours_sacct_gives(
    foo: Foo, tmp_path: Path, sandbox: SandboxLayout
) -> None:
    jobs = [
        sbatch_as("alice", GROUP, f"--account={TEAM}", f"--partition={SLUG}", f"--gres=gpu:{gpus}",
                  "--mem=64M", "--time=00:05:00", "--output=/dev/null", f"--wrap=sleep {seconds}")
        for gpus, seconds in ((2, 4), (1, 2), (3, 3))
    ]  # fmt: skip
    wait_for("the jobs' ends in slurmdbd", partial(finished, jobs), 120)
    today = str(date.today())
    said = operator_command(
        "usage", SLUG, "--from", today, "--to", today, "--json", "--csv", tmp_path / "usage.csv",
        "--charts", tmp_path / "charts", "--chart-format", "png", "--project", foo.project,
        env=foo.env,
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    report = json.loads(said.stdout)["tenants"][0]
    expected = sacct_gpu_hours(date.fromisoformat(today))
    assert expected["alice"] >= (2 * 4 + 1 * 2 + 3 * 3) / 3600
    assert report["by_user"] == pytest.approx(expected, abs=1e-3)
    assert report["gpu_hours"] == pytest.approx(sum(expected.values()), abs=1e-3)
    assert report["by_team"][TEAM] >= expected["alice"] - 1e-3
    assert report["capacity_gpu_hours"] == 8 * 24
    alice = next(row for row in report["slurm_budget"] if row["user"] == "alice")
    assert alice["budget"] == 240000
    with (tmp_path / "usage.csv").open(newline="") as billing:
        rows = list(csv.DictReader(billing, strict=True))
    assert sum(float(r["gpu_hours"]) for r in rows) == pytest.approx(report["gpu_hours"], abs=1e-3)
    for chart in (
        tmp_path / "charts" / f"{SLUG}-gpu-hours.png",
        tmp_path / "charts" / f"{SLUG}-budget.png",
    ):
        with Image.open(chart) as image:
            image.verify()
    # The offboarding archive's jobs.csv, as stage archived exports it, into a bucket of this
    # test's own: `--archived` reads the same figures from it.
    bucket = f"usage-{uuid.uuid4().hex[:12]}"
    seed_bucket(sandbox.retention_store, sandbox.ports.retention_store, bucket)
    exported = export(SlurmSettings.from_environment().make_transport(), "jobs", [SLUG, TEAM])
    with RetentionStore.from_environment({**os.environ, "RETENTION_S3_BUCKET": bucket}) as store:
        store.put(archive_key(SLUG, "jobs", "csv"), exported.data, {})
    archived = operator_command(
        "usage", SLUG, "--archived", "--from", today, "--to", today, "--json",
        "--project", foo.project, env={**foo.env, "RETENTION_S3_BUCKET": bucket},
    )  # fmt: skip
    assert archived.returncode == 0, archived.stderr
    kept = json.loads(archived.stdout)["tenants"][0]
    assert kept["by_user"] == pytest.approx(report["by_user"], abs=1e-3)
    assert kept["by_day"] == pytest.approx(report["by_day"], abs=1e-3)


def test_every_run_of_a_job_id_slurm_gave_twice_is_billed_and_archived(
    foo: Foo, sandbox: SandboxLayout
) -> None:
    job = sbatch_as(
        "alice",
        GROUP,
        f"--account={TEAM}",
        f"--partition={SLUG}",
        "--gres=gpu:2",
        "--mem=64M",
        "--time=00:05:00",
        "--output=/dev/null",
        "--wrap=sleep 3",
    )
    wait_for("the job's end in slurmdbd", partial(finished, [job]), 120)
    earlier_run(sandbox, job, seconds=60)
    # Yesterday too: the earlier run may fall before midnight.
    days = (date.today() - timedelta(days=1), date.today())
    said = operator_command(
        "usage", SLUG, "--from", str(days[0]), "--to", str(days[1]), "--json",
        "--project", foo.project, env=foo.env,
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    # Against sacct's own figures for every run (--duplicates), read right after the report: a
    # difference of two reports would also count whatever else of alice's ran between them.
    # One run of the job (2 GPUs, 3 s) is 0.0017 GPU-hours, far past the tolerance.
    sacct = sum(sacct_gpu_hours(day).get("alice", 0.0) for day in days)
    billed = json.loads(said.stdout)["tenants"][0]["by_user"]["alice"]
    assert billed == pytest.approx(sacct, abs=2e-4)
    exported = export(SlurmSettings.from_environment().make_transport(), "jobs", [SLUG, TEAM])
    rows = csv.DictReader(exported.data.decode().splitlines(), delimiter="|")
    submitted = [row["Submit"] for row in rows if row["JobID"] == str(job)]
    assert len(submitted) == len(set(submitted)) == 2


def test_an_export_waits_until_slurmdbd_holds_the_end_of_a_job_that_just_ended(
    foo: Foo, sandbox: SandboxLayout
) -> None:
    transport = SlurmSettings.from_environment().make_transport()
    with scratch_directory(GID) as scratch, ThreadPoolExecutor(1) as exporter:
        job = sbatch_as(
            "alice", GROUP, f"--account={TEAM}", f"--partition={SLUG}", "--gres=gpu:1",
            "--mem=64M", "--time=00:05:00", f"--chdir={scratch}", "--output=/dev/null",
            str(CHECKPOINTING_JOB), str(scratch), "released",
        )  # fmt: skip
        wait_for(f"job {job} to run", partial(running, job), 60)
        submitted = squeue_job(job, "%V")  # as sacct prints it: the run, not an earlier one
        # Its start is in slurmdbd before the pause (slurmctld sent it as the job started): only
        # its end reaches slurmdbd late, through slurmctld's queue.
        wait_for(f"slurmdbd to hold job {job}", lambda: bool(sacct_job(job, "JobID")))
        with slurmdbd_paused(sandbox):
            (scratch / f"release-{job}").touch()
            wait_for(f"job {job} to end", lambda: squeue_job(job) == "", 60)
            exporting = exporter.submit(export, transport, "jobs", [SLUG, TEAM])
            with pytest.raises(TimeoutError):
                exporting.result(timeout=3)  # waits: the job's end is still queued
        jobs = exporting.result(timeout=DBD_WAIT)
    rows = csv.DictReader(io.StringIO(jobs.data.decode()), delimiter="|")
    [row] = [r for r in rows if (r["JobID"], r["Submit"]) == (str(job), submitted)]
    assert (row["State"], row["End"] != "Unknown") == ("COMPLETED", True)


def test_jobs_of_the_interactive_qos_are_never_preempted(foo: Foo) -> None:
    """Runbook 4c: the interactive QoS is "never preempted". Its PreemptMode=OFF is stored as the
    cluster's mode (REQUEUE here), so `preempt_mode: off` exempts its jobs for their wall limit.
    A platform QoS may preempt both of the tenant's QoS: slurmctld's own answer to a job that
    needs the whole node (`sbatch --test-only`) preempts the normal job, never the interactive
    one."""
    urgent = "urgent-preempts-foo"
    run("sacctmgr", "-i", "add", "qos", urgent, "Priority=900",
        "Preempt=normal-foo,interactive-foo")  # fmt: skip
    try:
        run("sacctmgr", "-i", "modify", "user", "root", "set", f"qos+={urgent}")
        jobs = {
            qos: sbatch_as(
                "alice",
                GROUP,
                f"--account={TEAM}",
                f"--partition={SLUG}",
                f"--qos={qos}",
                "--gres=gpu:2",
                "--mem=64M",
                "--time=00:30:00",
                "--output=/dev/null",
                "--wrap=sleep 1200",
            )
            for qos in ("normal-foo", "interactive-foo")
        }
        for job in jobs.values():
            wait_for(f"job {job} to run", partial(running, job), 60)
        asked = subprocess.run(
            ["sbatch", "--test-only", "--partition=platform", "--nodelist=gpu-14",
             "--gres=gpu:8", "--mem=64M", f"--qos={urgent}", "--time=00:10:00",
             "--wrap=sleep 1"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        said = asked.stdout + asked.stderr
        preempts = {
            int(job)
            for line in said.splitlines()
            if "Preempts:" in line
            for job in line.split("Preempts:", 1)[1].strip().split(",")
        }
        assert jobs["normal-foo"] in preempts, said
        assert jobs["interactive-foo"] not in preempts, said
        assert sacctmgr(
            "show", "qos", "interactive-foo", "format=PreemptMode,PreemptExemptTime"
        ) == ["cluster|04:00:00"]
    finally:
        run("sacctmgr", "-i", "delete", "qos", urgent)
        run("scancel", f"--account={TEAM}")
        wait_for("the team's jobs to leave the queue",
                 lambda: run("squeue", "-h", f"--account={TEAM}") == "", 60)  # fmt: skip


def test_a_team_within_its_cap(foo: Foo) -> None:
    jobs = [
        sbatch_as(
            "alice",
            GROUP,
            f"--account={TEAM}",
            f"--partition={SLUG}",
            "--gres=gpu:2",
            "--mem=64M",  # without it a job takes the node's memory (CR_Core_Memory)
            "--time=00:30:00",
            "--output=/dev/null",
            "--wrap=sleep 1200",
        )
        for _ in range(2)
    ]
    for job in jobs:
        wait_for(f"job {job} to run", partial(running, job), 60)
    report = foo.status()
    assert scopes(report) == {"tenant": (4, 8, False), f"team {TEAM}": (4, 4, False)}
    assert condition(report) == ("True", "WithinCaps")
    assert report["ready"] is True
    alice = next(row for row in report["gpu_usage"]["gpu_minutes"] if row["user"] == "alice")
    assert (alice["account"], alice["budget"]) == (TEAM, 240000)


def test_a_cap_lowered_under_running_jobs_oversubscribes_the_team(foo: Foo) -> None:
    foo.set_team_gpus(2)
    assert sacctmgr("show", "assoc", f"account={TEAM}", "user=", "format=GrpTRES") == ["gres/gpu=2"]
    report = foo.status()
    assert scopes(report)[f"team {TEAM}"] == (4, 2, True)
    assert condition(report) == ("False", "TeamOverCap")
    assert report["ready"] is False
    said = operator_command("diagnose", SLUG, "--json", "--project", foo.project, env=foo.env)
    [finding] = json.loads(said.stdout)["findings"]
    assert finding["check"] == "gpus-oversubscribed"
    assert finding["evidence"] == (
        f"team {TEAM}: 4 GPUs in use (Slurm running jobs 4, Kubernetes pod requests 0), "
        "cap 2 (slurm.teams.0.gpus)"
    )
    assert f"squeue --accounts={TEAM} --states=RUNNING" in finding["fix"]


def test_pods_requesting_gpus_take_the_tenant_over_its_contract(foo: Foo) -> None:
    for index in range(2):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"train-{index}", "namespace": SLUG,
                         "labels": {"app.kubernetes.io/managed-by": SLUG}},
            "spec": {
                "securityContext": {"runAsNonRoot": True, "runAsUser": 2147,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "train",
                    "image": "registry.example.invalid/train:1",
                    "resources": {"requests": {"nvidia.com/gpu": "3"},
                                  "limits": {"nvidia.com/gpu": "3"}},
                    "securityContext": {"allowPrivilegeEscalation": False,
                                        "capabilities": {"drop": ["ALL"]}},
                }],
            },
        }  # fmt: skip
        subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(pod), text=True,
                       check=True, capture_output=True)  # fmt: skip
    report = foo.status()
    assert scopes(report)["tenant"] == (10, 8, True)
    assert condition(report) == ("False", "TenantOverContract")
