"""`gpu-tenants smoke <slug>`: onboarding step 7 run for real. The stack's three smoke-test
scripts (the `smoke_tests` output, from the reviewed spec) are submitted as one of the tenant's
users, followed to their end and judged: 7a the partition holds the reservation's nodes and a
1-GPU job sees one GPU; 7b a two-node all-reduce ran on two of the tenant's nodes at the SKU's
bus bandwidth; 7c /scratch/<slug> is a mount, written and read back. The run is recorded in the
tenant's retention ledger, where `gpu-tenants handover` finds the last one."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import UTC, datetime

from tenant_stack.commands.options import (
    add_output_format,
    add_project,
    add_slug,
    add_tenants,
    positive,
    tenant_spec,
)
from tenant_stack.commands.parser import add_examples
from tenant_stack.commands.terminal import table

# Where the jobs' output goes when run through the login pod: a filesystem the login pod and
# the nodes both mount. On this host (`--via local`), the nodes share its /tmp.
_SHARED_OUTPUT = "/scratch/{slug}/.gpu-tenants-smoke-{stamp}"
_LOCAL_OUTPUT = "/tmp/gpu-tenants-smoke-{slug}-{stamp}"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "smoke",
        help="onboarding step 7: run the tenant's smoke tests as one of its users, and judge them",
        description="Submits the stack's smoke-test jobs (7a single-node GPU, 7b two-node "
        "all-reduce, 7c scratch write and read) with `sbatch --uid --gid` as one of the "
        "tenant's users, waits for them, and judges what they printed. Run as root (or "
        "SlurmUser) where Slurm's clients are: through the tenant's login pod (`--via "
        "login-pod`, as the runbook does), or on this host (`--via local`, the sandbox's way). "
        "The result is recorded in the tenant's retention ledger (RETENTION_S3_*), for the "
        "handover sheet.",
        epilog="Exit status: 0 every check passed, 1 a check failed (each failure names the "
        "runbook's fix), 2 the tests could not run (the spec does not load, Slurm refused a "
        "job, or the jobs did not finish within --timeout: they are cancelled).",
    )
    add_slug(command)
    command.add_argument(
        "--user", help="the tenant's user to run as (default: the first in the spec)"
    )
    command.add_argument(
        "--via",
        choices=("local", "login-pod"),
        help="where sbatch runs: this host, or the tenant's login pod through kubectl exec "
        "(default: local when SLURM_TRANSPORT is local or unset, else login-pod)",
    )
    command.add_argument(
        "--login-target",
        default="deploy/login",
        help="with --via login-pod: what to exec into in the tenant's namespace "
        "(default deploy/login)",
    )
    command.add_argument(
        "--output-dir",
        help="a new directory for the jobs' output, as the nodes see it, made by the user: it "
        "must not exist, and its parent must, writable by the user (default: "
        "/tmp/gpu-tenants-smoke-<slug>-<time> locally, /scratch/<slug>/.gpu-tenants-smoke-<time> "
        "through the login pod)",
    )
    command.add_argument(
        "--write-mib",
        type=positive,
        default=10240,
        help="how much the storage test writes and reads back, in MiB (default 10240, the "
        "runbook's 10 GiB)",
    )
    command.add_argument(
        "--timeout",
        type=positive,
        default=1800,
        help="seconds to wait for the jobs, queued and running (default 1800)",
    )
    add_output_format(command)
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants smoke tenant-foo", "step 7 as the spec's first user"),
        (
            ("gpu-tenants smoke tenant-foo --user bob --write-mib 1024 -o json"),
            "as bob, a 1 GiB storage test, for a script",
        ),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from providers.retention.ledger import Ledger
    from providers.slurm.batch import BatchJobs
    from providers.slurm.settings import Settings as SlurmSettings
    from providers.slurm.transport import BACKEND
    from tenant_stack.errors import TenantError
    from tenant_stack.smoke import record_run, run_smoke

    spec, platform = tenant_spec(args)
    user = next((u for u in spec.users if u.username == (args.user or u.username)), None)
    if user is None:
        names = ", ".join(u.username for u in spec.users)
        raise TenantError(f"--user {args.user}: not a user of {spec.slug} ({names})")
    slurm = SlurmSettings.from_environment()
    via = args.via or ("local" if slurm.transport.kind == "local" else "login-pod")
    reach = (
        slurm.transport
        if via == "local"
        else dataclasses.replace(
            slurm.transport, kind="kubectl", namespace=spec.slug, target=args.login_target
        )
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    pattern = _LOCAL_OUTPUT if via == "local" else _SHARED_OUTPUT
    output_dir = args.output_dir or pattern.format(slug=spec.slug, stamp=stamp)
    result = run_smoke(
        spec,
        platform,
        BatchJobs(reach.make(BACKEND)),
        user=user,
        output_dir=output_dir,
        write_mib=args.write_mib,
        timeout=args.timeout,
        progress=lambda line: print(f"[smoke] {line}", file=sys.stderr),
    )
    if args.json:
        print(
            json.dumps(
                {
                    "tenant": result.slug,
                    "user": result.user,
                    "output_dir": result.output_dir,
                    "passed": result.passed,
                    "checks": [
                        dataclasses.asdict(v) | {"result": v.result} for v in result.verdicts
                    ],
                },
                indent=2,
            )
        )
    else:
        rows = [(v.check, v.job, v.node, v.result, v.evidence) for v in result.verdicts]
        print(table(("CHECK", "JOB", "NODE", "RESULT", "EVIDENCE"), rows))
        for verdict in result.verdicts:
            if verdict.fix:
                print(f"\n{verdict.check}: {verdict.fix}")
        print(f"\nThe jobs' output: {result.output_dir}")
    # After the report, so that a ledger that cannot be written loses nothing the run found.
    with Ledger.open() as ledger:
        record_run(ledger, result)
    return 0 if result.passed else 1
