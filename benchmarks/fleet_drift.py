"""The fleet's drift check against the per-stack way, on N generated tenants brought up once on the
tests' sandbox (on-demand tenants: no reserved nodes, so N is not bounded by the sandbox's 16).

Printed, medians of --runs runs, all measured in this one run:
- the fleet: `drift` over the N stacks with workers = cores, its wall time, and its own CPU (the
  command's process alone: the threads, the JSON reading; the engines it starts are children);
- one stack: `drift` of one stack;
- the serial loop: `pulumi preview --refresh --stack S` for each stack, one after the other, and
  the CPU of one such preview;
- parallel efficiency = serial loop's wall / (fleet wall x workers), and like for like: the
  fleet's own check run one stack at a time against the fleet;
- the sandbox daemons' share of the machine's CPU during the fleet run (they share the cores);
- the same drift through Temporal (`fleet drift`, one worker process per core on the sandbox's
  dev server) against `drift` alone, both as whole commands in turn: what Temporal adds per stack.
  One machine's cores cannot show scale-out across machines; this measures the overhead only.

Run with `make bench` (BENCH_TENANTS=N, default 12; 100 took about 12 minutes to bring up here),
or in the `make -s env` environment: `python benchmarks/fleet_drift.py --tenants N`. Every stack is
destroyed at the end, unless `--keep` leaves them (as long to take down as to bring up, at 100;
`GPU_TENANTS_SANDBOX=test make sandbox-reset` clears the sandbox at once). The machine is
shared: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.__main__ import up as sandbox_up  # noqa: E402
from sandbox.layout import SandboxLayout  # noqa: E402
from sandbox.project import project_copy  # noqa: E402
from tenant_stack.fleet.drift import StackDrift, check_fleet  # noqa: E402
from tenant_stack.platform import load_platform  # noqa: E402
from tenant_stack.spec import load_spec  # noqa: E402
from tenant_stack.stacks import Stacks  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def tenant(index: int) -> dict[str, Any]:
    """An on-demand tenant with one user and numbers of its own (uids 30000+, gids 50000+)."""
    spec: dict[str, Any] = yaml.safe_load((ROOT / "tenants" / "tenant-bar.yaml").read_text())
    slug = f"bench-{index:03d}"
    user = f"bu{index:03d}"
    spec.update(slug=slug, display_name=f"Bench {index}")
    spec["contract"].update(partition_type="on-demand", gpus=1, gpu_minutes=10000)
    spec["reservation"]["nodes"] = []
    spec["identity"] = {"gid": 50000 + 2 * index, "admins": [user], "admins_gid": 50001 + 2 * index}
    spec["users"] = [{**spec["users"][0], "username": user, "uid": 30000 + index,
                      "email": f"{user}@{slug}.example"}]  # fmt: skip
    spec["slurm"]["qos"]["normal"]["gpus"] = 1
    spec["slurm"]["qos"]["interactive"]["gpus"] = 1
    spec["storage"]["isolation"] = "directory"
    spec["storage"]["pvcs"] = []
    spec["lifecycle"].update(stage="active", rehearsal=True)
    spec["network"] = {"isolation": "networkpolicy"}  # tenant-bar's partition key is its own
    spec["login"]["hostname"] = f"login.{slug}.example.internal"
    return spec


def timed(work: Callable[[], object]) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU seconds, and its children's CPU seconds, of `work`."""
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    work()
    wall = time.monotonic() - started
    return wall, _cpu(resource.RUSAGE_SELF) - own, _cpu(resource.RUSAGE_CHILDREN) - children


def _cpu(who: int) -> float:
    used = resource.getrusage(who)
    return used.ru_utime + used.ru_stime


def daemon_cpu(sandbox: SandboxLayout) -> float:
    """CPU seconds the sandbox's daemons have used so far (each from its pid file)."""
    total = 0.0
    for pid_file in sandbox.root.rglob("*.pid"):
        try:
            fields = Path(f"/proc/{int(pid_file.read_text().split()[0])}/stat").read_text()
        except (OSError, ValueError, IndexError):
            continue
        after = fields.rsplit(")", 1)[1].split()
        total += (int(after[11]) + int(after[12])) / TICKS
    return total


def run(argv: list[str], project: Path, env: dict[str, str]) -> None:
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def in_pool(project: Path, env: dict[str, str], slugs: list[str], size: int, *args: str) -> None:
    """`pulumi <args> --stack S` for every stack, `size` running at any time (a slow stack holds
    one slot, not a batch); each must succeed."""

    def one(slug: str) -> tuple[str, int]:
        argv = ["pulumi", *args, "--yes", "--skip-preview", "--non-interactive", "--stack", slug]
        done = subprocess.run(argv, cwd=project, env=env, stdout=subprocess.DEVNULL, check=False)
        return slug, done.returncode

    failed = []
    with ThreadPoolExecutor(size) as pool:
        for count, (slug, returncode) in enumerate(pool.map(one, slugs), start=1):
            if returncode != 0:
                failed.append(slug)
            if count % 10 == 0 or count == len(slugs):
                print(f"[bench] {args[0]}: {count}/{len(slugs)}", file=sys.stderr)
    if failed:
        raise SystemExit(f"`pulumi {' '.join(args)}` failed for {', '.join(failed)}")


def serial_previews(project: Path, env: dict[str, str], slugs: list[str]) -> None:
    for slug in slugs:
        run(["pulumi", "preview", "--refresh", "--non-interactive", "--stack", slug], project, env)


def command_wall(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of `python -m tenant_stack <argv>`, which must find the fleet clean."""
    started = time.monotonic()
    run([sys.executable, "-m", "tenant_stack", *argv], ROOT, env)
    return time.monotonic() - started


def through_temporal(
    project: Path, env: dict[str, str], slugs: list[str], workers: int, runs: int
) -> tuple[list[float], list[float]]:
    """Walls of `drift` alone and of `fleet drift` with `workers` worker processes, in turn."""
    queue = f"bench-{os.getpid()}"
    serving = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tenant_stack",
                "worker",
                "--task-queue",
                queue,
                "--concurrency",
                "1",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(workers)
    ]
    options = ["--workers", str(workers), "--project", str(project), *slugs]
    alone, temporal = [], []
    try:
        for worker in serving:  # each says so once it serves the queue
            assert worker.stdout is not None
            worker.stdout.readline()
        for _ in range(runs):
            alone.append(command_wall(["drift", *options], env))
            temporal.append(command_wall(["fleet", "drift", "--task-queue", queue, *options], env))
    finally:
        for worker in serving:
            worker.terminate()
            worker.wait(timeout=60)
    return alone, temporal


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=int(os.environ.get("BENCH_TENANTS", 12)))
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (default 3)")
    parser.add_argument("--keep", action="store_true", help="leave the stacks up at the end")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1

    os.environ["GPU_TENANTS_SANDBOX"] = "test"
    sandbox = SandboxLayout.from_environment()
    sandbox_up(sandbox)
    os.environ.update(sandbox.environment())
    work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    project = project_copy(work / "project")
    for example in (project / "tenants").glob("*.yaml"):
        example.unlink()
    slugs = []
    for index in range(1, args.tenants + 1):
        spec = tenant(index)
        (project / "tenants" / f"{spec['slug']}.yaml").write_text(yaml.safe_dump(spec))
        slugs.append(str(spec["slug"]))
    for slug in slugs:  # a generated spec's mistake, said before anything is brought up
        load_spec(project / "tenants", slug, load_platform(project / "Pulumi.prod.yaml"))
    (work / "backend").mkdir()
    os.environ.update(
        PULUMI_BACKEND_URL=(work / "backend").as_uri(),
        PULUMI_CONFIG_PASSPHRASE="benchmark-only",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
    )
    env = dict(os.environ)
    stacks = Stacks(project)
    print(f"[bench] bringing up {len(slugs)} tenants, {cores} at a time", file=sys.stderr)
    for slug in slugs:
        run(["pulumi", "stack", "init", slug, "--non-interactive"], project, env)
    try:
        in_pool(project, env, slugs, cores, "up")
        fleet, one, alone, serial, daemons = [], [], [], [], []
        for number in range(1, args.runs + 1):
            before = daemon_cpu(sandbox)
            report: list[StackDrift] = []

            def whole_fleet(into: list[StackDrift] = report) -> None:
                into.extend(check_fleet(stacks, slugs, cores))

            wall, cpu, _ = timed(whole_fleet)
            daemons.append((daemon_cpu(sandbox) - before) / (wall * cores))
            if any(stack.status != "clean" for stack in report):
                raise SystemExit(f"drift is not clean: {[s.as_json() for s in report]}")
            fleet.append((wall, cpu))
            one.append(timed(lambda: check_fleet(stacks, slugs[:1], 1))[0])
            alone.append(timed(lambda: check_fleet(stacks, slugs, 1))[0])
            serial.append(timed(lambda: serial_previews(project, env, slugs)))
            print(f"[bench] run {number}/{args.runs} done", file=sys.stderr)
        drift_alone, temporal = through_temporal(project, env, slugs, cores, args.runs)
    finally:
        if args.keep:
            print(
                f"[bench] the stacks are left up; their backend: {work / 'backend'}",
                file=sys.stderr,
            )
        else:
            in_pool(project, env, slugs, cores, "destroy")

    fleet_wall = statistics.median(w for w, _ in fleet)
    fleet_cpu = statistics.median(c for _, c in fleet)
    serial_wall = statistics.median(w for w, _, _ in serial)
    lone_cpu = statistics.median(c for _, _, c in serial) / len(slugs)
    one_wall = statistics.median(one)
    efficiency = serial_wall / (fleet_wall * cores)
    print(f"fleet drift, {len(slugs)} tenant stacks, {cores} workers ({cores} cores), "
          f"medians of {args.runs} runs:")  # fmt: skip
    print(f"  drift of the fleet           {fleet_wall:7.1f} s wall")
    print(f"  drift of one stack           {one_wall:7.1f} s wall "
          f"(fleet/one = {fleet_wall / one_wall:.1f}x for {len(slugs)}x the stacks)")  # fmt: skip
    print(f"  serial `preview --refresh`   {serial_wall:7.1f} s wall "
          f"(serial/fleet = {serial_wall / fleet_wall:.1f}x)")  # fmt: skip
    print(f"  parallel efficiency          {efficiency:7.2f} (target >= 0.8)")
    like = statistics.median(alone) / (fleet_wall * cores)
    print(f"  like for like                {like:7.2f} (the same check one stack at a time: "
          f"{statistics.median(alone):.1f} s)")  # fmt: skip
    print(f"  fleet command's own CPU      {fleet_cpu / len(slugs):7.3f} s per stack = "
          f"{fleet_cpu / len(slugs) / lone_cpu:.1%} of a lone `preview --refresh` "
          f"({lone_cpu:.2f} s CPU; target <= 10%)")  # fmt: skip
    print(
        f"  sandbox daemons' CPU share   {statistics.median(daemons):7.1%} of {cores} cores "
        "during the fleet run"
    )
    alone_wall, temporal_wall = statistics.median(drift_alone), statistics.median(temporal)
    print(f"through Temporal ({cores} worker processes, the sandbox's dev server), whole commands:")
    print(f"  `drift` alone                {alone_wall:7.1f} s wall")
    print(f"  `fleet drift`                {temporal_wall:7.1f} s wall "
          f"(temporal/alone = {temporal_wall / alone_wall:.2f}x)")  # fmt: skip
    print(f"  Temporal's cost per stack    {(temporal_wall - alone_wall) / len(slugs):7.2f} s "
          "(one machine: the overhead, not scale-out across machines)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
