"""Offboarding end to end, through the real engine on the tests' sandbox, over one live tenant (not
a rehearsal) with real jobs: tenant-bar on gpu-13 and gpu-14 (the sandbox's slurmd node), moved
through the runbook's stages by editing its spec and running `pulumi up`, as the operator's pull
requests would, with rollbacks on the way; each stage read back with the backends' own tools.
The tests run in the file's order and share the stack."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.notices.delivery import sent_notices
from providers.retention.client import RetentionStore, holds
from providers.retention.ledger import SIGN_OFF as SIGNED_OFF
from providers.retention.ledger import Ledger
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from sandbox.slurm.users import ensure_user
from tenant_stack.spec.models import STAGES, Stage
from tests.backends import (
    CHECKPOINTING_JOB,
    allow_rehearsal,
    authentik_user,
    delivered,
    file_backend,
    fresh_ledger,
    killed_on_leaving,
    kubectl_json,
    labelled,
    mounted,
    operator_command,
    owner_and_mode,
    pulumi,
    resolved,
    retention_command,
    run,
    run_pulumi,
    sacct_job,
    sacctmgr,
    sbatch_as,
    scratch_directory,
    show_partition,
    squeue_job,
    text_of,
    unhealthy,
    wait_for,
    weka,
    weka_quotas,
)
from tests.fleet_workers import events, start_worker, stop_workers, temporal
from tests.trees import make_tree, manifest

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG = "tenant-bar"
NODES = ["gpu-13", "gpu-14"]
SLURMD_NODE = "gpu-14"
GRP_JOBS = "100"  # tenant-bar's slurm.grp_jobs
GROUP, GID = "tenant-bar", 4102
USERS = {"dave": 2201, "erin": 2202}
# How long one `up` at stage drained waits for the queue (stack config), kept short here: the
# sandbox's drain looks at the queue every second (SLURM_DRAIN_POLL_SECONDS), and the graceful
# drain's tests wait it out. The hard drain's waits for its TERMed job to leave the queue, an
# event: a bound well past that costs nothing, and holds on a loaded machine.
DRAIN_WAIT = 5
HARD_DRAIN_WAIT = 60
SIGN_OFF = {
    "by": "Erin Operator",
    "date": "2026-11-30",
    "ticket": "OPS-4242",
    "confirmation": {"kind": "customer", "by": "Lee Chen"},
}
# A tenant's own pod, as the namespace's restricted pod security admits it.
RUNNING_POD = Path(__file__).resolve().parent / "tenant_job_pod.yaml"
# What the tenant keeps on the shared filesystems: /home/tenant-bar/dave/... and
# /scratch/tenant-bar/..., each filesystem's file as (path in it, content).
DATA = {
    "cluster-home": (f"{SLUG}/dave/notes.txt", b"dave's notes\n"),
    "cluster-scratch": (f"{SLUG}/dataset.bin", b"\1" * 8192),
}
# erin's file, which erasing dave must leave as it is.
ERINS = (f"{SLUG}/erin/todo.txt", b"erin's list\n")
# Where in its scratch the tenant keeps a tree as production has them (tests.trees).
TREE = "runs"


@dataclass
class Tenant:
    project: Path
    env: dict[str, str]
    scratch: Path
    jobs: list[int] = field(default_factory=list)  # every job the tenant's users submitted
    tree: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # the manifest of TREE

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def spec(self) -> dict[str, Any]:
        data: dict[str, Any] = yaml.safe_load(self.spec_file.read_text())
        return data

    def write(self, spec: dict[str, Any]) -> None:
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def at_stage(self, stage: str, **lifecycle: Any) -> None:
        spec = self.spec()
        spec["lifecycle"]["stage"] = stage
        spec["lifecycle"].pop("sign_off", None)
        spec["lifecycle"].update(lifecycle)
        self.write(spec)

    def walk_to(self, stage: Stage, **lifecycle: Any) -> None:
        """One `up` per stage from the one the last `up` applied to `stage`, as the pull
        requests would go; `lifecycle` (a sign-off) is given at the last."""
        now = STAGES.index(json.loads(self.pulumi("stack", "output", "lifecycle_stage", "--json")))
        for step in STAGES[now + 1 : STAGES.index(stage) + 1]:
            last = {k: v for k, v in lifecycle.items() if k != "sign_off" or step == stage}
            self.at_stage(step, **last)
            self.up()

    def pulumi(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=900)

    def try_pulumi(self, *args: str) -> tuple[int, str]:
        done = pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=900)
        return done.returncode, done.stdout + done.stderr

    def up(self) -> str:
        return self.pulumi("up", "--yes", "--skip-preview")

    def status(self) -> dict[str, Any]:
        """`status --json` of the tenant: its stage, the next and what that waits for."""
        said = operator_command("status", SLUG, "--json", "--project", self.project, env=self.env)
        assert said.returncode in (0, 1), said.stderr
        report: dict[str, Any] = json.loads(said.stdout)["tenants"][0]
        return report

    def state(self) -> list[dict[str, Any]]:
        resources: list[dict[str, Any]] = (
            json.loads(self.pulumi("stack", "export"))["deployment"].get("resources") or []
        )
        return resources

    def resources(self) -> list[str]:
        return sorted(r["urn"] for r in self.state())

    def outputs_of(self, type_: str) -> dict[str, Any]:
        found = [r for r in self.state() if r["type"] == type_]
        assert len(found) == 1, [r["urn"] for r in found]
        outputs: dict[str, Any] = found[0]["outputs"]
        return outputs

    def submit(self, user: str, *args: str, seconds: int | None = 300) -> int:
        """A job of `user` on the slurmd node that works `seconds`; None: until `release`."""
        job = sbatch_as(
            user,
            GROUP,
            f"--account={SLUG}",
            f"--partition={SLUG}",
            f"--nodelist={SLURMD_NODE}",
            "--time=00:30:00",
            f"--chdir={self.scratch}",
            f"--output={self.scratch}/slurm-%j.out",
            *args,
            str(CHECKPOINTING_JOB),
            str(self.scratch),
            "released" if seconds is None else str(seconds),
        )
        self.jobs.append(job)
        return job

    def release(self, job: int) -> None:
        """Lets a job submitted with `seconds=None` finish: it exits 0, as COMPLETED."""
        (self.scratch / f"release-{job}").touch()


@pytest.fixture(scope="module")
def bar(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Tenant]:
    for user, uid in USERS.items():
        ensure_user(user, uid, GID, GROUP)
    # A ledger of this module's own: the sandbox's keeps earlier runs' entries (Object Lock).
    ledger = fresh_ledger(sandbox)
    patch = pytest.MonkeyPatch()
    for variable, value in ledger.items():
        patch.setenv(variable, value)
    work = tmp_path_factory.mktemp("offboarding")
    with scratch_directory(GID) as scratch:
        tenant = Tenant(project_copy(work / "project"), file_backend(work / "backend"), scratch)
        spec = tenant.spec()
        spec["contract"]["gpus"] = 8 * len(NODES)
        spec["reservation"]["nodes"] = NODES
        for qos in spec["slurm"]["qos"].values():
            qos["gpus"] = min(qos["gpus"], 8 * len(NODES))
        spec["lifecycle"].update(drain_mode="graceful", drain_timeout="1h")
        tenant.write(spec)
        tenant.pulumi("stack", "init")
        tenant.pulumi("config", "set", "drain_wait_seconds", str(DRAIN_WAIT))
        tenant.up()
        yield tenant
        run("scancel", f"--account={SLUG}")
        if tenant.resources():
            # Whatever a test left is taken down as a rehearsal's would be: every gate open.
            allow_rehearsal(SLUG)
            spec = tenant.spec()
            spec["lifecycle"].update(stage="active", rehearsal=True)
            spec["lifecycle"].pop("sign_off", None)
            tenant.write(spec)
            tenant.try_pulumi("up", "--yes", "--skip-preview")
            tenant.try_pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    patch.undo()


def association_limits(account: str) -> tuple[str, str]:
    """GrpJobs and GrpSubmitJobs of the account's own association."""
    for line in sacctmgr(
        "show", "assoc", "where", f"account={account}", "format=User,GrpJobs,GrpSubmit"
    ):
        user, grp_jobs, grp_submit = line.split("|")
        if not user:
            return grp_jobs, grp_submit
    raise AssertionError(f"no association for account {account}")


def partition_state(name: str) -> str:
    return show_partition(name).split(" State=", 1)[1].split()[0]


def job_state(job: int) -> str:
    return squeue_job(job) or "GONE"


def sacct_state(job: int) -> str:
    lines = sacct_job(job, "State")
    return lines[0] if lines else ""


# --- active ---------------------------------------------------------------------------------------


def test_destroy_of_an_active_tenant_deletes_nothing_and_names_the_next_stage(bar: Tenant) -> None:
    before = bar.resources()
    code, said = bar.try_pulumi("destroy", "--yes", "--skip-preview")
    assert code != 0
    assert "offboarding stage 'active'" in said
    assert "moves lifecycle.stage to 'frozen'" in said
    assert bar.resources() == before
    assert labelled(SLUG) == NODES
    assert association_limits(SLUG)[0] == GRP_JOBS


def test_the_tenants_data_sits_in_its_directories_on_the_shared_filesystems(bar: Tenant) -> None:
    for filesystem, (path, data) in DATA.items():
        target = mounted("Root", filesystem, path)
        target.write_bytes(data)
        os.chown(target, USERS["dave"], GID)
    target = mounted("Root", "cluster-home", ERINS[0])
    target.write_bytes(ERINS[1])
    os.chown(target, USERS["erin"], GID)
    tree = mounted("Root", "cluster-scratch", f"{SLUG}/{TREE}")
    make_tree(tree, {user: (uid, GID) for user, uid in USERS.items()})
    bar.tree = manifest(tree)


def test_the_tenants_jobs_run_on_the_slurmd_node(bar: Tenant) -> None:
    job = bar.submit("dave", seconds=1)
    wait_for(f"job {job} to finish", lambda: sacct_state(job) == "COMPLETED", timeout=60)
    assert (bar.scratch / f"started-{job}").read_text().endswith("as dave\n")


def test_a_tenant_that_ran_jobs_cannot_be_abandoned_and_the_refusal_names_them(bar: Tenant) -> None:
    """Issue 46, item 1: an abandoned onboarding keeps nothing, so a tenant with a job in
    Slurm's accounting is offboarded by its stages instead."""
    spec = bar.spec()
    spec["lifecycle"]["abandoned"] = True
    bar.write(spec)
    try:
        code, said = bar.try_pulumi("preview")
    finally:
        spec["lifecycle"].pop("abandoned")
        bar.write(spec)
    assert code != 0
    assert "lifecycle.abandoned" in said
    # The sandbox's accounting also keeps earlier runs' tenant-bar jobs: at least this run's.
    found = re.search(r"Slurm's accounting holds ([0-9]+) jobs of tenant-bar", said)
    assert found is not None, said
    assert int(found.group(1)) >= len(set(bar.jobs))


# --- frozen, and back -----------------------------------------------------------------------------


def test_frozen_blocks_jobs_and_downs_the_partition(bar: Tenant, sandbox: SandboxLayout) -> None:
    bar.at_stage("frozen")
    preview = bar.pulumi("preview", "--diff")
    assert "grp_jobs" in preview
    assert "DOWN" in preview
    bar.up()
    outputs = json.loads(bar.pulumi("stack", "output", "--json"))
    assert "New jobs are refused" in outputs["offboarding_notice"]
    # Step 0: the notice went to the tenant's contact, once, as the ledger and status say.
    [notice] = [r for r in bar.state() if r["type"].endswith("notices:TenantNotice")]
    [mail] = delivered(sandbox, notice["outputs"]["message_id"])
    assert mail["X-RcptTo"] == "kim.park@tenant-bar.example"
    assert text_of(mail) == outputs["offboarding_notice"]
    bar.up()
    assert len(delivered(sandbox, notice["outputs"]["message_id"])) == 1
    assert association_limits(SLUG) == ("0", "0")
    assert partition_state(SLUG) == "DOWN"
    refused = sbatch_refusal("dave")
    assert "policy" in refused.lower() or "limit" in refused.lower(), refused
    report = bar.status()
    assert (report["stage"], report["next_stage"]) == ("frozen", "drained")
    assert report["blockers"] == ["a reviewed pull request setting lifecycle.stage: drained"]
    [sent] = report["notices"]
    assert (sent["kind"], sent["message_id"]) == ("start", notice["outputs"]["message_id"])
    # The stack exports the part the spec decides, for readers without backend access.
    assert outputs["offboarding"] == {
        "stage": "frozen",
        "next_stage": "drained",
        "waits_for": "a reviewed pull request setting lifecycle.stage: drained",
    }


def sbatch_refusal(user: str) -> str:
    """sbatch as `user` into the tenant's partition; what it said when refused."""
    try:
        sbatch_as(user, GROUP, f"--account={SLUG}", f"--partition={SLUG}", "--wrap=true")
    except subprocess.CalledProcessError as refused:
        return str(refused.stderr)
    raise AssertionError("a frozen tenant's job was accepted")


def test_destroy_excluding_protected_at_frozen_is_refused_too(bar: Tenant) -> None:
    before = bar.resources()
    code, said = bar.try_pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert code != 0
    assert "offboarding stage 'frozen'" in said
    assert "moves lifecycle.stage to 'drained'" in said
    assert bar.resources() == before


def test_rollback_from_frozen_restores_the_contract(bar: Tenant) -> None:
    bar.at_stage("active")
    bar.up()
    assert association_limits(SLUG) == (GRP_JOBS, "")
    assert partition_state(SLUG) == "UP"
    bar.pulumi("preview", "--expect-no-changes", "--refresh")
    job = bar.submit("erin", seconds=1)
    wait_for(f"job {job} to finish", lambda: sacct_state(job) == "COMPLETED", timeout=60)


# --- drained: graceful, bounded, then complete ----------------------------------------------------


def test_a_graceful_drain_waits_a_bounded_time_then_completes_once_the_queue_is_empty(
    bar: Tenant,
) -> None:
    # It runs until released below, once the drain's `up` and the reads after it have seen it
    # running, however long a loaded machine takes for them.
    running = bar.submit("dave", seconds=None)
    wait_for(f"job {running} to run", lambda: job_state(running) == "RUNNING", timeout=60)
    pending = bar.submit("erin", "--begin=now+1hour")
    assert job_state(pending) == "PENDING"

    bar.at_stage("frozen")  # one stage per pull request
    bar.up()
    bar.at_stage("drained")
    started = time.monotonic()
    code, said = bar.try_pulumi("up", "--yes", "--skip-preview")
    took = time.monotonic() - started
    assert code != 0
    assert "1 jobs still in the queue" in said
    assert f"{running} (dave, running)" in said
    assert "run `pulumi up` again later" in said
    assert DRAIN_WAIT <= took < DRAIN_WAIT + 90, f"the drain's up took {took:.0f}s"
    # Pending jobs can never start once frozen: cancelled, and listed in the drain's record.
    assert sacct_state(pending).startswith("CANCELLED")  # "CANCELLED by 0": root, for Slurm
    start = bar.outputs_of("pulumi-python:dynamic/slurm:DrainStart")
    assert start["cancelled"] == [f"{pending} (erin, pending)"]
    # status says what the drain waits for, and that the stage is not applied yet.
    report = bar.status()
    assert (report["stage"], report["next_stage"]) == ("drained", "archived")
    assert report["blockers"] == [
        "the spec says stage drained, the last complete `up` applied frozen: run `pulumi up "
        f"--stack {SLUG}` (again, once what follows is cleared)",
        f"the drain is not complete, 1 jobs in the queue: {running} (dave, running); run "
        f"`pulumi up --stack {SLUG}` again once they end (graceful drain, timeout 1h)",
        "a reviewed pull request setting lifecycle.stage: archived",
    ]

    bar.release(running)
    wait_for(f"job {running} to end", lambda: job_state(running) == "GONE", timeout=60)
    bar.up()
    assert bar.status()["blockers"] == ["a reviewed pull request setting lifecycle.stage: archived"]
    assert sacct_state(running) == "COMPLETED"
    assert json.loads(bar.pulumi("stack", "output", "cancelled_jobs", "--json")) == [
        f"{pending} (erin, pending)"
    ]


def test_rollback_from_drained_restores_the_tenant(bar: Tenant) -> None:
    bar.at_stage("active")
    bar.up()
    bar.pulumi("preview", "--expect-no-changes", "--refresh")
    assert partition_state(SLUG) == "UP"


def test_a_merged_stage_applied_on_temporal_reruns_up_until_the_drain_completes(
    bar: Tenant, tmp_path: Path
) -> None:
    running = bar.submit("dave", seconds=None)  # until a round of the drain has failed on it
    wait_for(f"job {running} to run", lambda: job_state(running) == "RUNNING", timeout=60)
    bar.at_stage("frozen")
    bar.up()
    bar.at_stage("drained")
    queue = f"stage-{os.getpid()}"

    def stage(name: str, *args: str) -> subprocess.CompletedProcess[str]:
        options = ("--project", bar.project, "--task-queue", queue)
        return operator_command("fleet", "stage", SLUG, "--stage", name, *args, *options,
                                env=bar.env)  # fmt: skip

    worker = start_worker(tmp_path, "worker", queue, bar.env)
    try:
        # Only the stage the spec says (the merged pull request's) is applied.
        other = stage("archived")
        started = stage("drained", "--every-seconds", "1", "--no-wait")
        # The stack is the workflow's for as long as it applies the stage, waits included.
        again = stage("drained")
        # The workflow's durable wait between two `up`s starts only after an `up` that failed
        # with the job in the queue: the job may end then, and a later round completes the drain.
        wait_for(
            "a round of the drain to fail on the running job",
            lambda: "EVENT_TYPE_TIMER_STARTED" in events(SLUG),
            timeout=300,
            every=1.0,
        )
        bar.release(running)
        finished = temporal("workflow", "result", "--workflow-id", SLUG, "--output", "json")
    finally:
        stop_workers([worker])
    assert other.returncode == 2
    assert "--stage archived: " in other.stderr
    assert "says lifecycle.stage: drained; stages move only by a reviewed pull" in other.stderr
    assert (started.returncode, started.stdout.strip()) == (0, SLUG), started.stderr
    assert again.returncode == 2
    assert f"another operation on {SLUG} is running (workflow id {SLUG})" in again.stderr
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)["result"]
    assert report["stage"] == "drained"
    rounds = report["rounds"]
    assert len(rounds) >= 2, rounds
    for waiting in rounds[:-1]:
        assert waiting["status"] == "failed"
        assert f"1 jobs still in the queue ({running} (dave, running))" in waiting["error"]
    assert rounds[-1]["status"] == "changed"
    assert sacct_state(running) == "COMPLETED"  # left to finish: a graceful drain
    assert bar.status()["blockers"] == ["a reviewed pull request setting lifecycle.stage: archived"]
    bar.at_stage("active")
    bar.up()


# --- drained: hard cut-off ------------------------------------------------------------------------


def test_a_hard_drain_sends_term_so_the_job_checkpoints(bar: Tenant) -> None:
    bar.pulumi("config", "set", "drain_wait_seconds", str(HARD_DRAIN_WAIT))
    job = bar.submit("dave", seconds=600)
    wait_for(f"job {job} to run", lambda: job_state(job) == "RUNNING", timeout=60)
    bar.walk_to("drained", drain_mode="hard", drain_timeout="1m")
    assert (bar.scratch / f"checkpoint-{job}").exists()
    assert job_state(job) == "GONE"


# --- archived -------------------------------------------------------------------------------------


def test_archived_puts_one_row_per_job_in_the_retention_store(bar: Tenant) -> None:
    bar.at_stage("archived", drain_mode="hard", drain_timeout="1m")
    bar.up()
    with RetentionStore.from_environment() as store:
        jobs = store.head(f"{SLUG}/slurm/jobs.csv")
        assert jobs is not None
        assert jobs.metadata is not None
        assert jobs.metadata["tenant"] == SLUG
        assert jobs.metadata["retention-until"] > "2033-01-01"  # 2555 days on
        rows = list(csv.DictReader(io.StringIO(store.get(jobs.key).decode()), delimiter="|"))
        logs = store.head(f"{SLUG}/slurm/logs.log")
        assert logs is not None
        assert logs.metadata is not None
        assert logs.metadata["retention-until"] < "2027-06-01"  # 90 days on
        log = store.get(logs.key).decode()
    # The cluster's logs hold every tenant's jobs (this session's other tenants ran some on
    # gpu-14 too); the archive, only this tenant's lines (runbook 3c).
    logged = {int(found) for found in re.findall(r"JobId=([0-9]+)", log)}
    assert set(bar.jobs) & logged
    assert logged <= {int(row["JobID"]) for row in rows}
    # Step 3c: the slurmd log of each node of the reservation, read where it lives; the stand-in
    # node, which runs no slurmd, is named with why, and the rest is archived all the same.
    slurmd = log.split(f"==> slurmd on {SLURMD_NODE} <==\n")[1].split("==> ")[0]
    assert set(bar.jobs) & {int(job) for job in re.findall(r"\] \[([0-9]+)\.batch\]", slurmd)}
    [archive] = [r for r in bar.state() if r.get("outputs", {}).get("key") == logs.key]
    unread = archive["outputs"]["unread_logs"]
    assert list(unread) == [node for node in NODES if node != SLURMD_NODE]
    assert "slurmd-gpu-13.log: cat: " in unread["gpu-13"]
    assert "==> slurmd on gpu-13: not read: " in log
    # One row per run of a job (an id given again after slurmctld's state was lost is another
    # run); the sandbox's accounting keeps the jobs of earlier runs' tenant-bar too.
    runs = [(int(row["JobID"]), row["Submit"]) for row in rows]
    assert len(runs) == len(set(runs))
    assert set(bar.jobs) <= {job for job, _ in runs}
    assert {row["Account"] for row in rows} == {SLUG}
    report = bar.status()
    assert (report["stage"], report["next_stage"]) == ("archived", "snapshotted")
    assert report["blockers"] == ["a reviewed pull request setting lifecycle.stage: snapshotted"]


def test_rollback_from_archived_keeps_the_archives(bar: Tenant) -> None:
    bar.at_stage("active", drain_mode="graceful", drain_timeout="1h")
    bar.up()
    bar.pulumi("preview", "--expect-no-changes", "--refresh")
    archives = [
        r for r in bar.state() if r["type"] == "pulumi-python:dynamic/retention:SlurmArchive"
    ]
    assert len(archives) == 4
    assert all(r.get("protect") for r in archives)
    assert partition_state(SLUG) == "UP"


# --- destroy --------------------------------------------------------------------------------------


def test_a_stage_skipped_is_refused_before_anything_changes(bar: Tenant) -> None:
    before = bar.resources()
    bar.at_stage("archived")
    code, said = bar.try_pulumi("up", "--yes", "--skip-preview")
    assert code != 0
    assert "lifecycle.stage: 'archived' refused: the tenant is at stage active" in said
    assert "the next is frozen" in said
    assert bar.resources() == before
    assert partition_state(SLUG) == "UP"


def test_destroy_without_sign_off_is_refused_by_the_spec(bar: Tenant) -> None:
    bar.at_stage("destroy")
    code, said = bar.try_pulumi("preview")
    assert code != 0
    assert "lifecycle.sign_off" in said


def test_an_up_killed_while_it_copies_leaves_no_copy_and_the_next_up_completes(
    bar: Tenant,
) -> None:
    bar.walk_to("archived", drain_mode="hard", drain_timeout="1m")
    bar.at_stage("snapshotted", drain_mode="hard", drain_timeout="1m")
    scratch = f"{SLUG}/storage/cluster-scratch.tar.gz"
    up = ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", SLUG]
    with RetentionStore.from_environment() as store:

        def in_flight() -> list[str]:
            """The multipart uploads begun at the scratch copy's key and neither completed nor
            aborted: one exists from the copy's first byte to its last."""
            listed = store._s3.list_multipart_uploads(Bucket=store.bucket, Prefix=scratch)
            return [u["UploadId"] for u in listed.get("Uploads") or [] if u["Key"] == scratch]

        def copying() -> bool:
            # Looked for often and cheaply: a copy can take less than a second, and one that
            # ended unseen fails here at once rather than after the whole timeout. The key is
            # read after the uploads: the digest's mark is a copy in parts of the finished
            # object, so an upload seen while no object is there is the copy's own.
            going = bool(in_flight())
            assert store.head(scratch) is None, "the copy ended before the test saw it going"
            return going

        # The engine killed, with its provider host and the archive on the mount host.
        with killed_on_leaving(up, bar.project, bar.env, bar.project):
            wait_for("the scratch copy to begin", copying, 300, every=0.02)
        assert store.head(scratch) is None, "a killed copy must leave no object at its key"
        assert in_flight(), "the killed copy's upload is left, neither completed nor aborted"
        bar.pulumi("cancel", "--yes")
        bar.pulumi("refresh", "--yes", "--clear-pending-creates")
        bar.up()
        assert in_flight() == [], "the next copy aborts what the killed one left"
        for filesystem in DATA:
            assert holds(f"{SLUG}/storage/{filesystem}.tar.gz") is None
    bar.pulumi("preview", "--expect-no-changes")


def test_destroy_at_stage_destroy_leaves_only_what_is_retained(
    bar: Tenant, tmp_path: Path, sandbox: SandboxLayout
) -> None:
    bar.walk_to("destroy", sign_off=SIGN_OFF, drain_mode="hard", drain_timeout="1m")
    # Step 0's paper trail: the `up` at stage destroy wrote the sign-off into the ledger, once.
    with Ledger.open() as ledger:
        [signed] = ledger.entries(SLUG, (SIGNED_OFF,))
    assert signed.details == {
        **{key: SIGN_OFF[key] for key in ("by", "date", "ticket")},
        "confirmation": "customer",
        "confirmed_by": "Lee Chen",
    }
    # Step 5c: the keys are off the login pods (which stopped at snapshotted); 5d: SSH to the
    # login host, by the name external-dns published, is dead whatever key a user holds.
    keys = kubectl_json("-n", SLUG, "get", "secret", f"{SLUG}-authorized-keys")
    assert keys.get("data") in (None, {})
    [address] = resolved(f"login.{SLUG}.example.internal", f"127.0.0.1:{sandbox.ports.dns}")
    key = tmp_path / "id_ed25519"
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    dead = subprocess.run(
        ["ssh", "-i", str(key), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
         "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "ConnectTimeout=10", "-o", f"BindAddress={sandbox.node.users_address}",
         f"dave@{address}", "id"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert dead.returncode == 255
    assert "Connection refused" in dead.stderr, dead.stderr
    # Step 4d: nothing goes while a tenant pod runs (on the sandbox's node, cpu-01).
    before = bar.resources()
    run("kubectl", "-n", SLUG, "apply", "-f", str(RUNNING_POD))
    run("kubectl", "-n", SLUG, "wait", "--for=condition=Ready", "pod/tenant-job", "--timeout=120s")
    report = bar.status()
    assert (report["stage"], report["next_stage"]) == ("destroy", None)
    assert report["blockers"] == [
        f"runbook step 4d: 1 pods still run in {SLUG}: tenant-job",
        "none: the stage is destroy; `pulumi destroy --exclude-protected` ends it",
    ]
    code, said = bar.try_pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert code != 0
    assert "refused (runbook step 4d): 1 pods still run in namespace tenant-bar: tenant-job" in said
    assert bar.resources() == before
    run("kubectl", "-n", SLUG, "delete", "pod", "tenant-job", "--force", "--grace-period=0")

    # Step 7: a node the health checker reports failing goes to RMA, not back to the pool.
    with unhealthy("gpu-13", "XidErrors", "Xid 79 on GPU 3"):
        # A plain destroy deletes what is not protected, then stops at what is.
        code, said = bar.try_pulumi("destroy", "--yes", "--skip-preview")
        assert code != 0, "a plain destroy must stop at the protected resources"
        bar.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
        why = "GPUHealthy False (XidErrors: Xid 79 on GPU 3)"
        assert f"node gpu-13 held back for RMA, not returned to the pool: {why}" in said
        held = kubectl_json("get", "node", "gpu-13")
        assert held["spec"].get("unschedulable") is True
        assert {"key": "gpu-tenants.example.io/rma", "value": SLUG, "effect": "NoSchedule"} in (
            held["spec"]["taints"]
        )
        assert held["metadata"]["annotations"]["gpu-tenants.example.io/rma-reason"] == why
        assert f"Reason=RMA after {SLUG}: {why}" in run("scontrol", "show", "node", "gpu-13")
        freed = kubectl_json("get", "node", SLURMD_NODE)
        assert not freed["spec"].get("unschedulable")
        assert not freed["spec"].get("taints")
    kept = {r["type"] for r in bar.state() if r.get("custom", True) and r.get("protect")}
    custom = {
        r["type"]
        for r in bar.state()
        if not r["type"].startswith(("pulumi:providers:", "pulumi:pulumi:", "gpu-tenants:"))
    }
    assert (
        custom
        == kept
        == {
            "pulumi-python:dynamic/retention:SlurmArchive",
            "pulumi-python:dynamic/retention:DirectoryCopy",
            "pulumi-python:dynamic/authentik:TenantUser",
        }
    )
    assert labelled(SLUG) == []
    assert sacctmgr("show", "account", SLUG) == []
    assert "not found" in show_partition(SLUG)
    kept_until = {
        r["outputs"]["username"]: r["outputs"]["retention_until"]
        for r in bar.state()
        if r["type"] == "pulumi-python:dynamic/authentik:TenantUser"
    }
    for user in USERS:
        found = authentik_user(user)
        assert found["is_active"] is False
        assert found["groups"] == []
        # What tells the preflight, once the namespace is gone, that this was no rehearsal.
        assert found["attributes"]["gpu_tenants_kept_until"] == kept_until[user]
    # Step 8: every item passes but the customer's completion notice, which the flag sends.
    code, report = verify_offboarded(bar)
    assert code == 1
    assert [c["item"] for c in report["checks"] if not c["ok"]] == [NOTIFIED]
    code, report = verify_offboarded(bar, "--notify-customer")
    assert (code, report["ok"]) == (0, True), report
    with Ledger.open() as ledger:
        [completion] = [n for n in sent_notices(ledger, SLUG) if n.kind == "completion"]
    [mail] = delivered(sandbox, completion.message_id)
    assert mail["X-RcptTo"] == "kim.park@tenant-bar.example"
    told = text_of(mail)
    tombstones = max(kept_until.values())
    assert f"are not given to others): until {tombstones}." in told
    assert "Your job accounting records (jobs, steps, accounts): until 20" in told
    assert "write to gpu-support@example.internal naming `tenant-bar`" in told
    code, report = verify_offboarded(bar, "--notify-customer")  # sent once
    assert len(delivered(sandbox, completion.message_id)) == 1
    # What a hand leaves cluster-wide: a binding of the tenant's admins, a volume its claim kept.
    leftovers = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "bar-admins-view"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "view"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                       "name": f"{SLUG}-admins"}]},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "bar-kept-home"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                  "persistentVolumeReclaimPolicy": "Retain",
                  "hostPath": {"path": "/nonexistent"},
                  "claimRef": {"namespace": SLUG, "name": "home"}}},
    ]  # fmt: skip
    made = tmp_path / "leftovers.json"
    made.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": leftovers}))
    run("kubectl", "create", "-f", str(made))
    code, report = verify_offboarded(bar)
    (objects,) = [c for c in report["checks"] if c["item"].startswith("No tenant Kubernetes")]
    assert (code, objects["ok"]) == (1, False)
    assert objects["detail"] == (
        "still there: clusterrolebinding/bar-admins-view, persistentvolume/bar-kept-home"
    )
    run("kubectl", "delete", "-f", str(made))
    (read_back,) = [c for c in report["checks"] if c["item"].startswith("Every retained")]
    assert read_back["ok"], read_back
    assert read_back["detail"].endswith(" read back")


def unpacked(key: str, into: Path) -> Path:
    """The copy at `key` unpacked by GNU tar into `into`, as an operator restores it by hand."""
    into.mkdir()
    with RetentionStore.from_environment() as store:
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-xzf", "-", "-C", str(into)], stdin=subprocess.PIPE
        )
        assert tar.stdin is not None
        for chunk in store.chunks(key):
            tar.stdin.write(chunk)
        tar.stdin.close()
        assert tar.wait() == 0
    return into


def test_each_retained_copy_gives_back_the_tenants_files(bar: Tenant, tmp_path: Path) -> None:
    with RetentionStore.from_environment() as store:
        for filesystem, (path, data) in DATA.items():
            copy = store.get(f"{SLUG}/storage/{filesystem}.tar.gz")
            with tarfile.open(fileobj=io.BytesIO(copy)) as kept:
                member = kept.getmember("./" + path.removeprefix(f"{SLUG}/"))
                assert (member.uid, member.gid) == (USERS["dave"], GID)
                assert kept.extractfile(member).read() == data  # type: ignore[union-attr]
        scratch = f"{SLUG}/storage/cluster-scratch.tar.gz"
        head = store.head(scratch)
        digest = store.sha256(scratch)
    assert head is not None
    assert head.metadata is not None
    copies = {
        r["outputs"]["key"]: r["outputs"]
        for r in bar.state()
        if r["type"] == "pulumi-python:dynamic/retention:DirectoryCopy"
    }
    assert (copies[scratch]["sha256"], head.metadata["sha256"]) == (digest, digest)
    assert int(head.metadata["files"]) == copies[scratch]["files"] > len(bar.tree)
    # Every file of the tree, its owner, mode, time, hard links and holes, as they were.
    assert manifest(unpacked(scratch, tmp_path / "copy") / TREE) == bar.tree


def test_erasing_a_user_rewrites_each_directory_copy_without_their_files(
    bar: Tenant, tmp_path: Path
) -> None:
    keys = [f"{SLUG}/storage/{filesystem}.tar.gz" for filesystem in DATA]
    with RetentionStore.from_environment() as store:
        heads = {key: store.head(key) for key in keys}
    dates = {
        key: (h.metadata or {}).get("retention-until") if h else None for key, h in heads.items()
    }
    argv = ["erase", SLUG, "dave", "--approved-by", "Dana DPO", "--request", "GDPR-7", "--json"]
    done = retention_command(bar.env, bar.project, *argv)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["copies"]) == sorted(keys)
    with RetentionStore.from_environment() as store:
        for key in keys:
            copy = store.get(key)
            with tarfile.open(fileobj=io.BytesIO(copy)) as kept:
                members = kept.getmembers()
                assert [m.name for m in members if m.uid == USERS["dave"]] == []
                assert [m.name for m in members if m.name.startswith("./dave")] == []
                if key.endswith("cluster-home.tar.gz"):
                    erins = kept.getmember("./" + ERINS[0].removeprefix(f"{SLUG}/"))
                    assert kept.extractfile(erins).read() == ERINS[1]  # type: ignore[union-attr]
            head = store.head(key)
            assert head is not None
            assert head.metadata is not None
            assert head.metadata["retention-until"] == dates[key]
            assert "gdpr-redacted" in head.metadata
    # Everyone else's files of the tree came through the rewrite byte for byte.
    scratch = f"{SLUG}/storage/cluster-scratch.tar.gz"
    others = {name: kept for name, kept in bar.tree.items() if kept[1] != USERS["dave"]}
    assert len(others) < len(bar.tree)
    assert manifest(unpacked(scratch, tmp_path / "copy") / TREE) == others
    with RetentionStore.from_environment() as store:
        digest = store.sha256(scratch)
    with Ledger.open() as ledger:
        recorded = {
            e.details["item"]: e.details for e in ledger.entries(SLUG) if e.action == "erased"
        }
    assert recorded[scratch]["sha256-after"] == digest
    assert recorded[scratch]["sha256-before"] not in ("", digest, "None")
    user = authentik_user("dave")
    assert (user["name"], user["email"]) == ("erased user", "")
    assert user["attributes"]["uidNumber"] == str(USERS["dave"])
    bar.pulumi("preview", "--expect-no-changes")


NOTIFIED = "Customer notified of completion, with the retention end dates"


def verify_offboarded(bar: Tenant, *options: str) -> tuple[int, dict[str, Any]]:
    """`python -m tenant_stack verify-offboarded --json` as the operator runs it."""
    done = operator_command(
        "verify-offboarded", SLUG, "--json", *options, "--project", bar.project, env=bar.env,
        timeout=120,
    )  # fmt: skip
    report: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, report


def test_a_restore_after_the_destroy_unpacks_each_copy_into_the_shared_filesystems(
    bar: Tenant,
) -> None:
    bar.at_stage("active", restore=True)
    up = bar.up()
    assert "each directory is unpacked from the copy kept at stage snapshotted" in up
    # Every file of the tree as it was, less the erased user's; erin's file as she left it.
    tree = mounted("Root", "cluster-scratch", f"{SLUG}/{TREE}")
    assert manifest(tree) == {n: kept for n, kept in bar.tree.items() if kept[1] != USERS["dave"]}
    erins = mounted("Root", "cluster-home", ERINS[0])
    assert erins.read_bytes() == ERINS[1]
    assert owner_and_mode(erins)[:2] == (USERS["erin"], GID)
    # dave is still a user of the spec: his home is made again, empty.
    assert list(mounted("Root", "cluster-home", f"{SLUG}/dave").iterdir()) == []
    assert owner_and_mode(mounted("Root", "cluster-home", f"{SLUG}/dave")) == (
        USERS["dave"], GID, "0700",
    )  # fmt: skip
    assert owner_and_mode(mounted("Root", "cluster-scratch", SLUG)) == (0, GID, "2770")
    # The quotas are set again on the directories the copies came back into.
    with weka() as api:
        home, scratch = weka_quotas(api, "cluster-home"), weka_quotas(api, "cluster-scratch")
    assert {f"/{SLUG}", f"/{SLUG}/dave", f"/{SLUG}/erin"} <= set(home)
    assert f"/{SLUG}" in scratch
    bar.pulumi("preview", "--expect-no-changes")
