"""Projects for the sandboxes' stacks: the checkout's program and specs linked in, and stack config
files of their own.

The checkout is production's project: a team commits `Pulumi.<stack>.yaml` there on purpose, with
its own secrets provider (a shared passphrase's salt, or a KMS key). A sandbox's stacks use this
machine's passphrase instead, so they must never read or write those files. Each project here is
a folder of symlinks to the checkout with a `Pulumi.yaml` of its own that sets `stackConfigDir`:
Pulumi keeps the sandbox's stack config files in that folder's `stacks/`, and nothing it writes
lands in the checkout (creating a `prod` stack would otherwise add a salt to the tracked
`Pulumi.prod.yaml` through its link).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
STACK_CONFIG_DIR = "stacks"
# The program, and the sample files the docs' commands name relative to the project.
_PROGRAM = ("Pulumi.prod.yaml", "__main__.py", "tenant_stack", "providers", "venv", "examples")


def _link_program(destination: Path, names: tuple[str, ...]) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for name in names:
        link = destination / name
        if link.is_symlink() and link.readlink() == ROOT / name:
            continue
        if link.is_symlink():
            link.unlink()
        link.symlink_to(ROOT / name)
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    project["stackConfigDir"] = STACK_CONFIG_DIR
    text = "# Made from the checkout's Pulumi.yaml by sandbox/project.py; do not edit.\n"
    text += yaml.safe_dump(project, sort_keys=False)
    pulumi_yaml = destination / "Pulumi.yaml"
    if not pulumi_yaml.is_file() or pulumi_yaml.read_text() != text:
        pulumi_yaml.write_text(text)
    (destination / STACK_CONFIG_DIR).mkdir(exist_ok=True)


def sandbox_project(destination: Path) -> Path:
    """The operator's sandbox project (`$GPU_TENANTS_PROJECT`): the specs are linked too, so an
    edit of `tenants/<slug>.yaml` in the checkout is what the next `pulumi preview` there sees.
    Made or brought up to date in place."""
    _link_program(destination, (*_PROGRAM, "tenants"))
    return destination


def project_copy(destination: Path, *, rehearsals: tuple[str, ...] = ()) -> Path:
    """A new project with a tenants/ of its own that a test may edit; each tenant in
    `rehearsals` may have its filesystems deleted by `destroy` without an offboarding snapshot,
    for a rehearsal that holds no data."""
    if destination.exists():
        raise FileExistsError(f"{destination} exists; a project copy starts from nothing")
    _link_program(destination, _PROGRAM)
    shutil.copytree(ROOT / "tenants", destination / "tenants")
    for slug in rehearsals:
        spec = destination / "tenants" / f"{slug}.yaml"
        marked = spec.read_text().replace("\nlifecycle:\n", "\nlifecycle:\n  rehearsal: true\n")
        spec.write_text(marked)
    return destination
