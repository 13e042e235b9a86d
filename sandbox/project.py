"""A copy of the project made of symlinks, with a tenants/ and stack config files of its own:
rehearse against edited specs, or on another backend, without touching the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("Pulumi.yaml", "Pulumi.prod.yaml", "__main__.py", "tenant_stack", "providers", "venv")


def project_copy(destination: Path, *, rehearsals: tuple[str, ...] = ()) -> Path:
    """The copy; each tenant in `rehearsals` may have its filesystems deleted by `destroy`
    without an offboarding snapshot, for a rehearsal that holds no data."""
    destination.mkdir(parents=True)
    for name in SHARED:
        (destination / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "tenants", destination / "tenants")
    for slug in rehearsals:
        spec = destination / "tenants" / f"{slug}.yaml"
        marked = spec.read_text().replace(
            "\nstorage:\n", "\nstorage:\n  delete_without_snapshot: true\n"
        )
        spec.write_text(marked)
    return destination
