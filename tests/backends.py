"""Reading the sandbox's backends with their own tools, for the end-to-end tests: kubectl,
sacctmgr and scontrol, the Authentik and Weka APIs, the Weka mount, and the pulumi CLI; and
running a tenant's jobs on the sandbox's one slurmd node (gpu-14)."""

from __future__ import annotations

import contextlib
import json
import mailbox
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from providers.authentik.client import AuthentikClient
from providers.authentik.props import KEPT_UNTIL_ATTRIBUTE, kept_tombstone
from providers.authentik.settings import Settings as AuthentikSettings
from providers.offboarding.node_release_provider import RMA_REASON, RMA_TAINT
from sandbox.kubernetes.client import tls_context
from sandbox.layout import SandboxLayout
from sandbox.retention_store import seed_bucket
from sandbox.slurm.settings import ACCOUNTING_DB
from sandbox.smtp.service import maildir
from sandbox.supervisor import Supervisor
from tenant_stack.annotations import REHEARSAL_ANNOTATION
from tenant_stack.fleet.live_numbers import handed_out
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]


def kubectl_json(*args: str) -> Any:
    result = subprocess.run(
        ["kubectl", *args, "-o", "json"], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(result.stdout)


def allow_rehearsal(tenant: str) -> None:
    """Lets the tenant be taken down as a rehearsal: recorded on its namespace, and, where it was
    offboarded, its users' tombstones no longer say until when they are kept. What an operator
    with cluster and Authentik rights does by hand to clear up a test tenant, since no spec may
    turn `lifecycle.rehearsal` on for a tenant that was not one (the program's preflight)."""
    subprocess.run(
        ["kubectl", "annotate", "--overwrite", "namespace", tenant, f"{REHEARSAL_ANNOTATION}=true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
        kept = [user for user in directory.users() if kept_tombstone(user.attributes, tenant)]
    with authentik() as api:
        for user in kept:
            attributes = {k: v for k, v in user.attributes.items() if k != KEPT_UNTIL_ATTRIBUTE}
            patched = api.patch(f"/core/users/{user.pk}/", json={"attributes": attributes})
            patched.raise_for_status()


def authentik() -> httpx.Client:
    token = Path(os.environ["AUTHENTIK_TOKEN_FILE"]).read_text().strip()
    return httpx.Client(
        base_url=os.environ["AUTHENTIK_URL"] + "/api/v3",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )


def authentik_user(username: str) -> dict[str, Any]:
    with authentik() as api:
        found = api.get("/core/users/", params={"username": username}).json()["results"]
    assert len(found) == 1, f"{username}: {found}"
    user: dict[str, Any] = found[0]
    return user


def run(*argv: str) -> str:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=True)
    return result.stdout


def sacctmgr(*args: str) -> list[str]:
    return run("sacctmgr", "-P", "-n", *args).splitlines()


@contextmanager
def weka(org_admin: tuple[str, str, str] | None = None) -> Iterator[httpx.Client]:
    """A client of the Weka emulator, logged in as the cluster admin, or as `org_admin`
    (organization, username, password)."""
    ca = tls_context(Path(os.environ["WEKA_CA_FILE"]))
    with httpx.Client(base_url=os.environ["WEKA_URL"], verify=ca, timeout=10) as client:
        if org_admin is None:
            password = Path(os.environ["WEKA_PASSWORD_FILE"]).read_text().strip()
            login = {"username": os.environ["WEKA_USERNAME"], "password": password}
        else:
            login = {"org": org_admin[0], "username": org_admin[1], "password": org_admin[2]}
        token = client.post("/login", json=login).json()["data"]["access_token"]
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def weka_quotas(api: httpx.Client, filesystem: str) -> dict[str, tuple[int, int, str]]:
    """The quotas of a filesystem seen by `api`'s organization: path -> (soft, hard, owner)."""
    found = api.get("/fileSystems", params={"name": filesystem}).json()["data"]
    assert len(found) == 1, f"filesystem {filesystem}: {found}"
    quotas = api.get(f"/fileSystems/{found[0]['uid']}/quota").json()["data"]
    return {q["path"]: (q["soft_limit_bytes"], q["hard_limit_bytes"], q["owner"]) for q in quotas}


def revealed(value: Any) -> Any:
    """A value of an exported deployment: `--show-secrets` keeps a secret in an envelope with
    its JSON as `plaintext`."""
    if isinstance(value, dict) and "plaintext" in value:
        return json.loads(value["plaintext"])
    return value


def mounted(org: str, filesystem: str, path: str = "") -> Path:
    """Where the sandbox's mount host sees a directory of a Weka filesystem."""
    return Path(os.environ["WEKA_MOUNT_ROOT"]) / org / filesystem / path


def weka_org(name: str) -> dict[str, Any] | None:
    with weka() as api:
        orgs = api.get("/organizations").json()["data"]
    return next((o for o in orgs if o["name"] == name), None)


def file_backend(directory: Path) -> dict[str, str]:
    """The environment of a throwaway file backend in `directory`, so that tests never touch the
    operator's stacks."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "PULUMI_BACKEND_URL": directory.as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": "test-only-passphrase",
        "PULUMI_HOME": os.environ["PULUMI_HOME"],
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }


def pulumi(
    env: dict[str, str], project: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`pulumi <args>` in `project` with `env` added, whatever its exit status."""
    return subprocess.run(
        ["pulumi", *args, "--non-interactive"],
        cwd=project,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def fresh_ledger(layout: SandboxLayout) -> dict[str, str]:
    """The environment that selects a ledger bucket of the caller's own, with Object Lock like
    the sandbox's: no one can delete a ledger entry, so the sandbox's ledger holds every earlier
    run's purges, holds and erasures of the same tenants."""
    name = f"ledger-{uuid.uuid4().hex[:12]}"
    seed_bucket(layout.retention_store, layout.ports.retention_store, name, object_lock=True)
    return {"RETENTION_S3_LEDGER_BUCKET": name}


def operator_command(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """`python -m tenant_stack <args>`, as an operator runs it from the checkout, with `env`
    added; whatever its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "tenant_stack", *map(str, args)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def retention_command(
    env: dict[str, str], project: Path, *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """`python -m tenant_stack retention <args> --project <project>`."""
    return operator_command("retention", *args, "--project", project, env=env, timeout=timeout)


def run_pulumi(env: dict[str, str], project: Path, *args: str, timeout: float = 300) -> str:
    """`pulumi <args>`, which must succeed; its output."""
    result = pulumi(env, project, *args, timeout=timeout)
    assert result.returncode == 0, f"pulumi {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@contextmanager
def killed_on_leaving(
    argv: list[str], cwd: Path, env: dict[str, str], project: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` (a `pulumi` command, or an operator command that runs one on `project`) started
    in a session of its own and, on leaving the block, SIGKILLed as a crashed machine would
    stop it: the whole session, and the plugins of the engine it ran, which the engine starts
    in process groups of their own and which may outlive it."""
    job = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield job
    finally:
        with contextlib.suppress(ProcessLookupError):  # the whole session had ended
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        for pid in plugins_of_killed_engine(project):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def plugins_of_killed_engine(project: Path) -> list[int]:
    """The plugins a killed engine left: the dynamic-provider host runs from the project, and
    every plugin of that engine was given the same engine address as its last argument."""
    commands = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            commands[int(cmdline.parent.name)] = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue  # the process ended while we looked
    engines = {
        args.rstrip("\0").rsplit("\0", 1)[-1]
        for args in commands.values()
        if str(project) in args and "pulumi.dynamic" in args
    }
    return [
        pid
        for pid, args in commands.items()
        if args.rstrip("\0").rsplit("\0", 1)[-1] in engines or str(project) in args
    ]


def labelled(tenant: str) -> list[str]:
    items = kubectl_json("get", "nodes", "-l", f"reserved.tenant={tenant}")["items"]
    return sorted(n["metadata"]["name"] for n in items)


def owner_and_mode(path: Path) -> tuple[int, int, str]:
    stat = path.stat()
    return stat.st_uid, stat.st_gid, format(stat.st_mode & 0o7777, "04o")


def show_partition(name: str) -> str:
    """`scontrol show partition NAME -o`: its line, or Slurm's words when it has none."""
    result = subprocess.run(
        ["scontrol", "show", "partition", name, "-o"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result.stdout + result.stderr


# The job a tenant's user runs in the offboarding tests: it checkpoints to scratch on SIGTERM.
# Its header says how to call it and what sacct shows for each way it ends.
CHECKPOINTING_JOB = Path(__file__).resolve().parent / "jobs" / "checkpointing_job.sh"


def sbatch_as(user: str, group: str, *args: str) -> int:
    """Submits a batch job as `user` with primary group `group`; its job id. `args` are sbatch's
    options, then the script and its arguments.

    The tests run as root, and Slurm 22.05 lets root submit for another user with
    `sbatch --uid=USER --gid=GROUP`: the job runs as that user, under that user's association.
    The user must be known to this host's NSS (`sandbox.slurm.users.ensure_user`). The job
    starts with Slurm's variables only (`--export=NONE`), not with the test's environment, as a
    user's job would not carry root's; an `--export` in `args` wins."""
    out = run("sbatch", "--parsable", "--export=NONE", f"--uid={user}", f"--gid={group}", *args)
    # --parsable prints "jobid" or "jobid;cluster".
    return int(out.strip().split(";", 1)[0])


@contextmanager
def scratch_directory(gid: int) -> Iterator[Path]:
    """A tenant's scratch as a plain directory, made as the Weka layout makes it (root:G 2770),
    removed afterwards. In /tmp, because a job's user must be able to reach it and pytest's
    tmp_path sits under a directory only root may enter."""
    path = Path(tempfile.mkdtemp(prefix="gpu-tenants-scratch-", dir="/tmp"))
    try:
        os.chown(path, 0, gid)
        path.chmod(0o2770)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def nslookup(name: str, server: str) -> str:
    """What `busybox nslookup` says of `name`'s A records, asking `server` (host:port)."""
    done = subprocess.run(
        ["busybox", "nslookup", "-type=a", name, server],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return done.stdout + done.stderr


def resolved(name: str, server: str) -> list[str]:
    """`name`'s addresses as `server` answers (its own address is printed with a port)."""
    return re.findall(r"^Address:\s+([0-9.]+)$", nslookup(name, server), re.MULTILINE)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 30, every: float = 0.2) -> None:
    """Polls `check` every `every` seconds until it holds; fails naming `what` after `timeout`
    seconds. A check that starts a program (the Temporal CLI) looks less often."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:g}s waiting for {what}"
        time.sleep(every)


def squeue_job(job_id: int, format_: str = "%T") -> str:
    """`squeue -h -j JOB -o FORMAT`: the job's line, "" once it has left the queue."""
    result = subprocess.run(
        ["squeue", "-h", "-j", str(job_id), "-o", format_],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    # A job slurmctld has already purged from its memory (MinJobAge after it ended) is no error.
    if result.returncode != 0 and "Invalid job id specified" not in result.stderr:
        raise AssertionError(f"squeue -j {job_id} exited {result.returncode}: {result.stderr}")
    return result.stdout.strip()


def sacct_job(job_id: int, fields: str) -> list[str]:
    """The job's allocation line in accounting:
    `sacct -X --allusers --parsable2 --noheader --jobs=JOB --format=FIELDS`."""
    return run(
        "sacct", "-X", "--allusers", "--parsable2", "--noheader", f"--jobs={job_id}",
        f"--format={fields}",
    ).splitlines()  # fmt: skip


def live_numbers() -> set[int]:
    """Every uid and gid Authentik holds (the sandbox keeps earlier runs' tenants' users)."""
    with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
        held = handed_out(directory.users(), directory.groups(), 2000, 4000)
    return {holder.number for holder in held}


def earlier_run(layout: SandboxLayout, job_id: int, seconds: int) -> None:
    """A run of job `job_id` submitted, started and ended `seconds` before it, in Slurm's
    accounting database: what slurmdbd holds once slurmctld has given that id again (its state
    lost, or its ids wrapped past MaxJobId). slurmdbd tells the two apart by submit time."""
    table = f"{layout.slurm.cluster_name}_job_table"
    times = ", ".join(
        f"{column} = {column} - {seconds}"
        for column in ("time_submit", "time_eligible", "time_start", "time_end")
    )
    # The newest run of the id only: slurmctld may have given it before (a sandbox test kills
    # slurmctld, which then starts again from the job id it last saved). The copy's own row
    # number comes from the table's AUTO_INCREMENT as it is inserted (a NULL), never from a
    # MAX read before: slurmdbd inserts its own records meanwhile.
    newest = f"SELECT MAX(job_db_inx) FROM {table} WHERE id_job = {job_id}"
    statements = (
        f"CREATE TEMPORARY TABLE run SELECT * FROM {table} WHERE job_db_inx = ({newest});",
        "ALTER TABLE run MODIFY job_db_inx BIGINT UNSIGNED NULL;",
        f"UPDATE run SET job_db_inx = NULL, {times};",
        f"INSERT INTO {table} SELECT * FROM run;",
    )
    command = [
        "mariadb", f"--defaults-file={layout.slurm.mariadb_cnf}", "--user=root", ACCOUNTING_DB,
        "--execute", " ".join(statements),
    ]  # fmt: skip
    # InnoDB may pick this session as a deadlock's victim while slurmdbd writes: the session
    # and its temporary table end with the failure, so trying again redoes it all once.
    for attempt in range(3):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode == 0:
            return
        time.sleep(0.5 * (attempt + 1))
    raise AssertionError(f"copying job {job_id}'s run in slurmdbd's database: {done.stderr}")


@contextmanager
def slurmdbd_paused(layout: SandboxLayout) -> Iterator[None]:
    """The sandbox's slurmdbd stopped (SIGSTOP) for the block, then continued: a slurmdbd too busy
    to take slurmctld's records, which slurmctld queues meanwhile (sdiag's DBD Agent queue size).
    sacct and sacctmgr wait on it, so the block calls neither. Pause only once the jobs involved
    run and slurmdbd holds their starts: slurmctld sends a starting job's record itself and waits
    for slurmdbd's answer with its job lock held, which would stop squeue and sbatch too."""
    pid = Supervisor(layout.root).pid("slurmdbd")
    assert pid is not None, "the sandbox's slurmdbd is not running"
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def one_node_tenant(project: Path, index: int, node: str) -> str:
    """A new reserved tenant on one node, shaped like tenant-bar, with names and numbers of its
    own; odd ones get a Weka organization, even ones directories on the shared filesystems."""
    slug = f"tenant-p{index}"
    spec: dict[str, Any] = yaml.safe_load((project / "tenants" / "tenant-bar.yaml").read_text())
    users = [f"p{index}ann", f"p{index}ben"]
    spec["slug"] = slug
    spec["display_name"] = f"Parallel Tenant {index}"
    spec["contract"].update(gpus=8, gpu_minutes=200000)
    spec["reservation"]["nodes"] = [node]
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


@contextmanager
def unhealthy(node: str, reason: str, message: str) -> Iterator[None]:
    """The platform's health checker reporting `node` failing (its Pulumi.prod.yaml node_health
    condition False), as offboarding step 7 reads it; on leaving, the condition is gone and the
    node back in the pool as the RMA note says (uncordoned, untainted, resumed in Slurm)."""
    condition = load_platform(Path(__file__).resolve().parent.parent / "Pulumi.prod.yaml")
    assert condition.node_health is not None
    kind = condition.node_health.condition
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    failing = {"type": kind, "status": "False", "reason": reason, "message": message,
               "lastHeartbeatTime": now, "lastTransitionTime": now}  # fmt: skip
    run("kubectl", "patch", "node", node, "--subresource=status", "--type=strategic",
        "-p", json.dumps({"status": {"conditions": [failing]}}))  # fmt: skip
    try:
        yield
    finally:
        gone = {"status": {"conditions": [{"type": kind, "$patch": "delete"}]}}
        for argv in (
            ["kubectl", "patch", "node", node, "--subresource=status", "--type=strategic",
             "-p", json.dumps(gone)],
            ["kubectl", "uncordon", node],
            ["kubectl", "taint", "node", node, f"{RMA_TAINT}-"],
            ["kubectl", "annotate", "node", node, f"{RMA_REASON}-"],
            ["scontrol", "update", f"NodeName={node}", "State=RESUME"],
        ):  # fmt: skip
            # Each undoes what may not have been done (a test that failed before the release).
            subprocess.run(argv, capture_output=True, check=False, timeout=60)


def delivered(layout: SandboxLayout, message_id: str) -> list[mailbox.MaildirMessage]:
    """The messages the sandbox's mail relay delivered with `message_id`, as the customer's
    mailbox got them (the envelope's recipient in X-RcptTo)."""
    box = mailbox.Maildir(maildir(layout.root / "smtp"), create=False)
    return [message for message in box if message["Message-ID"] == message_id]


def text_of(message: mailbox.MaildirMessage) -> str:
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes), "a notice is one text/plain part"
    return body.decode()
