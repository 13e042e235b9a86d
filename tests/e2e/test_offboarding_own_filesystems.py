"""Offboarding a tenant with filesystems of its own (org isolation), end to end on the tests'
sandbox: tenant-foo (live, not a rehearsal) holds files in its home and scratch filesystems and
has run a job on the slurmd node; it moves one stage per pull request, and its `up` at stage
archived is killed; the next `up` converges with nothing done twice; a rollback from
snapshotted restores it; stage destroy and `destroy --exclude-protected` take it down; a new
filesystem made from each uploaded snapshot holds the tenant's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from providers.retention.client import RetentionStore
from providers.retention.ledger import Entry, Ledger
from providers.retention.objects import TODAY_VARIABLE, uploaded_snapshot_prefix
from providers.weka.uploaded_snapshot_provider import SNAPSHOT_NAME, org_admin_client
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from sandbox.slurm.users import ensure_user
from tests.backends import (
    CHECKPOINTING_JOB,
    ROOT,
    allow_rehearsal,
    authentik,
    authentik_user,
    file_backend,
    fresh_ledger,
    killed_on_leaving,
    mounted,
    operator_command,
    pulumi,
    retention_command,
    run,
    run_pulumi,
    sacct_job,
    sbatch_as,
    scratch_directory,
    wait_for,
    weka,
    weka_org,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


SLUG = "tenant-foo"
GROUP, GID = "tenant-foo", 4099
SIGN_OFF = {
    "by": "Erin Operator",
    "date": "2026-11-30",
    "ticket": "OPS-4243",
    "confirmation": {"kind": "customer", "by": "Lee Chen"},
}
FILES = {
    "home": ("alice/notes.txt", b"alice's notes\n"),
    "scratch": ("tenant-foo/w.bin", b"\0" * 4096),
}
ALICE, BOB = 2147, 2148
OWNED = [
    ("home", "bob/plan.txt", BOB, b"bob's plan\n"),
    ("scratch", "tenant-foo/alice-run.log", ALICE, b"alice's run\n"),
    ("scratch", "tenant-foo/bob-run.log", BOB, b"bob's run\n"),
]


@dataclass
class Foo:
    project: Path
    env: dict[str, str]

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def edit(self, **lifecycle: Any) -> None:
        spec = yaml.safe_load(self.spec_file.read_text())
        spec["lifecycle"].pop("sign_off", None)
        spec["lifecycle"].update(lifecycle)
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def pulumi(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=900)

    def operator(self, command: str) -> dict[str, Any]:
        """`python -m tenant_stack <command> tenant-foo --json` on foo's project: its JSON."""
        said = operator_command(command, SLUG, "--json", "--project", self.project, env=self.env)
        assert said.returncode in (0, 1), said.stderr
        answer: dict[str, Any] = json.loads(said.stdout)
        return answer

    def state(self) -> list[dict[str, Any]]:
        exported = json.loads(self.pulumi("stack", "export"))
        resources: list[dict[str, Any]] = exported["deployment"].get("resources") or []
        return resources


@contextmanager
def attached(filesystem: str, node: str) -> Iterator[tuple[str, str]]:
    """A Weka CSI volume of `filesystem` attached to `node`: its PersistentVolume and its
    VolumeAttachment by name, deleted on leaving."""
    volume, attachment = f"pv-{filesystem}", f"csi-{filesystem}-{node}"
    objects = [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                  "persistentVolumeReclaimPolicy": "Retain",
                  "csi": {"driver": "csi.weka.io", "volumeHandle": f"fs/v1/{filesystem}"}}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
         "metadata": {"name": attachment},
         "spec": {"attacher": "csi.weka.io", "nodeName": node,
                  "source": {"persistentVolumeName": volume}}},
    ]  # fmt: skip
    manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    subprocess.run(["kubectl", "apply", "-f", "-"], input=manifest, text=True, check=True,
                   capture_output=True)  # fmt: skip
    try:
        yield volume, attachment
    finally:
        run("kubectl", "delete", "volumeattachment", attachment, "--wait=false")
        run("kubectl", "delete", "persistentvolume", volume, "--wait=false")


@pytest.fixture(scope="module")
def foo(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Foo]:
    ensure_user("alice", ALICE, GID, GROUP)
    # A ledger of this module's own: the sandbox's keeps earlier runs' entries (Object Lock).
    ledger = fresh_ledger(sandbox)
    patch = pytest.MonkeyPatch()
    for variable, value in ledger.items():
        patch.setenv(variable, value)
    work = tmp_path_factory.mktemp("offboarding-own")
    tenant = Foo(project_copy(work / "project"), file_backend(work / "backend"))
    spec = yaml.safe_load(tenant.spec_file.read_text())
    # One node, the sandbox's slurmd node, so that the tenant's job really runs.
    spec["contract"]["gpus"] = 8
    spec["reservation"]["nodes"] = ["gpu-14"]
    spec["slurm"]["qos"]["normal"]["gpus"] = 8
    spec["slurm"]["qos"]["interactive"]["gpus"] = 8
    spec["lifecycle"].update(drain_mode="hard", drain_timeout="1m")
    tenant.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    tenant.pulumi("stack", "init")
    tenant.pulumi("up", "--yes", "--skip-preview")
    yield tenant
    for account in (SLUG, "ml-team-foo"):  # scancel 22.05 takes one account per --account
        run("scancel", f"--account={account}")
    if any(r["custom"] and not r["type"].startswith("pulumi:providers:") for r in tenant.state()):
        # Whatever a test left is taken down as a rehearsal's would be: every gate open.
        allow_rehearsal(SLUG)
        tenant.edit(stage="active", rehearsal=True)
        for command in (("up",), ("destroy", "--exclude-protected")):
            pulumi(tenant.env, tenant.project, *command, "--yes", "--skip-preview", "--stack", SLUG)
    patch.undo()


def test_the_tenant_holds_data_and_has_run_a_job(foo: Foo) -> None:
    for kind, (path, data) in FILES.items():
        target = mounted(SLUG, f"{SLUG}-{kind}", path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    # What a right to erasure must take out (alice's) and leave as it is (bob's).
    for kind, path, uid, data in OWNED:
        target = mounted(SLUG, f"{SLUG}-{kind}", path)
        target.write_bytes(data)
        os.chown(target, uid, GID)
    # Their logins, which Authentik remembers (an audit event and a session each).
    for user, ip in (("alice", "203.0.113.7"), ("bob", "203.0.113.8")):
        body = {"username": user, "client_ip": ip, "user_agent": "OpenSSH_9.6"}
        login = httpx.post(f"{os.environ['AUTHENTIK_URL']}/_emulator/logins", json=body)
        assert login.status_code == 201, login.text
    run_a_job()


def run_a_job() -> None:
    """alice's one-second job on the slurmd node, run to its end."""
    with scratch_directory(GID) as scratch:
        job = sbatch_as(
            "alice",
            GROUP,
            "--account=ml-team-foo",
            f"--partition={SLUG}",
            "--time=00:05:00",
            f"--chdir={scratch}",
            f"--output={scratch}/slurm-%j.out",
            str(CHECKPOINTING_JOB),
            str(scratch),
            "1",
        )
        wait_for(f"job {job} to end", lambda: sacct_job(job, "State") == ["COMPLETED"], timeout=60)


def refused_preview(foo: Foo) -> str:
    """What a `pulumi preview` of foo that fails printed."""
    refused = pulumi(foo.env, foo.project, "preview", "--stack", SLUG)
    assert refused.returncode != 0
    return refused.stdout + refused.stderr


def test_a_tenant_that_holds_data_cannot_be_made_a_rehearsal(foo: Foo) -> None:
    """A rehearsal's destroy opens every gate; a later pull request may not turn it on."""
    before = foo.state()
    foo.edit(rehearsal=True)
    printed = refused_preview(foo)
    assert (
        f"{foo.spec_file}: lifecycle.rehearsal: true refused: this tenant exists and was not "
        "onboarded as a rehearsal"
    ) in printed, printed
    assert "Traceback" not in printed
    foo.edit(rehearsal=False)
    assert foo.state() == before
    foo.pulumi("preview", "--expect-no-changes")


def test_a_killed_up_at_stage_archived_converges_with_nothing_done_twice(foo: Foo) -> None:
    for stage in ("frozen", "drained"):
        foo.edit(stage=stage)
        foo.pulumi("up", "--yes", "--skip-preview")
    foo.edit(stage="archived")
    argv = ["pulumi", "up", "--yes", "--skip-preview", "--non-interactive", "--stack", SLUG]
    with (
        killed_on_leaving(argv, foo.project, foo.env, foo.project) as up,
        RetentionStore.from_environment() as store,
    ):
        deadline = time.monotonic() + 300
        while not store.list(f"{SLUG}/slurm/"):
            assert up.poll() is None, "up finished before an archive was written"
            assert time.monotonic() < deadline, "no archive was written"
            time.sleep(0.2)
    foo.pulumi("cancel", "--yes")
    foo.pulumi("refresh", "--yes", "--clear-pending-creates")
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("preview", "--expect-no-changes")

    with RetentionStore.from_environment() as store:
        keys = sorted(info.key for info in store.list(f"{SLUG}/"))
    assert keys == [
        f"{SLUG}/slurm/{k}" for k in ("associations.txt", "jobs.csv", "logs.log", "steps.csv")
    ]


def test_snapshotted_uploads_each_filesystem_once(foo: Foo) -> None:
    foo.edit(stage="snapshotted")
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("up", "--yes", "--skip-preview")  # run again: nothing taken or uploaded twice
    with org_admin_client(SLUG) as weka:
        for kind in ("home", "scratch"):
            snapshots = weka.list_snapshots(f"{SLUG}-{kind}")
            assert [s.name for s in snapshots] == [SNAPSHOT_NAME]
            assert snapshots[0].uploaded
    uploads = [r for r in foo.state() if r["type"] == "pulumi-python:dynamic/weka:UploadedSnapshot"]
    assert len(uploads) == 2
    assert all(r.get("protect") for r in uploads)


def test_rollback_from_snapshotted_restores_the_tenant(foo: Foo) -> None:
    foo.edit(stage="active")
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("preview", "--expect-no-changes", "--refresh")
    release = json.loads(
        run("kubectl", "-n", SLUG, "get", "helmreleases", f"login-{SLUG}", "-o", "json")
    )
    assert release["spec"]["values"]["replicas"] == 2
    run_a_job()


def test_destroy_keeps_the_uploads_and_each_restores_the_tenants_files(foo: Foo) -> None:
    for stage in ("frozen", "drained", "archived", "snapshotted"):
        foo.edit(stage=stage)
        foo.pulumi("up", "--yes", "--skip-preview")
    assert foo.operator("diagnose")["findings"] == []
    # A client still mounting the scratch filesystem: its volume attached to a node, as the
    # attach controller records it (the sandbox has no kubelet to mount it).
    with attached(f"{SLUG}-scratch", "gpu-14") as (volume, attachment):
        [found] = foo.operator("diagnose")["findings"]
        assert found["check"] == "filesystem-in-use"
        assert found["evidence"] == (
            f"volumeattachments of the tenant's Weka volumes: {volume} (fs/v1/{SLUG}-scratch) "
            f"on gpu-14 by {attachment}"
        )
        assert "filesystem is in use" not in found["cause"]  # Weka's words are the destroy's
        assert "kubectl delete volumeattachment" in found["fix"]
        (report,) = foo.operator("status")["tenants"]
        assert (report["stage"], report["next_stage"], report["ready"]) == (
            "snapshotted", "destroy", True,
        )  # fmt: skip
        assert report["blockers"] == [
            f"filesystem-in-use: {found['evidence']} (diagnose says the fix)",
            "a reviewed pull request setting lifecycle.stage: destroy, with lifecycle.sign_off "
            "(by, date, ticket, confirmation)",
        ]
    assert foo.operator("diagnose")["findings"] == []
    foo.edit(stage="destroy", sign_off=SIGN_OFF)
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert weka_org(SLUG) is None
    # Offboarded: the program declares what is kept and nothing else.
    foo.pulumi("preview", "--expect-no-changes")
    uploads = {
        r["outputs"]["filesystem"]: r["outputs"]["locator"]
        for r in foo.state()
        if r["type"] == "pulumi-python:dynamic/weka:UploadedSnapshot"
    }
    assert sorted(uploads) == [f"{SLUG}-home", f"{SLUG}-scratch"]

    # Restoring: the cluster admin makes a filesystem in Root from each locator.
    with weka() as admin:
        for kind, (path, data) in FILES.items():
            name = f"restored-{kind}-{int(time.time())}"
            body = {
                "name": name,
                "group_name": "default",
                "total_capacity": 10**12,
                "ssd_capacity": 10**12,
                "object_storage": "retention",
                "locator": uploads[f"{SLUG}-{kind}"],
            }
            restored = admin.post("/fileSystems/download", json=body)
            assert restored.status_code < 300, restored.text
            try:
                assert mounted("Root", name, path).read_bytes() == data
            finally:
                uid = restored.json()["data"]["uid"]
                admin.delete(f"/fileSystems/{uid}")


def test_a_restore_after_the_destroy_makes_each_filesystem_from_its_snapshot(foo: Foo) -> None:
    foo.edit(stage="active", restore=True)
    up = foo.pulumi("up", "--yes", "--skip-preview")
    assert "each filesystem is made from the snapshot uploaded at stage snapshotted" in up
    assert "whatever was written after that is lost" in up
    for kind, (path, data) in FILES.items():
        assert mounted(SLUG, f"{SLUG}-{kind}", path).read_bytes() == data
    foo.pulumi("preview", "--expect-no-changes")
    # Offboarded again, for the retention purge below.
    for stage in ("frozen", "drained", "archived", "snapshotted"):
        foo.edit(stage=stage, restore=False)
        foo.pulumi("up", "--yes", "--skip-preview")
    foo.edit(stage="destroy", sign_off=SIGN_OFF, restore=False)
    foo.pulumi("up", "--yes", "--skip-preview")
    foo.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert weka_org(SLUG) is None


def test_an_offboarded_tenant_cannot_come_back_as_a_rehearsal(foo: Foo) -> None:
    """Its namespace is gone, but Authentik keeps its users' tombstones, which a rehearsal would
    reactivate and its destroy delete with nothing kept."""
    foo.edit(stage="destroy", sign_off=SIGN_OFF, restore=False, rehearsal=True)
    printed = refused_preview(foo)
    assert (
        f"{foo.spec_file}: lifecycle.rehearsal: true refused: this tenant was offboarded and "
        "Authentik keeps its users' tombstones (alice, bob, carol)"
    ) in printed, printed
    foo.edit(stage="destroy", sign_off=SIGN_OFF, restore=False, rehearsal=False)


def retention(foo: Foo, *args: str, now: date) -> dict[str, Any]:
    """`python -m tenant_stack retention <args> --now <now> --json` on foo's project: its JSON."""
    result = retention_command(foo.env, foo.project, *args, "--now", str(now), "--json")
    assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def purge(foo: Foo, now: date) -> dict[str, Any]:
    """One `retention run` as of `now` (a later day: a rehearsal, confirmed): foo's part of its
    report."""
    (report,) = retention(foo, "run", "--confirm-ahead", now=now)["tenants"]
    assert report["tenant"] == SLUG
    assert report["error"] is None, report
    return dict(report)


def retained(foo: Foo) -> dict[str, str]:
    """The items foo's state still retains, with the dates they are kept until."""
    (report,) = retention(foo, "calendar", now=TODAY)["tenants"]
    return {item["item"]: item["kept_until"] for item in report["retained"]}


TODAY = datetime.now(UTC).date()
ACCOUNTING = ["associations", "jobs", "steps"]
USERS = ["user:alice", "user:bob", "user:carol"]


def test_the_calendar_lists_what_offboarding_keeps_with_each_horizon(foo: Foo) -> None:
    kept = retained(foo)
    days = {item: (date.fromisoformat(until) - TODAY).days for item, until in kept.items()}
    assert days == {
        **dict.fromkeys(ACCOUNTING, 2555),
        "logs": 90,
        # Pulumi.prod.yaml keeps copies 30 days; tenant-foo asks for 30 too, so 30.
        f"snapshot:{SLUG}-home": 30,
        f"snapshot:{SLUG}-scratch": 30,
        **dict.fromkeys(USERS, 2555),
    }


def killed_when(foo: Foo, what: str, reached: Callable[[list[str]], bool], *args: str) -> None:
    """`python -m tenant_stack retention <args>` on foo's project, SIGKILLed with its engine once
    the ledger's actions show `what` was `reached`; the stack's lock released as an operator
    would (`pulumi cancel`)."""
    argv = [sys.executable, "-m", "tenant_stack", "retention", *args, "--project", str(foo.project)]
    with killed_on_leaving(argv, ROOT, foo.env, foo.project):
        wait_for(what, lambda: reached([e.action for e in ledger_entries()]), timeout=300)
    foo.pulumi("cancel", "--yes")


def ledger_entries() -> list[Entry]:
    with Ledger.open() as ledger:
        return ledger.entries(SLUG)


def uploads(foo: Foo) -> dict[str, str]:
    """filesystem -> the locator of its retained upload, as foo's state records it."""
    return {
        r["outputs"]["filesystem"]: r["outputs"]["locator"]
        for r in foo.state()
        if r["type"] == "pulumi-python:dynamic/weka:UploadedSnapshot"
    }


def restored_files(filesystem: str, locator: str) -> dict[str, tuple[int, bytes]]:
    """Every file of the snapshot uploaded at `locator` (path -> owner uid, content), read from
    a filesystem made from it in Root, deleted again."""
    name = f"check-{filesystem}-{time.time_ns() % 10**8}"
    body = {
        "name": name,
        "group_name": "default",
        "total_capacity": 10**12,
        "ssd_capacity": 10**12,
        "object_storage": "retention",
        "locator": locator,
    }
    with weka() as admin:
        restored = admin.post("/fileSystems/download", json=body)
        assert restored.status_code < 300, restored.text
        try:
            top = mounted("Root", name)
            return {
                str(path.relative_to(top)): (path.stat().st_uid, path.read_bytes())
                for path in top.rglob("*")
                if path.is_file()
            }
        finally:
            admin.delete(f"/fileSystems/{restored.json()['data']['uid']}")


def test_erasing_a_user_leaves_none_of_their_files_in_any_retained_snapshot(foo: Foo) -> None:
    before = uploads(foo)
    erase = ["erase", SLUG, "alice", "--approved-by", "Dana DPO", "--request", "GDPR-12"]
    # Killed once the first filesystem was made from an upload, then run again to its end.
    killed_when(
        foo,
        "a filesystem made from an upload",
        lambda actions: "erasure-filesystem" in actions,
        *erase,
        "--now",
        str(TODAY),
    )
    done = retention(foo, *erase, now=TODAY)
    after = uploads(foo)
    assert done["copies"] == sorted(after.values())
    assert set(after.values()).isdisjoint(before.values())

    files = {fs: restored_files(fs, locator) for fs, locator in after.items()}
    home, scratch = files[f"{SLUG}-home"], files[f"{SLUG}-scratch"]
    assert not [p for p in (*home, *scratch) if p.startswith("alice")]
    assert ALICE not in {uid for uid, _ in (*home.values(), *scratch.values())}
    assert home["bob/plan.txt"] == (BOB, b"bob's plan\n")
    assert scratch["tenant-foo/bob-run.log"] == (BOB, b"bob's run\n")
    assert scratch["tenant-foo/w.bin"][1] == FILES["scratch"][1]
    with RetentionStore.from_environment() as store:
        for locator in before.values():
            assert store.list(uploaded_snapshot_prefix(locator)) == []
        jobs = store.head(f"{SLUG}/slurm/jobs.csv")
        assert jobs is not None
        assert jobs.metadata is not None
        assert jobs.metadata["gdpr-redacted"] == str(TODAY)
        actions = [e.action for e in ledger_entries()]
    assert actions.count("erasure-requested") == 1
    assert actions.count("erasure-uploaded") == 2
    assert actions.count("erased") == 2
    user = authentik_user("alice")
    assert (user["username"], user["name"], user["email"]) == ("alice", "erased user", "")
    assert user["attributes"]["uidNumber"] == str(ALICE)
    with authentik() as api:
        for who, ip in (("alice", None), ("bob", "203.0.113.8")):
            events = api.get("/events/events/", params={"username": who}).json()["results"]
            assert {e["client_ip"] for e in events if e["action"] == "login"} == {ip}
        sessions = api.get("/core/authenticated_sessions/", params={"user__username": "alice"})
        assert sessions.json()["results"] == []
    # Done: a rerun changes nothing, and neither does the program.
    assert retention(foo, *erase, now=TODAY)["copies"] == done["copies"]
    foo.pulumi("preview", "--expect-no-changes")


def test_the_purge_deletes_expired_snapshots_through_the_engine_and_reruns_do_nothing(
    foo: Foo,
) -> None:
    kept = uploads(foo)
    assert purge(foo, TODAY + timedelta(days=30))["purged"] == []  # the last day they are kept
    day = TODAY + timedelta(days=31)
    report = purge(foo, day)
    assert sorted(report["purged"]) == [f"snapshot:{SLUG}-home", f"snapshot:{SLUG}-scratch"]
    assert "snapshot:" not in " ".join(retained(foo))
    with RetentionStore.from_environment() as store:
        for locator in kept.values():
            assert store.list(uploaded_snapshot_prefix(locator)) == []
        purges = [
            (e.action, sorted(e.details["items"].split(",")))
            for e in ledger_entries()
            if e.action.startswith("purg")
        ]
        both = [f"snapshot:{SLUG}-home", f"snapshot:{SLUG}-scratch"]
        assert purges == [("purging", both), ("purged", both)]  # one engine run for both
    assert purge(foo, day)["purged"] == []
    # The program reads the ledger: it does not declare the purged snapshots again.
    foo.pulumi("preview", "--expect-no-changes")


def on_day(foo: Foo, day: date) -> dict[str, str]:
    """foo's environment with the clock moved to `day`, as the sandbox moves it."""
    return {**foo.env, TODAY_VARIABLE: day.isoformat()}


def test_a_legal_hold_skips_the_tenant_and_extends_its_timers_by_the_time_held(foo: Foo) -> None:
    # The spec's hold (a pull request), for 6 days: recorded by the first run that reads it,
    # lifted only by the `up` of the spec that lifts it.
    foo.edit(stage="destroy", sign_off=SIGN_OFF, legal_hold=True)
    held = purge(foo, TODAY + timedelta(days=40))
    assert held["held"]
    assert held["purged"] == []
    assert held["held_by"] == f"tenants/{SLUG}.yaml lifecycle.legal_hold"
    foo.edit(stage="destroy", sign_off=SIGN_OFF, legal_hold=False)
    assert purge(foo, TODAY + timedelta(days=45))["held"]  # a spec alone lifts nothing
    up = ("up", "--yes", "--skip-preview", "--stack", SLUG)
    run_pulumi(on_day(foo, TODAY + timedelta(days=46)), foo.project, *up, timeout=900)
    assert purge(foo, TODAY + timedelta(days=46))["held_days"] == 6
    # A hold set on the stack without a code change, for 4 more days. It counts from when it
    # is written: the command takes no day; the clock is moved instead.
    hold = ["hold", SLUG, "--by", "Lee Counsel", "--reason", "LIT-77"]
    refused = retention_command(foo.env, foo.project, *hold, "--now", str(TODAY))
    assert refused.returncode == 2
    assert "unrecognized arguments: --now" in refused.stderr

    def on_day_run(day: int, *args: str) -> None:
        done = retention_command(on_day(foo, TODAY + timedelta(days=day)), foo.project, *args)
        assert done.returncode == 0, done.stderr

    on_day_run(60, *hold)
    report = purge(foo, TODAY + timedelta(days=200))
    assert report["held"]
    assert report["held_by"] == "Lee Counsel"
    assert report["purged"] == []
    on_day_run(64, "release", SLUG, "--by", "Lee Counsel")
    # The logs were kept 90 days: with 10 days held, until day 100.
    assert purge(foo, TODAY + timedelta(days=100))["purged"] == []
    report = purge(foo, TODAY + timedelta(days=101))
    assert report["held_days"] == 10
    assert report["purged"] == ["logs"]
    with RetentionStore.from_environment() as store:
        assert store.head(f"{SLUG}/slurm/logs.log") is None
        actions = [(e.action, e.details.get("source")) for e in ledger_entries()]
    assert [a for a in actions if a[0] in ("hold", "release")] == [
        ("hold", "spec"),
        ("release", "spec"),
        ("hold", "command"),
        ("release", "command"),
    ]


def test_a_purge_killed_midway_converges_on_rerun_tombstones_last(foo: Foo) -> None:
    day = TODAY + timedelta(days=2555 + 10 + 1)
    before = [e.action for e in ledger_entries()].count("purging")
    killed_when(
        foo,
        "the accounting's purge to begin",
        lambda actions: actions.count("purging") > before,
        *("run", "--confirm-ahead", "--now", str(day)),
    )
    report = purge(foo, day)
    # The killed run had begun the accounting's engine run: the rerun finishes what it left.
    accounting = {"associations", "jobs", "steps"}
    assert set(USERS) <= set(report["purged"]) <= accounting | set(USERS)
    assert report["purged"][-3:] == USERS  # the tombstones after the accounting
    assert retained(foo) == {}
    with RetentionStore.from_environment() as store:
        assert store.list(f"{SLUG}/") == []
    with authentik() as api:
        for user in ("alice", "bob", "carol"):
            assert api.get("/core/users/", params={"username": user}).json()["results"] == []
    assert purge(foo, day)["purged"] == []
    foo.pulumi("preview", "--expect-no-changes")
    # Step 8's checklist still passes: what the purge deleted is no longer expected.
    verified = operator_command(
        "verify-offboarded",
        SLUG,
        "--json",
        "--notify-customer",
        "--project",
        foo.project,
        env=foo.env,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "purged after its retention" in verified.stdout
