"""Wall time of `pulumi up` and of a no-op `pulumi preview` for tenant-foo on the sandbox, next to
the same for an empty stack of the same project runtime (the engine's floor), and their ratios;
then the backend calls per resource that up, a no-op preview and a refresh of tenant-foo make.

Run with `make bench` (or, in the `make -s env` environment, `python benchmarks/onboarding.py`).
It runs on the tests' sandbox (never the operator's, where `make demo` may have onboarded
tenant-foo) and a throwaway file backend; tenant-foo is destroyed at the end. All figures come
from this one run; the machine is shared, so read the ratios, not the seconds.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pulumi import automation as auto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from providers.call_log import VARIABLE  # noqa: E402
from sandbox.__main__ import up as sandbox_up  # noqa: E402
from sandbox.layout import SandboxLayout  # noqa: E402
from sandbox.project import project_copy  # noqa: E402

EMPTY_PROGRAM = '"""An empty program: what the engine and language host cost on their own."""\n'


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def empty_project(directory: Path) -> Path:
    directory.mkdir()
    (directory / "Pulumi.yaml").write_text(
        f"name: empty\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / 'venv'}\n"
    )
    (directory / "__main__.py").write_text(EMPTY_PROGRAM)
    return directory


def main() -> int:
    os.environ["GPU_TENANTS_SANDBOX"] = "test"
    sandbox = SandboxLayout.from_environment()
    sandbox_up(sandbox)
    os.environ.update(sandbox.environment())
    work = Path(tempfile.mkdtemp(prefix="bench-onboarding-"))
    backend = work / "backend"
    backend.mkdir()
    env = {
        "PULUMI_BACKEND_URL": backend.as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": "benchmark-only",
        "PULUMI_HOME": os.environ["PULUMI_HOME"],
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }
    calls = work / "calls.log"
    options = auto.LocalWorkspaceOptions(env_vars=env)
    project = project_copy(work / "project", rehearsals=("tenant-foo",))
    tenant = auto.create_stack(
        "tenant-foo",
        work_dir=str(project),
        opts=auto.LocalWorkspaceOptions(env_vars={**env, VARIABLE: str(calls)}),
    )
    empty = auto.create_stack("empty", work_dir=str(empty_project(work / "empty")), opts=options)
    try:
        rows = []
        counted: dict[str, Counter[str]] = {}
        for name, stack in (("tenant-foo", tenant), ("empty stack", empty)):
            calls.write_text("")
            up = timed(stack.up)
            after_up = _backends(calls)
            calls.write_text("")
            preview = timed(partial(stack.preview, expect_no_changes=True))
            rows.append((name, up, preview))
            if stack is tenant:
                counted = {"up": after_up, "no-op preview": _backends(calls)}
                resources = Counter(
                    r["type"].split("/")[1].split(":")[0]
                    for r in (tenant.export_stack().deployment or {})["resources"]
                    if r["type"].startswith("pulumi-python:dynamic/")
                )
                calls.write_text("")
                tenant.refresh()
                counted["refresh"] = _backends(calls)
    finally:
        tenant.destroy()
        empty.destroy()
        shutil.rmtree(work)
    (_, tenant_up, tenant_preview), (_, floor_up, floor_preview) = rows
    print(f"{'stack':14} {'up_s':>8} {'no-op preview_s':>16}")
    for name, up, preview in rows:
        print(f"{name:14} {up:8.2f} {preview:16.2f}")
    print(f"{'ratio':14} {tenant_up / floor_up:8.1f} {tenant_preview / floor_preview:16.1f}")
    print()
    print(f"{'backend':10} {'resources':>9} " + " ".join(f"{phase:>14}" for phase in counted))
    for backend in sorted(resources):
        per = [counted[phase][backend] / resources[backend] for phase in counted]
        print(f"{backend:10} {resources[backend]:9d} " + " ".join(f"{p:14.1f}" for p in per))
    print(
        "(backend calls per resource: HTTP requests, logins included, or commands: Slurm's, "
        "and the Weka mount host's)"
    )
    return 0


def _backends(calls: Path) -> Counter[str]:
    return Counter(line.split(" ", 1)[0] for line in calls.read_text().splitlines())


if __name__ == "__main__":
    sys.exit(main())
