"""`python -m sandbox up|down|reset|status|env` (make sandbox-up, sandbox-down, sandbox-reset,
sandbox-status, env). `reset` stops a sandbox and deletes its state: the next `up` starts afresh."""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from sandbox.layout import SandboxLayout
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
        if service.name == "kube-controller-manager" and started:
            layout.seed_kubernetes()
            print("[sandbox] seeded nodes, namespaces, CRDs and the LDAP bind Secret")
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    parser.add_argument("command", choices=list(COMMANDS))
    args = parser.parse_args(argv)
    layout = SandboxLayout.from_environment()
    try:
        result: int = COMMANDS[args.command](layout)
    except (SandboxError, FileNotFoundError) as err:
        print(f"[sandbox] ERROR: {err}", file=sys.stderr)
        return 1
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
