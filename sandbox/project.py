"""A copy of the project made of symlinks, with a tenants/ and stack config files of its own:
rehearse against edited specs, or on another backend, without touching the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("Pulumi.yaml", "Pulumi.prod.yaml", "__main__.py", "tenant_stack", "providers", "venv")


def project_copy(destination: Path) -> Path:
    destination.mkdir(parents=True)
    for name in SHARED:
        (destination / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "tenants", destination / "tenants")
    return destination
