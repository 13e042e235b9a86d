# PYTHON_ARGCOMPLETE_OK
"""The operator's commands: `gpu-tenants <command> --help` (or `python -m tenant_stack`).

    handover <slug>            onboarding step 8: the connection sheet for the tenant
    verify-offboarded <slug>   offboarding step 8: is anything of the tenant left live, and is
                               everything that must be retained in the retention store?
    retention calendar|run     offboarding step 9: what every tenant stack retains until when,
                               and the purge of what has expired (for a scheduler)
    retention hold|release     a legal hold on a tenant: every retention timer paused
    retention erase <slug> <user>  a user's right to erasure, from what offboarding kept
    check                      the rules across tenants (unique users, uids, gids, nodes; pools)
    drift [STACK...]           every tenant stack's drift, per layer, resource and property
    fleet drift [STACK...]     the same drift check as a Temporal workflow, run by the workers
    fleet rollout --wave S,S.. `pulumi up` of stacks in waves, stopping at the first that fails
    fleet stage <slug> --stage S  a merged offboarding stage applied: `up`, rerun while it drains
    fleet schedule             the drift check of every tenant stack as a Temporal Schedule
    worker                     a fleet worker: serves the fleet's workflows from a task queue
    status [SLUG...]           each tenant's conditions per layer, Ready, stage and next step
    diagnose <slug>            every known failure of a tenant, with evidence, cause and fix
    import <slug> --term S:E   a tenant onboarded by hand, read from every backend and written
                               as tenants/<slug>.yaml for review (read-only on the backends)
    review --base REF          the pull-request check: rules across tenants, a preview of each
                               tenant the change touches, one Markdown comment and a JSON report

Exit status: 0 done (every check passed); 1 a check failed or a tenant's purge failed (the output
says which); 2 the command could not run (bad arguments, or the tenant's spec does not load).
`drift` and `fleet drift`: 0 clean, 1 drift found, 2 a stack could not be checked (the others
still were). `fleet rollout`: 0 every wave applied, 1 a wave failed (the rollout stopped there),
2 it could not run. `fleet stage`: 0 the stage is applied, 1 it is not (yet), 2 it could not
run. `fleet drift|rollout|stage --no-wait` and `fleet schedule`: 0 once the workflow or the
Schedule is made (its id is printed).
`worker`: 0 when stopped by SIGTERM or SIGINT, 2 when Temporal cannot be reached.
`review`: 0 the review passed, 1 it failed (a spec invalid or colliding, a preview failed).
`import`: 0 the spec is written, 1 the tenant is refused (nothing written; the output says why).
`status`: 0 every tenant Ready, 1 one is not. `diagnose`: 0 no problem found, 1 problems found.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import date, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any, NoReturn

import argcomplete

from providers.authentik.client import AuthentikClient
from providers.authentik.settings import Settings as AuthentikSettings
from providers.errors import BackendError
from providers.weka.settings import Credentials
from tenant_stack import retention_job
from tenant_stack.diagnosis.run import diagnose, read_status
from tenant_stack.diagnosis.stages import applied_stage
from tenant_stack.errors import StackError, TenantError
from tenant_stack.fleet import drift, rollout
from tenant_stack.fleet.live_numbers import handed_out, live_collisions
from tenant_stack.fleet.review import TenantPreview, review
from tenant_stack.fleet.review_report import markdown
from tenant_stack.fleet.stage import applied, check_stage
from tenant_stack.handover import connection_sheet
from tenant_stack.importing.inferred_spec import Contract
from tenant_stack.importing.run import import_tenant
from tenant_stack.offboarded import as_json, checklist, verify
from tenant_stack.platform import load_platform
from tenant_stack.render import (
    drift_progress,
    drift_text,
    preview_line,
    rollout_text,
    stage_text,
    status_text,
    table,
    wants_colour,
)
from tenant_stack.spec import load_spec
from tenant_stack.spec.fleet import check_fleet, load_fleet
from tenant_stack.spec.models import STAGES
from tenant_stack.stacks import Stacks

ROOT = Path(__file__).resolve().parents[1]
# The project whose stacks the commands work on: a sandbox's own when one is set up (its stacks'
# config files live there; a stack command run in the checkout would write them into it).
PROJECT = Path(os.environ.get("GPU_TENANTS_PROJECT") or ROOT)
# The task queue the fleet's workers serve and its workflows are started on.
TASK_QUEUE = "gpu-tenants-fleet"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-tenants",
        description="Operator commands for tenant stacks.",
        # Kept as written: the completion line is a command to copy, not to wrap.
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 all checks passed, 1 a check failed, 2 the command could not "
        "run.\n\n"
        "Completion in bash or zsh (in ~/.bashrc or ~/.zshrc to keep it):\n"
        '  eval "$(register-python-argcomplete gpu-tenants)"',
    )
    parser.add_argument("--version", action=_Versions)
    commands = parser.add_subparsers(dest="command", required=True)
    handover = commands.add_parser(
        "handover",
        help="onboarding step 8: print the tenant's connection sheet (Markdown)",
        description="Prints the connection sheet the tenant receives, from its spec alone.",
    )
    handover.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml")
    handover.add_argument("--json", action="store_true", help="print it as a JSON string")
    offboarded = commands.add_parser(
        "verify-offboarded",
        help="runbook step 8: search every backend for the tenant and list what is retained",
        description="Searches Kubernetes, Slurm, Authentik, Weka and the retention store for "
        "anything of the tenant left live, lists its archives with their retention dates, and "
        "prints the change ticket's 'offboarded' checklist in Markdown.",
    )
    offboarded.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml")
    offboarded.add_argument("--json", action="store_true", help="print the checks as JSON")
    for command in (handover, offboarded):
        command.add_argument(
            "--tenants", type=Path, default=ROOT / "tenants", help="where the specs are"
        )
    check = commands.add_parser(
        "check",
        help="the rules across tenants: unique users, uids, gids and nodes, pools not oversold",
        description="Loads every spec in tenants/ and checks the rules that need them all at "
        "once (no cluster needed): usernames, uids and gids unique across tenants (offboarded "
        "ones included), no uid equal to a gid, no node in two live tenants, the live tenants' "
        "GPUs per pool within its inventory. Each finding names both specs and field paths.",
    )
    check.add_argument("--json", action="store_true", help="print the findings as JSON")
    check.add_argument(
        "--live",
        action="store_true",
        help="also against the numbers Authentik's LDAP outpost hands out now (AUTHENTIK_URL "
        "and a read-only token in AUTHENTIK_TOKEN or AUTHENTIK_TOKEN_FILE)",
    )
    check.add_argument(
        "--uid-start", type=int, default=2000, help="the outpost's uid_start_number (2000)"
    )
    check.add_argument(
        "--gid-start", type=int, default=4000, help="the outpost's gid_start_number (4000)"
    )
    check.add_argument("--tenants", type=Path, default=ROOT / "tenants", help="where the specs are")
    _drift_parser(commands)
    _workflow_parsers(commands)
    _health_parsers(commands)
    _review_parser(commands)
    _retention_parser(commands)
    _import_parser(commands)
    return parser


class _Versions(argparse.Action):
    """--version, read only when asked: completion builds the parser on every key press."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print this command's version, the pinned Pulumi engine's and the Pulumi "
            "SDK's, and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        print(versions())
        parser.exit()


def versions() -> str:
    """The project's version as installed, the Pulumi engine's that toolchain/versions.sh pins
    (the one `make setup` builds and the stacks were tested with), and the Pulumi SDK's."""
    try:
        project = metadata.version("gpu-tenants")
    except metadata.PackageNotFoundError:
        project = "(not installed in this Python: run make setup)"
    pins = (ROOT / "toolchain" / "versions.sh").read_text()
    pinned = re.search(r"^PULUMI_VERSION=(\S+)$", pins, flags=re.MULTILINE)
    engine = pinned.group(1) if pinned else "(not pinned)"
    return "\n".join(
        (
            f"gpu-tenants {project}",
            f"Pulumi engine {engine} (pinned in toolchain/versions.sh)",
            f"Pulumi Python SDK {metadata.version('pulumi')}",
        )
    )


def _term(text: str) -> tuple[date, date]:
    start, _, end = text.partition(":")
    try:
        return date.fromisoformat(start), date.fromisoformat(end)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not START:END in ISO dates, such as 2026-01-05:2027-01-04"
        ) from None


def _import_parser(commands: Any) -> None:
    command = commands.add_parser(
        "import",
        help="a tenant onboarded by hand: read it from every backend and write its spec",
        description="Reads the tenant as the runbook built it (Reservation and nodes, namespace "
        "and its objects, Slurm account, teams, users, QoS and partition, Authentik groups and "
        "users, Weka organization or directories and quotas), refuses it in the runbook's words "
        "if it contradicts itself, and writes tenants/<slug>.yaml with a comment on every value "
        "inferred or held by no backend, once it passes the spec's and the fleet's rules. "
        "Read-only on every backend.",
        epilog="Exit status: 0 the spec is written, 1 the tenant is refused (nothing written), "
        "2 the command could not run (a backend unreachable, bad arguments).",
    )
    command.add_argument("slug", help="the tenant's slug: its namespace and Slurm account")
    command.add_argument(
        "--term",
        type=_term,
        required=True,
        help="the contract's term START:END (ISO dates): the change ticket has it, no backend",
    )
    command.add_argument("--gpu-sku", help="the contract's SKU, for a tenant without nodes")
    command.add_argument(
        "--partition-type",
        choices=("on-demand", "spot"),
        help="the contract's partition type, for a tenant without nodes",
    )
    command.add_argument(
        "--weka-org-admin", help="the tenant's Weka organization admin (org isolation)"
    )
    command.add_argument(
        "--weka-org-password-file",
        type=Path,
        help="a file holding that admin's password (never the password itself)",
    )
    command.add_argument(
        "--uid-start", type=int, default=2000, help="the outpost's uid_start_number (2000)"
    )
    command.add_argument(
        "--gid-start", type=int, default=4000, help="the outpost's gid_start_number (4000)"
    )
    command.add_argument("--tenants", type=Path, default=ROOT / "tenants", help="where to write")
    command.add_argument("--json", action="store_true", help="print the report as JSON")


def _import(args: argparse.Namespace) -> int:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    org_admin = None
    if args.weka_org_admin:
        if args.weka_org_password_file is None:
            raise TenantError("--weka-org-admin needs --weka-org-password-file")
        try:
            password = args.weka_org_password_file.read_text().strip()
        except OSError as error:
            raise TenantError(
                f"--weka-org-password-file {args.weka_org_password_file}: {error.strerror}"
            ) from None
        if not password:
            raise TenantError(f"--weka-org-password-file {args.weka_org_password_file} is empty")
        org_admin = Credentials(args.weka_org_admin, password, args.slug)
    start, end = args.term
    report = import_tenant(
        args.slug,
        args.tenants,
        platform,
        Contract(start, end, args.partition_type, args.gpu_sku),
        org_admin=org_admin,
        uid_start=args.uid_start,
        gid_start=args.gid_start,
    )
    print(json.dumps(report.as_json()) if args.json else "\n".join(report.lines()))
    return 0 if report.written else 1


def _drift_parser(commands: Any) -> None:
    drift = commands.add_parser(
        "drift",
        help="what changed behind Pulumi's back, in every tenant stack",
        description="Runs the engine's drift check (`pulumi refresh --preview-only`: each "
        "provider reads its resources live; nothing is changed and no stack lock is taken) on "
        "every tenant stack, several at a time, and reports per stack, layer, resource and "
        "property the recorded and the live value (secrets masked). An offboarded stack is "
        "checked for what it retains. A stack that cannot be checked is reported as an error "
        "and the others are still checked. Progress goes to stderr.",
        epilog="Exit status: 0 every stack clean, 1 drift found, 2 a stack could not be checked "
        "or the command could not run.",
    )
    drift.add_argument("stacks", nargs="*", help="only these stacks (default: every tenant stack)")
    drift.add_argument("--json", action="store_true", help="print the report as JSON")
    _fleet_options(drift, "stacks checked")


def _health_parsers(commands: Any) -> None:
    status = commands.add_parser(
        "status",
        help="each tenant's conditions per layer, read from the live backends",
        description="For each tenant (default: every spec in tenants/), a condition per layer "
        "(True, False or Unknown, with a reason and a message) computed from the live "
        "backends by the same checks as `diagnose`, an overall Ready, the offboarding stage "
        "and what the next stage waits for. Read-only.",
        epilog="Exit status: 0 every tenant Ready, 1 one is not, 2 the command could not run.",
    )
    status.add_argument("slugs", nargs="*", help="only these tenants")
    diagnose = commands.add_parser(
        "diagnose",
        help="every known failure of a tenant, with its evidence, cause and fix",
        description="Runs every check against the live cluster (read-only: kubectl get and "
        "auth can-i, scontrol/sacctmgr show, Authentik and Weka GETs) and prints each failure "
        "found with the evidence it read, the cause and the fix, what to fix first first. A "
        "backend that does not answer is one finding.",
        epilog="Exit status: 0 no problem found, 1 problems found, 2 the command could not run.",
    )
    diagnose.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml")
    for command in (status, diagnose):
        command.add_argument("--json", action="store_true", help="print JSON")
        command.add_argument(
            "--project",
            type=Path,
            default=PROJECT,
            help="the Pulumi project whose tenant stacks these are (default: "
            "$GPU_TENANTS_PROJECT when set, else the checkout)",
        )
        command.add_argument(
            "--tenants", type=Path, help="where the specs are (default: the project's tenants/)"
        )


def _health(args: argparse.Namespace) -> int:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    tenants = args.tenants or args.project / "tenants"
    if args.command == "diagnose":
        found = diagnose(load_spec(tenants, args.slug, platform), platform)
        if args.json:
            print(json.dumps({"tenant": args.slug, "findings": [f.as_json() for f in found]}))
        else:
            print("\n".join(str(f) for f in found) or f"{args.slug}: no problem found")
        return 1 if found else 0
    slugs = args.slugs or sorted(path.stem for path in tenants.glob("*.yaml"))
    stacks = Stacks(args.project)
    reports = []
    for slug in slugs:
        spec = load_spec(tenants, slug, platform)
        reports.append(read_status(spec, platform, _applied_stage(stacks, slug)))
    if args.json:
        print(json.dumps({"tenants": [report.as_json() for report in reports]}))
    else:
        print(status_text(reports, wants_colour(sys.stdout)))
    return 0 if all(report.ready for report in reports) else 1


def _applied_stage(stacks: Stacks, slug: str) -> str | None:
    """The stage the last complete `up` of the tenant's stack applied; None without a stack."""
    try:
        return applied_stage(stacks.resources(slug))
    except StackError as error:
        if f"no stack named '{slug}'" in str(error):
            return None
        raise


def _fleet_options(command: argparse.ArgumentParser, at_once: str) -> None:
    command.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help=f"{at_once} at once (default: the machine's cores)",
    )
    command.add_argument(
        "--project",
        type=Path,
        default=PROJECT,
        help="the Pulumi project whose tenant stacks these are (default: $GPU_TENANTS_PROJECT "
        "when set, else the checkout)",
    )


def _workflow_parsers(commands: Any) -> None:
    queue_help = f"the Temporal task queue the workers serve (default: {TASK_QUEUE})"
    fleet = commands.add_parser(
        "fleet",
        help="fleet work as Temporal workflows, run by the workers (TEMPORAL_ADDRESS)",
        description="Starts a workflow on the Temporal service TEMPORAL_ADDRESS names and follows "
        "it to its end, or prints its id (--no-wait). The run is pinned to this checkout's "
        "commit and the project's tenants/, which every worker checks before it touches a stack.",
    )
    work = fleet.add_subparsers(dest="workflow", required=True)
    drift = work.add_parser(
        "drift",
        help="every tenant stack's drift, one child workflow per stack (its id: the stack)",
        description="The `drift` command's check and report, each stack checked by whichever "
        "worker takes it; a stack another operation holds is that stack's error.",
        epilog="Exit status: 0 every stack clean, 1 drift found, 2 a stack could not be checked "
        "(the others still were) or the workflow could not run.",
    )
    drift.add_argument("stacks", nargs="*", help="only these stacks (default: every tenant stack)")
    drift.add_argument("--json", action="store_true", help="print the report as JSON")
    drift.add_argument("--no-wait", action="store_true", help="print the workflow id and return")
    drift.add_argument("--task-queue", default=TASK_QUEUE, help=queue_help)
    _fleet_options(drift, "stacks checked")
    waves = work.add_parser(
        "rollout",
        help="`pulumi up` of stacks in waves, one child workflow per stack (its id: the stack)",
        description="Updates each wave's stacks (`pulumi up`), a wave's stacks at once, and "
        "starts the next wave only when every stack of this one was updated: the first wave in "
        "which a stack fails (its `up` failed, or another operation holds it) is the last. The "
        "report says which stacks changed. A failed `up` is never retried; an `up` whose worker "
        "died is, on another worker, once the dead worker's engine is surely gone.",
        epilog="Exit status: 0 every wave applied, 1 a wave failed (the rollout stopped there), "
        "2 the rollout could not run (a stack unknown or in two waves, Temporal unreachable).",
    )
    waves.add_argument(
        "--wave",
        dest="waves",
        action="append",
        required=True,
        type=_stack_list,
        metavar="STACK,STACK...",
        help="the stacks of one wave, comma-separated; repeat it for each wave, in order",
    )
    waves.add_argument("--json", action="store_true", help="print the report as JSON")
    waves.add_argument("--no-wait", action="store_true", help="print the workflow id and return")
    waves.add_argument("--task-queue", default=TASK_QUEUE, help=queue_help)
    _fleet_options(waves, "stacks updated")
    stage = work.add_parser(
        "stage",
        help="a tenant's merged offboarding stage applied: its `up`, rerun while it drains",
        description="Runs the tenant stack's `up`, and while the drain still waits for the "
        "tenant's queue, waits and runs it again, as an operator would, in a workflow whose id "
        "is the stack's name (no other operation runs on the stack meanwhile). It never moves a "
        "stage: --stage must be what the tenant's spec says (the stage a reviewed pull request "
        "set), checked before anything runs.",
        epilog="Exit status: 0 the stage is applied, 1 it is not (an `up` failed for another "
        "reason than the drain's wait, a graceful drain past its timeout, or --rounds used up), "
        "2 it could not run (--stage not the spec's, another operation holds the stack, "
        "Temporal unreachable).",
    )
    stage.add_argument("slug", help="the tenant, as in tenants/<slug>.yaml (its stack's name)")
    stage.add_argument(
        "--stage", required=True, choices=STAGES, help="the stage the merged pull request set"
    )
    stage.add_argument(
        "--every-seconds",
        type=_positive,
        default=900,
        help="the wait between two `up`s while the drain waits (default: 900)",
    )
    stage.add_argument("--rounds", type=_positive, default=200, help="`up`s at most (default: 200)")
    stage.add_argument("--json", action="store_true", help="print the report as JSON")
    stage.add_argument("--no-wait", action="store_true", help="print the workflow id and return")
    stage.add_argument("--task-queue", default=TASK_QUEUE, help=queue_help)
    stage.add_argument(
        "--project",
        type=Path,
        default=PROJECT,
        help="the Pulumi project of the tenant's stack (default: $GPU_TENANTS_PROJECT when set, "
        "else the checkout)",
    )
    schedule = work.add_parser(
        "schedule",
        help="the drift check of every tenant stack on a Temporal Schedule (made or updated)",
        description="Makes the Schedule `gpu-tenants-drift`, or updates it: a `fleet drift` of "
        "every tenant stack each interval (Pulumi.prod.yaml `fleet.drift_every_minutes`), "
        "pinned to this checkout; a run due while the last one runs is skipped. Run it again "
        "after deploying a new commit to the workers. `temporal schedule describe "
        "--schedule-id gpu-tenants-drift` lists its runs, `temporal workflow result "
        "--workflow-id <run>` reads one's report.",
        epilog="Exit status: 0 the Schedule is made or updated, 2 it could not be.",
    )
    schedule.add_argument(
        "--every-seconds",
        type=_positive,
        help="the interval (default: the platform's, in minutes)",
    )
    schedule.add_argument("--task-queue", default=TASK_QUEUE, help=queue_help)
    _fleet_options(schedule, "stacks checked")
    worker = commands.add_parser(
        "worker",
        help="a fleet worker: runs the fleet's workflows and stack operations from a task queue",
        description="Serves the fleet's workflows and activities on the Temporal service "
        "TEMPORAL_ADDRESS names until SIGTERM or SIGINT. Its stack commands use this "
        "environment's Pulumi backend and credentials.",
        epilog="Exit status: 0 stopped by a signal, 2 Temporal could not be reached.",
    )
    worker.add_argument("--task-queue", default=TASK_QUEUE, help=queue_help)
    worker.add_argument(
        "--concurrency",
        type=_positive,
        default=os.cpu_count() or 1,
        help="stack operations at once",
    )


def _stack_list(text: str) -> list[str]:
    """One wave's stacks, or argparse's error naming the option's value."""
    stacks = [stack.strip() for stack in text.split(",")]
    if not all(stacks):
        raise argparse.ArgumentTypeError(f"{text!r} names an empty stack: STACK,STACK...")
    return stacks


def _positive(text: str) -> int:
    """A whole number above 0, or argparse's error naming the option."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return number


def _fleet(args: argparse.Namespace) -> int:
    # Imported here: the Temporal SDK takes about half a second to load, which no other command
    # should pay.
    from tenant_stack.workflows import commands

    if args.workflow == "schedule":
        minutes = load_platform(ROOT / "Pulumi.prod.yaml").fleet.drift_every_minutes
        every = timedelta(seconds=args.every_seconds or minutes * 60)
        print(commands.schedule_drift(args.project, every, args.workers, args.task_queue))
        return 0
    colour = wants_colour(sys.stdout)
    if args.workflow == "stage":
        check_stage(args.project, args.slug, args.stage, load_platform(ROOT / "Pulumi.prod.yaml"))
        every = timedelta(seconds=args.every_seconds)
        staged = commands.apply_stage(
            args.project, args.slug, args.stage, every, args.rounds, args.task_queue, args.no_wait
        )
        if staged is None:
            return 0
        rounds = staged.updates()
        print(
            json.dumps(asdict(staged))
            if args.json
            else stage_text(args.slug, args.stage, rounds, colour)
        )
        return 0 if applied(rounds) else 1
    if args.workflow == "rollout":
        _check_waves(Stacks(args.project), args.waves)
        rolled = commands.fleet_rollout(
            args.project, args.waves, args.workers, args.task_queue, args.no_wait
        )
        if rolled is None:
            return 0
        waves = rolled.updates()
        print(json.dumps(asdict(rolled)) if args.json else rollout_text(waves, colour))
        return rollout.exit_status(waves)
    stacks = args.stacks or Stacks(args.project).tenants()
    checked = commands.fleet_drift(
        args.project, stacks, args.workers, args.task_queue, args.no_wait
    )
    if checked is None:
        return 0
    drifts = checked.drifts()
    print(json.dumps(asdict(checked)) if args.json else drift_text(drifts, colour))
    return drift.exit_status(drifts)


def _check_waves(stacks: Stacks, waves: list[list[str]]) -> None:
    """A StackError naming the stack unless every stack is a tenant stack of the project, in
    one wave only: checked before anything starts."""
    known = stacks.tenants()
    seen: set[str] = set()
    for number, wave in enumerate(waves, 1):
        for stack in wave:
            if stack not in known:
                raise StackError(
                    f"--wave {number}: {stack} is not a tenant stack of {stacks.project} "
                    f"(it has: {', '.join(known) or 'none'})"
                )
            if stack in seen:
                raise StackError(f"--wave {number}: {stack} is in an earlier wave already")
            seen.add(stack)


def _worker(args: argparse.Namespace) -> int:
    from tenant_stack.workflows.commands import run_worker

    return run_worker(args.task_queue, args.concurrency)


def _exit_without_teardown(status: int) -> NoReturn:
    """Ends a process that used the Temporal SDK: its client's threads can outlive the
    interpreter's teardown and abort it (SIGABRT) after the work is done
    (temporalio/sdk-python#300), so everything is flushed and the teardown skipped."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _review_parser(commands: Any) -> None:
    review = commands.add_parser(
        "review",
        help="the pull-request check: previews of the tenants a change touches, as a comment",
        description="Finds the tenant specs the change from BASE to the working tree adds, "
        "edits or deletes (every tenant when it changes the program, the providers or the "
        "platform config), checks the rules across tenants, previews each touched stack (a "
        "new tenant in a throwaway backend: review leaves no stack and no config file "
        "behind), and writes one Markdown summary for the pull request and a JSON report. "
        "Replaces and deletes of data-bearing objects are called out first.",
        epilog="Exit status: 0 the review passed, 1 it failed (an invalid or colliding spec, "
        "a deleted spec whose stack exists, a failed preview), 2 it could not run.",
    )
    review.add_argument("--base", required=True, help="the git ref the change is compared with")
    review.add_argument(
        "--markdown", type=Path, help="write the comment here (default: print it to stdout)"
    )
    review.add_argument("--json-file", type=Path, help="write the JSON report here")
    review.add_argument("--json", action="store_true", help="print the JSON report to stdout")
    _fleet_options(review, "previews run")


def _review(args: argparse.Namespace) -> int:
    colour = wants_colour(sys.stderr)

    def progress(preview: TenantPreview) -> None:
        print(f"{preview.slug}: {preview_line(preview, colour)}", file=sys.stderr, flush=True)

    result = review(args.project, args.base, args.workers, progress)
    comment = markdown(result)
    if args.markdown:
        args.markdown.write_text(comment)
    report = json.dumps(result.as_json(), indent=2)
    if args.json_file:
        args.json_file.write_text(report + "\n")
    if args.json:
        print(report)
    elif not args.markdown:
        print(comment, end="")
    return 0 if result.passed else 1


def _drift(args: argparse.Namespace) -> int:
    stacks = Stacks(args.project)
    names = args.stacks or stacks.tenants()
    colour = wants_colour(sys.stderr)
    finished = 0

    def progress(stack: drift.StackDrift) -> None:
        nonlocal finished
        finished += 1
        print(drift_progress(stack, finished, len(names), colour), file=sys.stderr, flush=True)

    report = drift.check_fleet(stacks, names, args.workers, progress)
    if args.json:
        print(json.dumps({"stacks": [stack.as_json() for stack in report]}))
    else:
        print(drift_text(report, wants_colour(sys.stdout)))
    return drift.exit_status(report)


def _check(args: argparse.Namespace) -> int:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    specs, broken = load_fleet(args.tenants, platform)
    collisions = check_fleet(specs, platform)
    if args.live:
        with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
            held = handed_out(directory.users(), directory.groups(), args.uid_start, args.gid_start)
        collisions += live_collisions(specs, held)
    if args.json:
        print(
            json.dumps(
                {
                    "specs": sorted(path.name for path in specs),
                    "invalid": {path.name: str(error) for path, error in broken.items()},
                    "collisions": [c.as_json() for c in collisions],
                }
            )
        )
    else:
        for error in broken.values():
            print(error)
        for collision in collisions:
            print(collision)
        if not broken and not collisions:
            print(f"{len(specs)} specs, no collision")
    return 1 if broken or collisions else 0


def _retention_parser(commands: Any) -> None:
    retention = commands.add_parser(
        "retention",
        help="runbook step 9: the retention calendar, the purge, legal holds",
        description="What offboarding keeps is deleted through the engine once its retention "
        "date has passed (Pulumi.prod.yaml `retention`), unless the tenant is under legal hold. "
        "Every action is recorded in the tenant's ledger in the retention store.",
    )
    actions = retention.add_subparsers(dest="action", required=True)
    calendar = actions.add_parser(
        "calendar", help="list every retained resource of every tenant stack, soonest first"
    )
    purge = actions.add_parser(
        "run",
        help="delete what has expired (a scheduler runs this daily)",
        description="For every tenant stack: skips it while under legal hold; else deletes "
        "each expired resource with `pulumi destroy --target <urn> --ignore-protect`, the "
        "users' Authentik tombstones last, once no accounting is left. Safe to rerun.",
    )
    purge.add_argument("--dry-run", action="store_true", help="say what would be deleted, only")
    hold = actions.add_parser("hold", help="put a tenant under legal hold (no code change)")
    hold.add_argument("--reason", required=True, help="the matter or ticket, for the ledger")
    release = actions.add_parser("release", help="lift the legal hold `hold` set")
    erase = actions.add_parser(
        "erase",
        help="a user's right to erasure: their files out of every retained copy",
        description="For an offboarded tenant: records the request in the ledger, then runs "
        "`pulumi up` of the tenant's stack, in which each retained copy is redone without the "
        "user's files (an uploaded snapshot through a filesystem made from it) and their "
        "Authentik record keeps username and uid, name and email redacted; checks the result "
        "and marks the tenant's objects in the retention store gdpr-redacted. Safe to rerun.",
    )
    for command in (hold, release, erase):
        command.add_argument("slug", help="the tenant")
    erase.add_argument("user", help="the username, as in the tenant's spec")
    erase.add_argument("--approved-by", required=True, help="who approved the request")
    erase.add_argument("--request", required=True, help="the request's ticket or reference")
    for command in (hold, release):
        command.add_argument("--by", required=True, help="who sets or lifts it, for the ledger")
    for command in (calendar, purge):
        command.add_argument(
            "--tenant", action="append", default=[], help="only this tenant (repeatable)"
        )
    for command in (calendar, purge, hold, release, erase):
        command.add_argument(
            "--now", help="the date (YYYY-MM-DD) or time to act as of; default: now"
        )
        command.add_argument("--json", action="store_true", help="print JSON")
        command.add_argument(
            "--project",
            type=Path,
            default=PROJECT,
            help="the Pulumi project whose stacks are the tenants (its tenants/ holds the specs; "
            "default: $GPU_TENANTS_PROJECT when set, else the checkout)",
        )


def _retention(args: argparse.Namespace) -> int:
    now = retention_job.parse_now(args.now)
    if args.action in ("hold", "release"):
        retention_job.known_tenant(args.slug, args.project / "tenants", Stacks(args.project))
        if args.action == "hold":
            entry = retention_job.hold(args.slug, args.by, args.reason, now)
        else:
            entry = retention_job.release(args.slug, args.by, now)
        print(json.dumps(entry.as_json()) if args.json else f"{args.slug}: {args.action} recorded")
        return 0
    platform = load_platform(args.project / "Pulumi.prod.yaml")
    stacks = Stacks(args.project)
    if args.action == "erase":
        done = retention_job.erase(
            stacks,
            args.project / "tenants",
            platform,
            args.slug,
            args.user,
            approved_by=args.approved_by,
            request=args.request,
            now=now,
        )
        if args.json:
            print(json.dumps(done.as_json()))
        else:
            print(f"{args.slug}: {args.user} erased from {', '.join(done.copies) or 'no copy'}")
        return 0
    dry_run = args.action == "calendar" or args.dry_run
    reports = retention_job.run(
        stacks, args.project / "tenants", platform, now, dry_run=dry_run, only=args.tenant
    )
    if args.json:
        print(json.dumps({"now": now.isoformat(), "tenants": [r.as_json() for r in reports]}))
    elif args.action == "calendar":
        rows = retention_job.calendar_rows(reports)
        print(table(("TENANT", "ITEM", "CLASS", "UNTIL", "STATUS"), rows))
        for report in reports:
            if report.error or report.hold.held:
                print("\n".join(report.lines(dry_run)))
    else:
        for report in reports:
            print("\n".join(report.lines(dry_run)))
    return 1 if any(report.error for report in reports) else 0


def _tenant(args: argparse.Namespace) -> int:
    """handover and verify-offboarded: one tenant's spec, and what is made of it."""
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    spec = load_spec(args.tenants, args.slug, platform)
    if args.command == "handover":
        sheet = connection_sheet(spec, platform)
        print(json.dumps(sheet) if args.json else sheet, end="\n" if args.json else "")
        return 0
    checks = verify(spec, platform)
    print(as_json(spec, checks) if args.json else checklist(spec, checks), end="\n")
    return 0 if all(check.ok for check in checks) else 1


_COMMANDS = {
    "check": _check,
    "drift": _drift,
    "fleet": _fleet,
    "worker": _worker,
    "review": _review,
    "status": _health,
    "diagnose": _health,
    "retention": _retention,
    "import": _import,
}


def main(argv: list[str] | None = None) -> int:
    """The command line's entry point: `argv` without the program's name (default: sys.argv's)."""
    parser = _parser()
    # Under a shell's completion (_ARGCOMPLETE set) this prints the candidates and exits.
    argcomplete.autocomplete(parser)
    args = parser.parse_args(argv)
    try:
        status = _COMMANDS.get(args.command, _tenant)(args)
    except (TenantError, BackendError) as error:
        print(error, file=sys.stderr)
        status = 2
    if args.command in ("fleet", "worker"):
        _exit_without_teardown(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
