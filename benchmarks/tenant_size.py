"""How `up`, a no-op `preview` and the drift check (`preview --refresh`) of one tenant grow with
its users, on the tests' sandbox: tenants of 3, 50 and 200 users (`--users`) in 4 teams, each user
with 2 SSH keys, a home directory with its quota, and Slurm associations, brought up one after
the other on throwaway file backends.

Printed for each size, all from this one run: the wall time of each command, its time per user,
and the backend calls it made (the clients' call log, GPU_TENANTS_CALL_LOG) per backend, in all
and per user. A cost that grows faster than the users shows as a per-user figure that grows with
the size: the goal is a per-user `up` at 200 users within 1.2x that at 50. The no-op preview is
also set against the plugin floor (onboarding.py's stack of one Kubernetes object and one
trivial dynamic resource, previewed in the same run), per 100 of the tenant's resources: the goal
is within 2.5x the floor.

Run with `make bench`, or in the `make -s env` environment: `python benchmarks/tenant_size.py
[--users 3,50,200]`. Every stack is destroyed at the end. The machine is shared: read the ratios,
not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.onboarding import FLOOR_PROGRAM, FLOOR_PROVIDER, runtime_project  # noqa: E402
from providers.call_log import VARIABLE, read_log  # noqa: E402
from sandbox.__main__ import up as sandbox_up  # noqa: E402
from sandbox.generated_tenants import TEAMS, sized_tenant  # noqa: E402
from sandbox.layout import SandboxLayout  # noqa: E402
from sandbox.project import project_copy  # noqa: E402
from tenant_stack.platform import load_platform  # noqa: E402
from tenant_stack.spec import load_spec  # noqa: E402

BACKENDS = ("authentik", "slurm", "weka", "retention")
COMMANDS = {
    "up": ("up", "--yes", "--skip-preview"),
    "preview": ("preview", "--expect-no-changes"),
    "drift": ("preview", "--refresh", "--expect-no-changes"),
}


def tenant(users: int, slug: str = "") -> dict[str, Any]:
    """A tenant of `users` users (sandbox.generated_tenants) with numbers of its own (uids 40000 +
    1000 x size-index, gids 60000+), slug `size-<users>` unless given."""
    return sized_tenant(
        slug or f"size-{users}",
        users,
        short=f"s{users}",
        uid_start=40000 + 1000 * (users % 7),
        gid=60000 + 2 * users,
    )


def must_run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    """`argv`'s output; the benchmark stops with its output's end when it fails."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def pulumi(project: Path, env: dict[str, str], slug: str, *args: str) -> str:
    return must_run(["pulumi", *args, "--non-interactive", "--stack", slug], project, env)


def resource_types(project: Path, env: dict[str, str], slug: str) -> list[str]:
    """The type of each resource the stack's state holds, the stack itself and providers left
    out."""
    state = json.loads(pulumi(project, env, slug, "stack", "export"))
    kinds = (r["type"] for r in state["deployment"].get("resources") or [])
    return [kind for kind in kinds if not kind.startswith("pulumi:")]


def measured(
    project: Path, env: dict[str, str], slug: str, args: tuple[str, ...], log: Path
) -> tuple[float, Counter[str]]:
    """Wall seconds of `pulumi <args>` and the backend calls it made, per backend."""
    log.write_text("")
    started = time.monotonic()
    pulumi(project, {**env, VARIABLE: str(log)}, slug, *args)
    wall = time.monotonic() - started
    return wall, Counter(call.backend for call in read_log(log))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default=os.environ.get("BENCH_USERS", "3,50,200"))
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.users.split(",")]

    os.environ["GPU_TENANTS_SANDBOX"] = "test"
    sandbox = SandboxLayout.from_environment()
    sandbox_up(sandbox)
    os.environ.update(sandbox.environment())
    work = Path(tempfile.mkdtemp(prefix="bench-size-"))
    project = project_copy(work / "project")
    for example in (project / "tenants").glob("*.yaml"):
        example.unlink()
    platform = load_platform(project / "Pulumi.prod.yaml")
    for users in sizes:  # a generated spec's mistake, said before anything is brought up
        spec = tenant(users)
        (project / "tenants" / f"{spec['slug']}.yaml").write_text(yaml.safe_dump(spec))
        load_spec(project / "tenants", spec["slug"], platform)
    (work / "backend").mkdir()
    env = {
        **os.environ,
        "PULUMI_BACKEND_URL": (work / "backend").as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": "benchmark-only",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }
    floor = runtime_project(
        work / "floor", {"__main__.py": FLOOR_PROGRAM, "floor_provider.py": FLOOR_PROVIDER}
    )
    pulumi(floor, env, "floor", "stack", "init")
    pulumi(floor, env, "floor", *COMMANDS["up"])
    figures: dict[int, dict[str, tuple[float, Counter[str]]]] = {}
    counted: dict[int, int] = {}
    floor_previews: list[float] = []
    try:
        for users in sizes:
            slug = f"size-{users}"
            pulumi(project, env, slug, "stack", "init")
            try:
                figures[users] = {
                    name: measured(project, env, slug, command, work / f"calls-{users}-{name}.log")
                    for name, command in COMMANDS.items()
                }
                counted[users] = len(resource_types(project, env, slug))
                # The floor's preview beside each size's: what the machine gives at that moment.
                floor_previews.append(
                    measured(floor, env, "floor", COMMANDS["preview"], work / "floor.log")[0]
                )
            finally:
                pulumi(project, env, slug, "destroy", "--yes", "--skip-preview")
            print(f"[bench] {users} users done", file=sys.stderr)
    finally:
        pulumi(floor, env, "floor", "destroy", "--yes", "--skip-preview")

    print(f"one tenant of N users in {TEAMS} teams (2 SSH keys, a home and its quota each):")
    header = ("users", "command", "wall s", "s/user", *(f"{b} calls" for b in BACKENDS))
    print(" ".join(f"{h:>15}" for h in header))
    for users, by_command in figures.items():
        for name, (wall, calls) in by_command.items():
            counts = (f"{calls[b]} ({calls[b] / users:.1f}/u)" for b in BACKENDS)
            print(
                " ".join(
                    f"{v:>15}" for v in (users, name, f"{wall:.1f}", f"{wall / users:.2f}", *counts)
                )
            )
    floor_preview = statistics.median(floor_previews)
    print(f"plugin floor's no-op preview: {floor_preview:.1f} s (median of {len(floor_previews)})")
    for users, by_command in figures.items():
        per_hundred = by_command["preview"][0] / (counted[users] / 100)
        print(
            f"{users} users: {counted[users]} resources; no-op preview {per_hundred:.1f} s per 100"
            f" resources = {per_hundred / floor_preview:.2f}x the floor (goal <= 2.5)"
        )
    if len(sizes) >= 2:
        small, large = sizes[-2], sizes[-1]
        ratio = (figures[large]["up"][0] / large) / (figures[small]["up"][0] / small)
        print(f"per-user `up` at {large} users / at {small}: {ratio:.2f} (goal <= 1.2)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
