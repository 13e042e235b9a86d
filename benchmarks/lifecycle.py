"""A tenant's whole life, timed end to end on the tests' sandbox: a tenant of 3 users (`--users`) on
two reserved nodes onboarded (`up`), one job of a user's run, walked through every offboarding stage
(one `up` per stage, as the merged pull requests would go: frozen, drained with a hard drain,
archived, snapshotted, destroy with its sign-off), taken down by `destroy --exclude-protected`,
checked by `verify-offboarded` (which then sends the completion notice), and purged by
`retention run --now` past every retention date, until its stack holds nothing.

Printed: the wall time of each step and of the whole, against the goal of 3 minutes. The
ledger is a bucket of this run's own (with Object Lock, like the sandbox's), so that the purge's
entries of earlier runs do not mix in.

Run with `make bench`, or in the `make -s env` environment: `python benchmarks/lifecycle.py
[--users N]`.
A run that fails midway takes the tenant down as a rehearsal. The machine is shared: read the
shares of the whole, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.tenant_size import must_run, pulumi, resource_types, tenant  # noqa: E402
from sandbox.__main__ import up as sandbox_up  # noqa: E402
from sandbox.layout import SandboxLayout  # noqa: E402
from sandbox.project import project_copy  # noqa: E402
from sandbox.retention_store import seed_bucket  # noqa: E402
from sandbox.slurm.users import ensure_user  # noqa: E402
from tenant_stack.annotations import REHEARSAL_ANNOTATION  # noqa: E402
from tenant_stack.platform import load_platform  # noqa: E402
from tenant_stack.spec import load_spec  # noqa: E402
from tenant_stack.spec.models import STAGES  # noqa: E402

SLUG = "lifecycle"
GOAL_SECONDS = 180
GID = 48000
# One of the nodes the sandbox runs slurmd for, and the node beside it, reserved for the tenant.
SLURMD_NODE = "gpu-14"
NODES = ["gpu-13", SLURMD_NODE]
SIGN_OFF = {
    "by": "Benchmark Operator",
    "date": "2026-12-04",
    "ticket": "BENCH-1",
    "confirmation": {"kind": "escalation", "by": "Benchmark Lead"},
}
# Past every retention date of the platform's policy (years, at most).
PURGE_AS_OF = "2100-01-01"


def run_a_job(user: dict[str, Any]) -> None:
    """A short job of `user`'s on the tenant's partition, submitted as root for them (sbatch
    --uid), waited for until accounting records it done. The user is known to this host's NSS
    since before the onboarding (`main`)."""
    submitted = subprocess.run(
        ["sbatch", "--parsable", "--export=NONE", f"--uid={user['username']}", f"--gid={SLUG}",
         f"--account={user['team']}", f"--partition={SLUG}", f"--nodelist={SLURMD_NODE}",
         "--time=00:01:00", "--chdir=/tmp", "--output=/dev/null", "--wrap=true"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if submitted.returncode != 0:
        raise SystemExit(f"sbatch as {user['username']} failed: {submitted.stderr.strip()}")
    job = submitted.stdout.strip().split(";", 1)[0]
    deadline = time.monotonic() + 120
    while True:
        state = subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", job, "-o", "State"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        if state == "COMPLETED":
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job} of {user['username']} is {state or 'not in sacct'}")
        time.sleep(0.5)


def take_down(project: Path, env: dict[str, str], spec_file: Path) -> None:
    """What is left after a failure, taken down as a rehearsal: the operator's annotation on the
    namespace first, which is what lets a spec turn `lifecycle.rehearsal` on."""
    subprocess.run(
        ["kubectl", "annotate", "--overwrite", "namespace", SLUG, f"{REHEARSAL_ANNOTATION}=true"],
        capture_output=True,
        check=False,
    )
    spec = yaml.safe_load(spec_file.read_text())
    spec["lifecycle"].update(stage="active", rehearsal=True)
    spec["lifecycle"].pop("sign_off", None)
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    for args in (("up", "--yes", "--skip-preview"), ("destroy", "--yes", "--skip-preview")):
        subprocess.run(
            ["pulumi", *args, "--non-interactive", "--stack", SLUG],
            cwd=project,
            env=env,
            capture_output=True,
            check=False,
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=3, help="the tenant's users (default 3)")
    args = parser.parse_args(argv)
    os.environ["GPU_TENANTS_SANDBOX"] = "test"
    sandbox = SandboxLayout.from_environment()
    sandbox_up(sandbox)
    os.environ.update(sandbox.environment())
    ledger = f"ledger-{uuid.uuid4().hex[:12]}"
    seed_bucket(sandbox.retention_store, sandbox.ports.retention_store, ledger, object_lock=True)
    work = Path(tempfile.mkdtemp(prefix="bench-lifecycle-"))
    project = project_copy(work / "project")
    for example in (project / "tenants").glob("*.yaml"):
        example.unlink()
    spec = tenant(args.users, SLUG)
    # Names and numbers of its own: tenant_size's tenant of 3 leaves its users' tombstones.
    spec["identity"].update(gid=GID, admins=["lc000"], admins_gid=GID + 1)
    for n, user in enumerate(spec["users"]):
        user.update(username=f"lc{n:03d}", uid=GID - 1000 + n, email=f"lc{n:03d}@{SLUG}.example")
    # Reserved on the sandbox's slurmd node, where its one job runs: an archive of a tenant
    # that never ran a job is refused (an empty billing export).
    spec["contract"].update(partition_type="reserved", gpus=8 * len(NODES))
    spec["reservation"]["nodes"] = NODES
    spec["lifecycle"].update(stage="active", rehearsal=False, drain_mode="hard", drain_timeout="1m")
    spec_file = project / "tenants" / f"{SLUG}.yaml"
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    load_spec(project / "tenants", SLUG, load_platform(project / "Pulumi.prod.yaml"))
    (work / "backend").mkdir()
    env = {
        **os.environ,
        "PULUMI_BACKEND_URL": (work / "backend").as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": "benchmark-only",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "RETENTION_S3_LEDGER_BUCKET": ledger,
    }
    tenants = str(project / "tenants")
    steps: list[tuple[str, float]] = []

    def step(name: str, *args: str, command: bool = False) -> None:
        started = time.monotonic()
        if command:
            must_run([sys.executable, "-m", "tenant_stack", *args], ROOT, env)
        elif args:
            pulumi(project, env, SLUG, *args)
        else:
            run_a_job(spec["users"][0])
        steps.append((name, time.monotonic() - started))
        print(f"[bench] {name}: {steps[-1][1]:.1f} s", file=sys.stderr)

    # Known to this host's NSS before Slurm's accounting names it, as a directory user is:
    # slurmctld takes a user's uid when the association arrives, and one it could not resolve
    # then is refused ("Invalid account") until slurmctld next reads its associations.
    first = spec["users"][0]
    ensure_user(first["username"], first["uid"], GID, SLUG)
    pulumi(project, env, SLUG, "stack", "init")
    pulumi(project, env, SLUG, "config", "set", "drain_wait_seconds", "15")
    try:
        step("up (onboarding)", "up", "--yes", "--skip-preview")
        step("a job, until sacct has it")
        for stage in STAGES[1:]:
            spec["lifecycle"]["stage"] = stage
            if stage == "destroy":
                spec["lifecycle"]["sign_off"] = SIGN_OFF
            spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
            step(f"up at stage {stage}", "up", "--yes", "--skip-preview")
        step("destroy --exclude-protected", "destroy", "--yes", "--skip-preview",
             "--exclude-protected")  # fmt: skip
        step("verify-offboarded", "verify-offboarded", SLUG, "--notify-customer",
             "--tenants", tenants, "--project", str(project), command=True)  # fmt: skip
        step("retention run", "retention", "run", "--now", PURGE_AS_OF, "--confirm-ahead",
             SLUG, "--project", str(project), command=True)  # fmt: skip
        # The components hold nothing of their own: what counts is what is left under them.
        types = resource_types(project, env, SLUG)
        left = [kind for kind in types if not kind.startswith("gpu-tenants:")]
        if left:
            raise SystemExit(f"the purge left {len(left)} resources in the stack: {left}")
    except BaseException:
        take_down(project, env, spec_file)
        raise
    # Only the components and the stack itself are left, which `stack rm` still refuses.
    pulumi(project, env, SLUG, "destroy", "--yes", "--skip-preview")
    pulumi(project, env, SLUG, "stack", "rm", "--yes")

    whole = sum(seconds for _, seconds in steps)
    print(f"one tenant's life ({SLUG}, {args.users} users), each step's wall time and share of "
          "the whole:")  # fmt: skip
    for name, seconds in steps:
        print(f"  {name:<30} {seconds:7.1f} s  {seconds / whole:6.1%}")
    print(f"  {'whole':<30} {whole:7.1f} s  ({whole / GOAL_SECONDS:.2f}x the goal of 3 minutes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
