"""Wall time of `pulumi up` from nothing and of a no-op `pulumi preview` for tenant-foo on the
sandbox, medians of several runs, next to the engine's floors measured in the same run, for this
checkout and side by side for an earlier commit (`--baseline`); then the backend calls per
resource that up, a no-op preview and a refresh of tenant-foo make.

The floors: an empty stack (the engine and the language host alone) and the plugin floor, a stack
of one Kubernetes object and one trivial dynamic resource (the engine, the language host, the
Kubernetes plugin and the dynamic-provider host starting, nothing else). `up` is compared with
three plugin floors plus the backends' own time: the sum of the durations the clients' call log
records for every backend request and command (GPU_TENANTS_CALL_LOG).

Run with `make bench` (or, in the `make -s env` environment, `python benchmarks/onboarding.py`).
It runs on the tests' sandbox (never the operator's, where `make demo` may have onboarded
tenant-foo) and throwaway file backends; every stack is destroyed at the end. All figures come
from this one run, its stacks measured in rounds (one run of each in turn), so that whatever else
the shared machine does falls on all of them alike: read the ratios, not the seconds. Previews
are timed twice: through the Automation API, as the figures have always been, and by the CLI
alone, as an operator runs it (the API's own work adds the same to both sides of a ratio).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pulumi import automation as auto

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from providers.call_log import VARIABLE, read_log  # noqa: E402
from sandbox.__main__ import up as sandbox_up  # noqa: E402
from sandbox.layout import SandboxLayout  # noqa: E402
from sandbox.project import STACK_CONFIG_DIR, project_copy  # noqa: E402

DEFAULT_BASELINE = "01e975db8924ad91307c779de15d47e851addc57"
EMPTY_PROGRAM = '"""An empty program: what the engine and language host cost on their own."""\n'
FLOOR_PROGRAM = '''"""The plugin floor: one Kubernetes object and one trivial dynamic resource."""

import pulumi_kubernetes as k8s

from floor_provider import Nothing

k8s.core.v1.ConfigMap("floor", metadata={"namespace": "default"}, data={"floor": "1"})
Nothing("nothing")
'''
FLOOR_PROVIDER = '''"""A provider doing nothing, importable so that it is pickled by reference."""

from pulumi.dynamic import CreateResult, Resource, ResourceProvider


class NothingProvider(ResourceProvider):
    def create(self, props):
        return CreateResult("nothing", props)


class Nothing(Resource, module="floor", name="Nothing"):
    def __init__(self, name):
        super().__init__(NothingProvider(), name, {"value": 1})
'''


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def runtime_project(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir()
    (directory / "Pulumi.yaml").write_text(
        f"name: {directory.name}\nruntime:\n  name: python\n  options:\n"
        f"    virtualenv: {ROOT / 'venv'}\n"
    )
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def baseline_project(worktree: Path, directory: Path) -> Path:
    """tenant-foo's project with the code of an earlier commit (its program, providers and
    specs), on this checkout's virtualenv; stack config kept apart as in sandbox/project.py."""
    directory.mkdir()
    for name in ("__main__.py", "tenant_stack", "providers", "Pulumi.prod.yaml"):
        (directory / name).symlink_to(worktree / name)
    (directory / "venv").symlink_to(ROOT / "venv")
    shutil.copytree(worktree / "tenants", directory / "tenants")
    # A rehearsal, so that destroy takes it down: `lifecycle.rehearsal` since offboarding came,
    # `storage.delete_without_snapshot` before.
    spec = directory / "tenants" / "tenant-foo.yaml"
    models = worktree / "tenant_stack" / "spec" / "models.py"
    if models.is_file() and "rehearsal" in models.read_text():
        marked = spec.read_text().replace("\nlifecycle:\n", "\nlifecycle:\n  rehearsal: true\n")
    else:
        marked = spec.read_text().replace(
            "\nstorage:\n", "\nstorage:\n  delete_without_snapshot: true\n"
        )
    spec.write_text(marked)
    settings = (worktree / "Pulumi.yaml").read_text()
    (directory / "Pulumi.yaml").write_text(
        f"{settings.rstrip()}\nstackConfigDir: {STACK_CONFIG_DIR}\n"
    )
    (directory / STACK_CONFIG_DIR).mkdir()
    return directory


@dataclass
class Figures:
    up: list[float] = field(default_factory=list)
    preview: list[float] = field(default_factory=list)
    cli_preview: list[float] = field(default_factory=list)  # `pulumi preview` as operators run it
    backend_up: list[float] = field(default_factory=list)  # the backends' own time in each up
    calls: dict[str, Counter[str]] = field(default_factory=dict)  # per phase, per backend
    resources: Counter[str] = field(default_factory=Counter)  # dynamic resources per backend


def cli_preview(stack: auto.Stack) -> None:
    """A no-op `pulumi preview` run by the CLI itself, without the Automation API's own work
    around it (its event log, its workspace commands)."""
    workspace = stack.workspace
    assert isinstance(workspace, auto.LocalWorkspace)
    subprocess.run(
        ["pulumi", "preview", "--stack", stack.name, "--expect-no-changes", "--non-interactive"],
        cwd=workspace.work_dir,
        env={**os.environ, **workspace.env_vars},
        capture_output=True,
        check=True,
    )


def measure_once(stack: auto.Stack, figures: Figures, calls: Path | None) -> None:
    """One run: up from nothing, then a no-op preview, then destroy (the first run also counts
    the backend calls of each, and of a refresh)."""
    first = not figures.up
    if calls:
        calls.write_text("")
    figures.up.append(timed(stack.up))
    if calls:
        logged = read_log(calls)
        figures.backend_up.append(sum(entry.seconds for entry in logged))
        if first:
            figures.calls["up"] = Counter(entry.backend for entry in logged)
        calls.write_text("")
    figures.preview.append(timed(lambda: stack.preview(expect_no_changes=True)))
    figures.cli_preview.append(timed(lambda: cli_preview(stack)))
    if calls and first:
        figures.calls["no-op preview"] = Counter(e.backend for e in read_log(calls))
        figures.resources = Counter(
            r["type"].split("/")[1].split(":")[0]
            for r in (stack.export_stack().deployment or {})["resources"]
            if r["type"].startswith("pulumi-python:dynamic/")
        )
        calls.write_text("")
        stack.refresh()
        figures.calls["refresh"] = Counter(e.backend for e in read_log(calls))
    stack.destroy()


def measure(stacks: dict[str, tuple[auto.Stack, Path | None]], runs: int) -> dict[str, Figures]:
    """`runs` rounds, each one run of every stack in turn: whatever else the shared machine
    does meanwhile falls on all of them alike, rather than on whichever was measured then."""
    results = {name: Figures() for name in stacks}
    for _ in range(runs):
        for name, (stack, calls) in stacks.items():
            measure_once(stack, results[name], calls)
    return results


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (default 5)")
    parser.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        help="the commit to compare with (default: the last release before the layer split)",
    )
    args = parser.parse_args(argv)

    os.environ["GPU_TENANTS_SANDBOX"] = "test"
    sandbox = SandboxLayout.from_environment()
    sandbox_up(sandbox)
    os.environ.update(sandbox.environment())
    os.environ["SANDBOX_CA_FILE"] = str(sandbox.pki.ca_cert)  # what the baseline reads
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
    worktree = work / "baseline-code"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.baseline],
        capture_output=True,
        check=True,
    )
    # Its bytecode compiled as `make setup` compiles this checkout's, so that neither side
    # compiles its modules again in every run.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(worktree / "__main__.py")]
        + [str(worktree / package) for package in ("tenant_stack", "providers")],
        check=True,
    )

    def stack(name: str, project: Path, logged: bool = False) -> auto.Stack:
        extra = {VARIABLE: str(calls)} if logged else {}
        options = auto.LocalWorkspaceOptions(env_vars={**env, **extra})
        return auto.create_stack(name, work_dir=str(project), opts=options)

    try:
        empty = stack("empty", runtime_project(work / "empty", {"__main__.py": EMPTY_PROGRAM}))
        floor_files = {"__main__.py": FLOOR_PROGRAM, "floor_provider.py": FLOOR_PROVIDER}
        floor = stack("floor", runtime_project(work / "floor", floor_files))
        current = stack(
            "tenant-foo", project_copy(work / "current", rehearsals=("tenant-foo",)), True
        )
        # Another backend folder: the baseline's tenant-foo is a stack of the same name.
        env["PULUMI_BACKEND_URL"] = (work / "baseline-backend").as_uri()
        (work / "baseline-backend").mkdir()
        earlier = stack("tenant-foo", baseline_project(worktree, work / "baseline"), True)
        results = measure(
            {
                "empty": (empty, None),
                "floor": (floor, None),
                "current": (current, calls),
                "baseline": (earlier, calls),
            },
            args.runs,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False)
    report(results, args.baseline[:7], args.runs)
    return 0


def report(results: dict[str, Figures], baseline: str, runs: int) -> None:
    floor = results["floor"]
    floor_up, floor_preview = median(floor.up), median(floor.preview)
    print(f"medians of {runs} runs, seconds")
    print(f"{'':36} {'baseline ' + baseline:>16} {'this checkout':>14}")
    columns = (results["baseline"], results["current"])

    def row(label: str, value: Callable[[Figures], float], fmt: str = "8.2f") -> None:
        print(f"{label:36} " + " ".join(f"{format(value(c), fmt):>16}" for c in columns))

    row("tenant-foo no-op preview", lambda c: median(c.preview))
    row("  / plugin floor preview", lambda c: median(c.preview) / floor_preview)
    floor_cli = median(floor.cli_preview)
    row("  the same, by the CLI alone", lambda c: median(c.cli_preview))
    row("  / plugin floor, by the CLI alone", lambda c: median(c.cli_preview) / floor_cli)
    row("tenant-foo up from nothing", lambda c: median(c.up))
    row("  backends' own time in up", lambda c: median(c.backend_up))
    row(
        "  / (3 x plugin floor up + backends)",
        lambda c: median(c.up) / (3 * floor_up + median(c.backend_up)),
    )
    print()
    print(f"{'floors':36} {'up':>16} {'no-op preview':>14} {'by the CLI':>11}")
    for name in ("empty", "floor"):
        label = "empty stack" if name == "empty" else "plugin floor (1 k8s + 1 dynamic)"
        floors = results[name]
        print(
            f"{label:36} {median(floors.up):16.2f} {median(floors.preview):14.2f} "
            f"{median(floors.cli_preview):11.2f}"
        )
    current = results["current"]
    print()
    print(
        f"{'backend calls per resource':26} {'resources':>9} "
        + " ".join(f"{phase:>14}" for phase in current.calls)
    )
    for name in sorted(current.resources):
        per = [current.calls[phase][name] / current.resources[name] for phase in current.calls]
        print(f"{name:26} {current.resources[name]:9d} " + " ".join(f"{p:14.1f}" for p in per))
    print(
        "(HTTP requests, logins included, or commands: Slurm's, and the Weka mount host's; "
        "this checkout)"
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
