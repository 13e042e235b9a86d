"""Starts, stops and reports sandbox processes, each recorded by pid under one run directory.

A pid file holds the pid and the process's start time from /proc, so a pid that the kernel has
since given to another process is never taken for ours (and never signalled).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from providers.processes import start_time
from sandbox.service import Service

# Set in every process the supervisor starts, to its service's name: what tells the sandbox's own
# daemons from those a package's install script started (sandbox/install.sh).
SERVICE_MARK = "GPU_TENANTS_SANDBOX_SERVICE"


class SandboxError(RuntimeError):
    """A sandbox process could not be started or stopped; the message says what to do."""


@dataclass(frozen=True)
class Status:
    name: str
    pid: int | None
    ready: bool


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Supervisor:
    def __init__(self, root: Path) -> None:
        self.run_dir = root / "run"
        self.log_dir = root / "logs"

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def _pid_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.pid"

    def _fingerprint_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.fingerprint"

    def is_current(self, service: Service) -> bool:
        """Whether the running process was started from what `service` describes now."""
        try:
            recorded = self._fingerprint_file(service.name).read_text().strip()
        except OSError:
            return False
        return recorded == service.fingerprint()

    def pid(self, name: str) -> int | None:
        """The pid of the running process recorded for `name`, or None."""
        try:
            pid_text, started = self._pid_file(name).read_text().split()
        except (OSError, ValueError):
            return None
        pid = int(pid_text)
        return pid if start_time(pid) == started else None

    def status(self, service: Service) -> Status:
        pid = self.pid(service.name)
        return Status(service.name, pid, pid is not None and service.ready())

    def start(self, service: Service) -> bool:
        """Starts `service` unless it already runs, answers and is current (`is_current`).
        Returns True if it started it."""
        if self.status(service).ready and self.is_current(service):
            return False
        if self.pid(service.name) is not None:
            # Running but not answering (a half-dead process), or made from an older definition:
            # replace it. Its state is on disk and the new one takes it over.
            self.stop(service)
        # A killed multi-threaded process shows as a zombie before its last thread lets go of
        # its sockets: give its ports a moment to free up before blaming someone else.
        deadline = time.monotonic() + 10
        while (
            busy := [p for p in service.ports if port_in_use(p)]
        ) and time.monotonic() < deadline:
            time.sleep(0.1)
        if busy:
            raise SandboxError(
                f"cannot start {service.name}: port(s) {busy} on 127.0.0.1 are taken by a process "
                "the sandbox did not start; stop it (ss -ltnp shows which) and retry"
            )
        if service.prepare is not None:
            service.prepare()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path(service.name).open("ab") as log:
            proc = subprocess.Popen(
                list(service.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **service.env, SERVICE_MARK: service.name},
                cwd=service.cwd,
                start_new_session=True,
            )
        started = start_time(proc.pid)
        self._pid_file(service.name).write_text(f"{proc.pid} {started}\n")
        self._fingerprint_file(service.name).write_text(service.fingerprint() + "\n")
        deadline = time.monotonic() + service.ready_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SandboxError(
                    f"{service.name} exited with code {proc.returncode} while starting; "
                    f"last lines of {self.log_path(service.name)}:\n{self._tail(service.name)}"
                )
            if service.ready():
                return True
            time.sleep(0.2)
        self.stop(service)
        raise SandboxError(
            f"{service.name} did not become ready within {service.ready_timeout:.0f}s; "
            f"last lines of {self.log_path(service.name)}:\n{self._tail(service.name)}"
        )

    def stop_retired(self, current: set[str]) -> list[str]:
        """Stops the processes recorded under names not in `current`: services an earlier
        version of the sandbox ran (the one slurmd that became one per node), which would hold
        ports and state the current ones need. Returns the names it stopped."""
        retired = sorted({p.stem for p in self.run_dir.glob("*.pid")} - current)
        return [name for name in retired if self._stop_process(name)]

    def stop(self, service: Service, timeout: float = 15.0) -> bool:
        """Stops `service` (its whole process group), then runs its `stopped` (also when it was
        not running: what it left may have outlived it). Returns True if it was running."""
        was_running = self._stop_process(service.name, timeout)
        if service.stopped is not None:
            service.stopped()
        if not was_running:
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(port_in_use(p) for p in service.ports):
            time.sleep(0.1)
        return True

    def _stop_process(self, name: str, timeout: float = 15.0) -> bool:
        """Stops the process recorded for `name` (its whole process group) and forgets it.
        Returns True if it was running."""
        pid = self.pid(name)
        self._pid_file(name).unlink(missing_ok=True)
        if pid is None:
            return False
        started = start_time(pid)
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and start_time(pid) == started:
            time.sleep(0.1)
        if start_time(pid) == started:
            os.killpg(pid, signal.SIGKILL)
        # Reap it if it is our child (only in tests that start and stop in one process).
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return True

    def _tail(self, name: str, lines: int = 20) -> str:
        try:
            text = self.log_path(name).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])
