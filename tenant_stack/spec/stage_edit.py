"""Moving a tenant's spec to another offboarding stage: the edit of `lifecycle` that a stage's
pull request makes, and what that stage's `pulumi up` will do, in the offboarding runbook's words,
for the pull request's text.

The move follows `tenant_stack.lifecycle`'s rules against the spec's own stage (one stage forward,
back to any earlier one, never back from destroy, no destroy under legal hold, a sign-off for the
stages that delete); the program's preflight applies the same rules against the stage the last
`up` applied. The edit is ruamel.yaml's round trip of the file, so every comment and the layout
stay; it is written only when the lines outside the ones it changes are byte for byte the file's
own and the edited text loads as a spec (`load_spec`, both passes), at once (a temporary file
renamed over the spec), and never over a file that changed meanwhile.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Literal

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from tenant_stack.errors import Problem, SpecError
from tenant_stack.lifecycle import SIGNED_OFF, STAGES, Stage, hold_refusal, move_refusal
from tenant_stack.platform import Platform
from tenant_stack.spec.loading import load_spec
from tenant_stack.spec.models import SignOff, TenantSpec

__all__ = ["StageEdit", "StageWork", "edit_stage"]

Direction = Literal["forward", "rollback", "unchanged"]

# Each stage's step of the offboarding runbook, in its words.
RUNBOOK: dict[Stage, str] = {
    "frozen": "runbook step 1, stop new jobs",
    "drained": "runbook step 2, drain running jobs",
    "archived": "runbook step 3, archive Slurm accounting and logs",
    "snapshotted": "runbook step 4a-4c, snapshot /home and /scratch",
    "destroy": "runbook step 5, revoke Authentik access and SSH (4d-7: `pulumi destroy`)",
}


@dataclass(frozen=True)
class StageWork:
    """What one stage's part of the `up` does: entering it (forward), or leaving it (rollback)."""

    stage: Stage
    runbook: str
    does: list[str]


@dataclass
class StageEdit:
    """The outcome: written, unchanged (already at the stage) or refused (`refusal` says why,
    naming the stage and what is missing); nothing is written unless `written`."""

    slug: str
    file: Path
    before: Stage
    after: Stage
    direction: Direction
    up: list[StageWork] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    refusal: str | None = None
    written: bool = False

    def as_json(self) -> dict[str, object]:
        return {
            "slug": self.slug,
            "from": self.before,
            "to": self.after,
            "direction": self.direction,
            "file": str(self.file),
            "written": self.written,
            "refusal": self.refusal,
            "up": [{"stage": w.stage, "runbook": w.runbook, "does": w.does} for w in self.up],
            "next_steps": self.next_steps,
        }


def edit_stage(
    tenants_dir: Path,
    slug: str,
    stage: Stage,
    platform: Platform,
    *,
    sign_off_by: str | None,
    ticket: str | None,
    confirmation: dict[str, str] | None,
    today: date,
) -> StageEdit:
    """Moves `<tenants_dir>/<slug>.yaml` to `stage`, with the sign-off (`sign_off_by`,
    `ticket`, `confirmation`, dated `today`) that a stage of `SIGNED_OFF` needs. Raises
    `SpecError` when the spec does not load, or would not once edited, or the edit would touch
    other lines."""
    path = tenants_dir / f"{slug}.yaml"
    spec = load_spec(tenants_dir, slug, platform)
    # Bytes, not read_text: its newline translation would hide a layout the edit must keep.
    text = path.read_bytes().decode("utf-8")
    before = spec.lifecycle.stage
    direction: Direction = (
        "unchanged"
        if stage == before
        else "forward"
        if STAGES.index(stage) > STAGES.index(before)
        else "rollback"
    )
    edit = StageEdit(slug, path, before, stage, direction)
    if direction == "unchanged":
        return edit
    edit.refusal = _refusal(spec, stage, sign_off_by, ticket, confirmation)
    if edit.refusal is not None:
        return edit
    sign_off: dict[str, object] | None = None
    if stage in SIGNED_OFF and confirmation is not None:
        confirmed = CommentedMap(confirmation)
        confirmed.fa.set_block_style()
        sign_off = {"by": sign_off_by, "date": today, "ticket": ticket, "confirmation": confirmed}
    edited = _edited(path, text, stage, sign_off)
    signed = _check_loads(path, slug, edited, stage, platform).lifecycle.sign_off
    _replace(path, text, edited)
    edit.written = True
    edit.up = _up(spec, platform, stage, signed)
    edit.next_steps = _next_steps(spec, path, stage)
    return edit


def _refusal(
    spec: TenantSpec,
    stage: Stage,
    sign_off_by: str | None,
    ticket: str | None,
    confirmation: dict[str, str] | None,
) -> str | None:
    lifecycle = spec.lifecycle
    reason = move_refusal(lifecycle.stage, stage) or hold_refusal(stage, lifecycle.legal_hold)
    if reason is not None:
        return f"stage {stage} refused: {reason}"
    missing = [
        what
        for what, given in (
            ("the name of who signed it off (--sign-off-by)", sign_off_by),
            ("the change ticket (--ticket)", ticket),
            (
                "who confirmed for the customer (--confirmed-by-customer) or, with no customer "
                "counterparty, who gave the internal escalation sign-off (--escalation-by)",
                confirmation,
            ),
        )
        if not given
    ]
    if stage in SIGNED_OFF and missing:
        return (
            f"stage {stage} refused: it deletes, and needs a sign-off (lifecycle.sign_off: by, "
            f"date, ticket, confirmation); missing {' and '.join(missing)}"
        )
    return None


def _round_trip() -> YAML:
    yaml = YAML()  # round trip: comments, key order, flow style and quoting kept
    yaml.preserve_quotes = True
    # Never fold a long line (an SSH key) that the file holds on one.
    yaml.width = 4096
    # The layout `new` and `import` write; a spec in another is refused by the check in `_edited`.
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _edited(path: Path, text: str, stage: Stage, sign_off: dict[str, object] | None) -> str:
    """The file's text with `lifecycle.stage` set and the sign-off added after it: every line
    but the stage's (and the sign-off's, added) byte for byte the file's own, or `SpecError`."""
    yaml = _round_trip()
    try:
        document = yaml.load(text)
    except YAMLError as error:
        raise SpecError(path, [Problem("", f"ruamel.yaml cannot read it: {error}")]) from None
    lifecycle = document["lifecycle"]
    line = lifecycle.lc.key("stage")[0]
    lifecycle["stage"] = stage
    if sign_off is not None:
        block = CommentedMap(sign_off)
        block.fa.set_block_style()
        lifecycle.insert(list(lifecycle).index("stage") + 1, "sign_off", block)
    written = io.StringIO()
    yaml.dump(document, written)
    edited = written.getvalue()
    if not text.endswith("\n"):
        edited = edited.removesuffix("\n")
    old, new = text.splitlines(keepends=True), edited.splitlines(keepends=True)
    after = len(old) - line - 1
    kept = len(new) >= len(old) and new[:line] == old[:line]
    if kept and new[len(new) - after :] == old[line + 1 :]:
        return edited
    raise SpecError(
        path,
        [
            Problem(
                "lifecycle.stage",
                f"the round-trip edit would also change line {_changed(old, new, line)}, which "
                "ruamel.yaml writes otherwise (it writes mappings indented 2, list items 2 with "
                "their dash, LF line ends, as `new` and `import` do); nothing written: "
                f"set lifecycle.stage: {stage} by hand",
            )
        ],
    )


def _changed(old: list[str], new: list[str], line: int) -> int:
    """A line of the file (numbered from 1) that the edit of line `line` (from 0) changes too:
    the first before it, else the last after it."""
    for number, (was, now) in enumerate(zip(old[:line], new[:line], strict=False), 1):
        if was != now:
            return number
    same = 0
    while same < min(len(old), len(new)) and old[-1 - same] == new[-1 - same]:
        same += 1
    return len(old) - same


def _check_loads(
    path: Path, slug: str, edited: str, stage: Stage, platform: Platform
) -> TenantSpec:
    """`edited` loaded as the spec, or a `SpecError` at `path` (`load_spec` reads a directory,
    so the text is tried as `<slug>.yaml` in one of its own)."""
    with tempfile.TemporaryDirectory(prefix="gpu-tenants-stage-") as directory:
        (Path(directory) / f"{slug}.yaml").write_text(edited, encoding="utf-8")
        try:
            return load_spec(Path(directory), slug, platform)
        except SpecError as error:
            said = Problem("", f"with lifecycle.stage: {stage} it would not load; nothing written")
            raise SpecError(path, [said, *error.problems]) from None


def _replace(path: Path, text: str, edited: str) -> None:
    """Writes `edited` over `path` at once (a reader sees the old spec or the new, never a part),
    with the file's mode, unless the file no longer holds `text`."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as file:
            file.write(edited)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
        if path.read_bytes().decode("utf-8") != text:
            raise SpecError(
                path, [Problem("", "it changed while being edited; nothing written: run again")]
            )
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _up(
    spec: TenantSpec, platform: Platform, stage: Stage, sign_off: SignOff | None
) -> list[StageWork]:
    """What the `up` of the edited spec will do: enter `stage`, or leave every stage after it,
    the latest first (the runbook's "Rollback / wait, they're staying")."""
    now = STAGES.index(spec.lifecycle.stage)
    if STAGES.index(stage) > now:
        return [StageWork(stage, RUNBOOK[stage], _entering(spec, platform, stage, sign_off))]
    return [
        StageWork(left, f"the rollback of {RUNBOOK[left]}", _leaving(spec, left))
        for left in reversed(STAGES[STAGES.index(stage) + 1 : now + 1])
    ]


def _entering(
    spec: TenantSpec, platform: Platform, stage: Stage, sign_off: SignOff | None
) -> list[str]:
    lifecycle, retention, slug = spec.lifecycle, platform.retention, spec.slug
    accounts = _accounts(spec)
    if stage == "frozen":
        return [
            f"GrpJobs=0 and GrpSubmitJobs=0 on Slurm {accounts}: new submissions are "
            "rejected at submit time (AssocGrpSubmitJobsLimit); already-pending and "
            "already-running jobs are unaffected",
            f"partition {spec.partition} State=DOWN, which rejects job placement even for an "
            "account that previously had quota",
            "the output offboarding_notice, the customer's final notice: what stops, what is "
            "kept and for how long; logins still work, for copying data out",
        ]
    if stage == "drained":
        drain = (
            f"graceful drain (2a): running jobs may finish; each `up` waits for the queue a "
            "while (the stack's drain_wait_seconds), then fails listing the jobs left, to be "
            f"run again; past drain_timeout {lifecycle.drain_timeout} it says to switch "
            "lifecycle.drain_mode to hard"
            if lifecycle.drain_mode == "graceful"
            else "hard cutoff (2b): TERM to every running job (its epilog runs, often the "
            f"framework's checkpoint flush), KILL {lifecycle.drain_timeout} later"
        )
        return [
            "pending jobs cancelled (they could never start), listed in the output cancelled_jobs",
            drain,
            f"2c: the Deployments and StatefulSets of namespace {spec.namespace} scaled to zero "
            "(their replicas recorded) and its bare pods deleted; the login pod keeps running; "
            "PVCs kept (step 4)",
        ]
    if stage == "archived":
        empty = (
            "lifecycle.no_jobs: an empty jobs.csv is accepted (the tenant never ran a job)"
            if lifecycle.no_jobs
            else "an empty jobs.csv fails the `up` (3b's row-count check)"
        )
        return [
            f"3a-3b: the Slurm records of {accounts} over the tenant's whole lifetime "
            "exported (sacct): jobs.csv, one row per job, for billing; steps.csv; "
            "associations.txt",
            "3c: the slurmctld and slurmd logs",
            f"into the retention store at {slug}/slurm/ with tenant and retention-until "
            f"metadata: accounting kept {retention.accounting_days} days, logs "
            f"{retention.logs_days} days (Pulumi.prod.yaml retention)",
            empty,
            "refused while a job of the tenant is queued or running",
        ]
    if stage == "snapshotted":
        kept = max(retention.copies_days, lifecycle.retention_days)
        if spec.storage.isolation == "org":
            copies = (
                f"4a-4c: snapshot offboarding of filesystems {slug}-home and {slug}-scratch "
                f"taken, listed, uploaded to the object store {platform.weka.object_store} "
                f"(Snap-To-Object) and verified; kept {kept} days"
            )
        else:
            shared = f"{platform.weka.shared_home_filesystem} and "
            shared += platform.weka.shared_scratch_filesystem
            copies = (
                f"4a-4b: the tenant's directories /{slug} on the shared filesystems {shared} "
                f"archived into the retention store ({slug}/storage/<filesystem>.tar.gz), "
                f"each read back against its sha256; kept {kept} days"
            )
        return [
            copies,
            f"the login release scaled to zero: {spec.login.hostname} stops taking logins",
            "nothing is deleted yet: the live filesystems stay until the destroy (4e)",
        ]
    groups = ", ".join([slug, *([spec.admins_group] if spec.identity.admins else [])])
    users = ", ".join(user.username for user in spec.users)
    signed = (
        f"sign-off recorded: {sign_off.by}, {sign_off.date}, ticket {sign_off.ticket}; "
        f"{sign_off.confirmation.described}"
        if sign_off is not None
        else "no sign-off"
    )
    if lifecycle.rehearsal:
        return [
            f"a rehearsal (lifecycle.rehearsal): the users {users} are not disabled, and "
            f"`pulumi destroy --stack {slug}` deletes the tenant whole, keeping nothing",
            signed,
        ]
    return [
        f"5a-5b: users {users} disabled (is_active false, so PAM rejects login) and taken out "
        f"of groups {groups}; kept as protected tombstones ({retention.accounting_days} days), "
        "so file ownership and accounting stay attributable",
        f"5c-5d: {spec.login.hostname} has taken no login since stage snapshotted; the SSH "
        "keys Secret and the login release go with the destroy",
        signed,
    ]


def _accounts(spec: TenantSpec) -> str:
    accounts = spec.slurm_accounts
    return f"account{'s' if len(accounts) > 1 else ''} {', '.join(accounts)}"


def _leaving(spec: TenantSpec, stage: Stage) -> list[str]:
    if stage == "frozen":
        teams = ", their GrpJobs=0 lifted on the team sub-accounts" if spec.slurm.teams else ""
        return [
            f"GrpJobs back to {spec.slurm.grp_jobs} on account {spec.account}{teams}, no "
            "submit limit: the customer keeps running",
            f"partition {spec.partition} State=UP",
        ]
    if stage == "drained":
        return [
            f"the Deployments and StatefulSets of namespace {spec.namespace} scaled back to "
            "their recorded replicas",
            "jobs the drain cancelled or ended stay ended: the tenant resubmits them",
        ]
    if stage == "archived":
        return [
            "the archives stay in the retention store, declared and protected until their "
            "retention-until: an archive is a copy, nothing to undo",
        ]
    return [
        f"the login release back to replicas: {spec.login.replicas}, so "
        f"{spec.login.hostname} takes logins again",
        "the snapshots or copies stay kept; the live filesystems were never deleted",
    ]


def _next_steps(spec: TenantSpec, path: Path, stage: Stage) -> list[str]:
    slug = spec.slug
    steps = [
        f"commit {path.name} and open a pull request with the text above; `pulumi preview "
        f"--stack {slug} --diff` shows the same changes",
        f"after the merge: `gpu-tenants fleet stage {slug} --stage {stage}` (reruns the `up` "
        f"while a drain waits) or `pulumi up --stack {slug}`",
    ]
    if stage in SIGNED_OFF:
        steps.append(
            f"then `pulumi destroy --stack {slug} --exclude-protected` (steps 4d-7), and "
            f"`gpu-tenants verify-offboarded {slug}` (step 8)"
        )
    return steps
