"""`python -m sandbox up|down|reset|status|env` (make sandbox-up, sandbox-down, sandbox-reset,
sandbox-status, env). `reset` stops a sandbox and deletes its state: the next `up` starts afresh.

GPU_TENANTS_SANDBOX chooses the sandbox (sandbox/layout.py). With `test`, `up` and `env` use the
first tests' sandbox, the one a lone pytest process uses, and `down`, `reset` and `status` act on
every tests' sandbox this machine has, one per pytest worker: what `make test` left is one
command away."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from sandbox.layout import SandboxLayout, name_of_tests_sandbox
from sandbox.ports import TEST_SANDBOXES
from sandbox.project import sandbox_project
from sandbox.retention_store import BUCKET, LEDGER_BUCKET, STATE_BUCKET
from sandbox.service import Service
from sandbox.supervisor import SandboxError, Supervisor


def up(layout: SandboxLayout) -> int:
    started_at = time.monotonic()
    supervisor = Supervisor(layout.root)
    started = []
    services = layout.services()
    _stop_retired(supervisor, services)
    for service in services:
        if supervisor.start(service):
            started.append(service.name)
            print(f"[sandbox] started {service.name} (pid {supervisor.pid(service.name)})")
        if service.name == "kube-controller-manager" and layout.seed_kubernetes(
            always=bool(started)
        ):
            print("[sandbox] seeded nodes, namespaces, CRDs and the LDAP bind Secret")
        if service.name == "containerd" and (imported := layout.node.import_images()):
            print(f"[sandbox] imported the node's images {', '.join(imported)}")
        if service.name == "kubelet":
            layout.seed_real_node()
        if service.name == "retention-store" and layout.seed_retention_store():
            buckets = ", ".join((BUCKET, LEDGER_BUCKET, STATE_BUCKET))
            print(f"[sandbox] seeded the store's buckets {buckets}")
        if service.name == "weka-emulator" and (seeded := layout.seed_weka()):
            print(f"[sandbox] seeded the Weka shared filesystems {', '.join(seeded)} in Root")
        if service.name == "authentik-emulator" and layout.seed_authentik():
            print("[sandbox] seeded the Authentik `tenants` group")
    sandbox_project(layout.project)
    took = time.monotonic() - started_at
    if started:
        print(f'[sandbox] up in {took:.1f}s; eval "$(make -s env)" to use it')
    else:
        print(f"[sandbox] already up; nothing to do ({took:.1f}s)")
    return 0


def _stop_retired(supervisor: Supervisor, services: list[Service]) -> None:
    for name in supervisor.stop_retired({service.name for service in services}):
        print(f"[sandbox] stopped {name}, which this version of the sandbox no longer runs")


def down(layout: SandboxLayout) -> int:
    supervisor = Supervisor(layout.root)
    services = layout.services()
    _stop_retired(supervisor, services)
    for service in reversed(services):
        if supervisor.stop(service):
            print(f"[sandbox] stopped {service.name}")
    print("[sandbox] down; state kept in", layout.root)
    return 0


def reset(layout: SandboxLayout) -> int:
    """Stops the sandbox and deletes everything it keeps: what its clusters hold, its logs, its
    keys, the Slurm nodes' directory. Its users stay in /etc/passwd (ensure_user takes them as
    they are)."""
    down(layout)
    for directory in (layout.root, layout.slurm.node_dir):
        shutil.rmtree(directory, ignore_errors=True)
    print("[sandbox] reset: deleted", layout.root)
    return 0


def status(layout: SandboxLayout) -> int:
    supervisor = Supervisor(layout.root)
    healthy = True
    services = layout.services()
    width = max(len(service.name) for service in services)
    for service in services:
        state = supervisor.status(service)
        if state.ready:
            word = "ready"
        elif state.pid is not None:
            word = "running, not answering"
        else:
            word = "stopped"
        healthy &= state.ready
        pid = f"pid {state.pid}" if state.pid else ""
        print(f"{service.name:{width}} {word:24} {pid}")
    return 0 if healthy else 1


def env(layout: SandboxLayout) -> int:
    for key, value in layout.environment().items():
        print(f"export {key}='{value}'")
    return 0


COMMANDS = {"up": up, "down": down, "reset": reset, "status": status, "env": env}
# Commands that, given `test`, act on every tests' sandbox rather than the first.
_EVERY_TESTS_SANDBOX = ("down", "reset", "status")


def _layouts(command: str) -> dict[str, SandboxLayout]:
    """The sandboxes `command` acts on, by their GPU_TENANTS_SANDBOX."""
    name = os.environ.get("GPU_TENANTS_SANDBOX", "")
    first = SandboxLayout.from_environment()
    if command not in _EVERY_TESTS_SANDBOX or name != "test":
        return {name: first}
    others = [SandboxLayout.for_tests(slot) for slot in range(2, TEST_SANDBOXES + 1)]
    return {
        name: first,
        **{name_of_tests_sandbox(n): o for n, o in enumerate(others, 2) if o.root.exists()},
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("command", choices=list(COMMANDS))
    args = parser.parse_args(argv)
    result = 0
    try:
        layouts = _layouts(args.command)
        for name, layout in layouts.items():
            if len(layouts) > 1:
                print(f"[sandbox] GPU_TENANTS_SANDBOX={name}: {layout.root}")
            result = max(result, COMMANDS[args.command](layout))
    except (SandboxError, FileNotFoundError) as err:
        print(f"[sandbox] ERROR: {err}", file=sys.stderr)
        return 1
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
