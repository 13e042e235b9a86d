"""The pull-request check: which tenants a change touches, the rules across tenants, and a preview
of each touched stack, as one report (rendered by review_report).

A change touches the tenants whose spec it adds, edits or deletes, and every tenant when it
changes what every stack runs (the program, the providers, the platform config, the pinned
packages). A touched tenant with a stack is previewed against its stack; one without a stack yet
is previewed in a throwaway project and file backend made for that preview, so review leaves no
stack and no config file behind. A spec deleted while its stack exists fails the review: a tenant
leaves through the offboarding stages, never by losing its spec.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from tenant_stack.errors import StackError, TenantError
from tenant_stack.fleet.actions import Action, actions_of
from tenant_stack.fleet.engine_events import Violation, failure, steps, violations
from tenant_stack.fleet.parallel import fan_out
from tenant_stack.platform import load_platform
from tenant_stack.spec.fleet import Collision, find_collisions, load_fleet
from tenant_stack.spec.models import TenantSpec
from tenant_stack.stacks import Stacks

__all__ = ["Review", "TenantPreview", "Touched", "review", "touched_by"]

# What every tenant stack runs: a change here previews every tenant.
_PROGRAM = ("__main__.py", "Pulumi.yaml", "Pulumi.prod.yaml", "requirements.txt")
_PROGRAM_DIRS = ("tenant_stack/", "providers/")
# Where a throwaway project keeps its stack config files (in its own folder, removed after).
_STACK_CONFIG = "review-stacks"


@dataclass(frozen=True)
class Touched:
    specs: tuple[str, ...]  # the slugs whose spec the change adds or edits
    deleted: tuple[str, ...]  # the slugs whose spec the change deletes
    program: tuple[str, ...]  # the program files it changes (then every tenant is touched)


@dataclass(frozen=True)
class TenantPreview:
    slug: str
    stack: Literal["exists", "new"]
    status: Literal["changes", "no-changes", "failed"]
    actions: tuple[Action, ...] = ()
    violations: tuple[Violation, ...] = ()  # the policy pack's findings
    error: str = ""

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("create", "import", "update", "replace", "delete"), 0)
        for action in self.actions:
            counts[action.op] += 1
        return counts

    def as_json(self) -> dict[str, Any]:
        return {
            "tenant": self.slug,
            "stack": self.stack,
            "status": self.status,
            "counts": self.counts(),
            "actions": [a.as_json() for a in self.actions],
            "violations": [v.as_json() for v in self.violations],
            "error": self.error,
        }


@dataclass
class Review:
    base: str
    touched: Touched
    previews: list[TenantPreview] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each fails the review
    warnings: list[str] = field(default_factory=list)  # about specs the change does not touch
    collisions: list[Collision] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems and all(p.status != "failed" for p in self.previews)

    def as_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "passed": self.passed,
            "touched": {
                "specs": list(self.touched.specs),
                "deleted": list(self.touched.deleted),
                "program": list(self.touched.program),
            },
            "problems": self.problems,
            "warnings": self.warnings,
            "collisions": [c.as_json() for c in self.collisions],
            "tenants": [p.as_json() for p in self.previews],
        }


def touched_by(specs: Path, project: Path, base: str) -> Touched:
    """What the change from `base` (its merge base with HEAD) to the working tree touches, read
    in the git tree that holds the directory `specs`: its specs, and the program's code when the
    specs lie beside it, in the Pulumi project `project` or the checkout its program links to."""
    tree, folder = specs.resolve().parent, f"{specs.resolve().name}/"
    beside = tree in (project.resolve(), _program(project))
    merge_base = _git(tree, "merge-base", base, "HEAD").strip()
    listed = _git(tree, "diff", "--name-status", "--no-renames", "--relative", merge_base)
    changes = [line.split("\t", 1) for line in listed.splitlines() if "\t" in line]
    untracked = _git(tree, "ls-files", "--others", "--exclude-standard")
    changes += [["A", path] for path in untracked.splitlines()]
    edited: set[str] = set()
    deleted: set[str] = set()
    program: set[str] = set()
    for status, path in changes:
        if path.startswith(folder) and path.endswith(".yaml") and path.count("/") == 1:
            slug = path.removeprefix(folder).removesuffix(".yaml")
            (deleted if status.startswith("D") else edited).add(slug)
        elif beside and (path in _PROGRAM or path.startswith(_PROGRAM_DIRS)):
            program.add(path)
    return Touched(tuple(sorted(edited)), tuple(sorted(deleted)), tuple(sorted(program)))


def still_adopting(specs: Iterable[TenantSpec], adopted: Callable[[str], bool]) -> list[str]:
    """An imported tenant whose stack holds it already and whose spec still adopts: a later
    create would take over an object made by hand without anyone seeing it happen."""
    return [
        f"tenants/{spec.slug}.yaml: imported.adopt is still true, though stack {spec.slug} has "
        "adopted the tenant; set it false, so that no later create takes over an object made "
        "by hand unseen"
        for spec in specs
        if spec.imported is not None and spec.imported.adopt and adopted(spec.slug)
    ]


def review(
    stacks: Stacks,
    specs_dir: Path,
    base: str,
    workers: int,
    done: Callable[[TenantPreview], None] = lambda _: None,
) -> Review:
    """The review of the change from `base` to the specs in `specs_dir` (and to the program,
    when the same git tree holds it); raises TenantError only when it cannot run."""
    project = stacks.project
    touched = touched_by(specs_dir, project, base)
    result = Review(base, touched)
    platform = load_platform(project / "Pulumi.prod.yaml")
    specs, broken = load_fleet(specs_dir, platform)
    existing = set(stacks.tenants())
    every = sorted({path.stem for path in [*specs, *broken]})
    slugs = every if touched.program else list(touched.specs)
    for path, error in broken.items():
        (result.problems if path.stem in slugs else result.warnings).append(str(error))
    for slug in touched.deleted:
        if slug in existing:
            result.problems.append(
                f"tenants/{slug}.yaml is deleted but stack {slug} exists: a tenant leaves through "
                "the offboarding stages (lifecycle.stage in its spec, one pull request each), "
                "never by deleting its spec; restore the file"
            )
    for collision in find_collisions(specs, platform):
        result.collisions.append(collision)
        mine = any(collision.involves(specs_dir / f"{s}.yaml") for s in slugs)
        (result.problems if mine else result.warnings).append(str(collision))
    result.warnings += still_adopting(
        [spec for spec in specs.values() if spec.slug in existing],
        lambda slug: bool(stacks.resources(slug)),
    )
    previewable = [slug for slug in slugs if specs_dir / f"{slug}.yaml" in specs]

    pack = _program(project) / "policy"
    policy_pack = pack if (pack / "PulumiPolicy.yaml").is_file() else None

    def preview(slug: str) -> TenantPreview:
        if slug in existing:
            return _preview(stacks, slug, "exists", policy_pack)
        with _Throwaway(project, specs_dir) as (scratch, env):
            return _preview(scratch, slug, "new", policy_pack, env)

    result.previews = fan_out(previewable, preview, workers, done)
    return result


def _preview(
    stacks: Stacks,
    slug: str,
    stack: Literal["exists", "new"],
    policy_pack: Path | None,
    env: Mapping[str, str] | None = None,
) -> TenantPreview:
    try:
        if stack == "new":
            stacks.init(slug, env)
        ran = stacks.preview(slug, env, policy_pack)
        events = ran.events()
    except (StackError, ValueError) as error:
        return TenantPreview(slug, stack, "failed", error=str(error))
    found = tuple(violations(events))
    if ran.returncode != 0:
        mandatory = [str(v) for v in found if v.level == "mandatory"]
        said = "\n".join(mandatory) or failure(ran, events)
        return TenantPreview(slug, stack, "failed", violations=found, error=said)
    actions = tuple(actions_of(steps(events), f"tenants/{slug}.yaml"))
    status: Literal["changes", "no-changes"] = "changes" if actions else "no-changes"
    return TenantPreview(slug, stack, status, actions, found)


def _program(project: Path) -> Path:
    """The folder of the program `project` runs: a sandbox's project links it to a checkout."""
    return (project / "__main__.py").resolve().parent


class _Throwaway:
    """A project of links to `project` with its own stack config folder, and the environment
    of a file backend beside it: a new tenant's stack is made and previewed there, and all of
    it is removed afterwards."""

    def __init__(self, project: Path, specs: Path) -> None:
        self.project = project
        self.specs = specs
        self.directory = Path(tempfile.mkdtemp(prefix="tenant-review-"))

    def __enter__(self) -> tuple[Stacks, dict[str, str]]:
        scratch = self.directory / "project"
        scratch.mkdir()
        for entry in self.project.iterdir():
            if entry.name not in ("Pulumi.yaml", ".git", ".pulumi", _STACK_CONFIG):
                (scratch / entry.name).symlink_to(entry.absolute())
        settings = yaml.safe_load((self.project / "Pulumi.yaml").read_text())
        settings["stackConfigDir"] = _STACK_CONFIG
        (scratch / "Pulumi.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
        (self.directory / "backend").mkdir()
        env = {
            "PULUMI_BACKEND_URL": (self.directory / "backend").as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": secrets.token_urlsafe(24),
        }
        return Stacks(scratch, self.specs), env

    def __exit__(self, *_: object) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _git(project: Path, *args: str) -> str:
    try:
        result = subprocess.run(
            ["git", *args], cwd=project, capture_output=True, text=True, check=False, timeout=60
        )
    except FileNotFoundError:
        raise TenantError("git is not on PATH: review compares the change with its base") from None
    if result.returncode != 0:
        said = result.stderr.strip() or result.stdout.strip()
        raise TenantError(f"`git {' '.join(args)}` in {project} failed: {said}")
    return result.stdout
