"""Backends started alone, with their state in a pytest tmp dir and on free loopback ports, for the
contract tests that must neither need nor touch a running sandbox: the Weka emulator as a plain
process, and the retention store (versitygw) under a Supervisor of its own.

Neither inherits the shell's RETENTION_S3_* (what `make -s env` exports names the operator's
store): an emulator gets the settings of the store it is given, or none.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from sandbox.retention_store.service import (
    LEDGER_BUCKET,
    client_environment,
    retention_store_service,
    seed_bucket,
)
from sandbox.service import Service
from sandbox.supervisor import Supervisor

ROOT = Path(__file__).resolve().parents[1]
RETENTION_PREFIX = "RETENTION_S3_"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- the retention store ---------------------------------------------------------------------


@dataclass(frozen=True)
class Gateway:
    supervisor: Supervisor
    service: Service
    state_dir: Path
    port: int

    def env(self, **overrides: str) -> dict[str, str]:
        """What `make -s env` would export for this gateway."""
        return {**client_environment(self.state_dir, self.port), **overrides}


def start_gateway(root: Path) -> Gateway:
    """versitygw over `root`/retention-store on a free port, with the bucket `retention`."""
    state_dir, port = root / "retention-store", free_port()
    service = retention_store_service(state_dir, port)
    supervisor = Supervisor(root)
    assert supervisor.start(service)
    try:
        assert seed_bucket(state_dir, port)
    except BaseException:
        supervisor.stop(service)
        raise
    return Gateway(supervisor, service, state_dir, port)


def stop_gateway(gateway: Gateway) -> None:
    gateway.supervisor.stop(gateway.service)


@contextmanager
def ledger_gateway(root: Path) -> Iterator[Gateway]:
    """A gateway (`start_gateway`) with the ledger's bucket too, made with S3 Object Lock as the
    platform makes it; stopped on leaving."""
    running = start_gateway(root)
    try:
        assert seed_bucket(running.state_dir, running.port, LEDGER_BUCKET, object_lock=True)
        yield running
    finally:
        stop_gateway(running)


# --- the Weka emulator -----------------------------------------------------------------------


@dataclass
class Emulator:
    base_url: str
    verify: ssl.SSLContext | bool
    state_dir: Path
    password_file: Path
    mount_root: Path
    log: Path
    process: subprocess.Popen[bytes]

    def mount(self, org: str, fs: str) -> Path:
        """Where filesystem `fs` of organization `org` is mounted."""
        return self.mount_root / org / fs

    @property
    def port(self) -> int:
        return int(self.base_url.split(":")[2].split("/")[0])


def start_emulator(
    workdir: Path,
    tls: tuple[Path, Path] | None = None,
    port: int | None = None,
    mount_root: Path | None = None,
    object_store: Mapping[str, str] | None = None,
    settle_seconds: float = 0.0,
) -> Emulator:
    """Without `mount_root` the emulator uses its default, state/mounts. `object_store` is the
    RETENTION_S3_* of the store its object store bucket lives in; without it, it has none."""
    port = port or free_port()
    state_dir, password_file = workdir / "state", workdir / "admin-password"
    log = workdir / "emulator.log"
    argv = [
        sys.executable,
        "-m",
        "sandbox.weka",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--state-dir",
        str(state_dir),
        "--admin-password-file",
        str(password_file),
        "--settle-seconds",
        str(settle_seconds),
    ]
    if mount_root is not None:
        argv += ["--mount-root", str(mount_root)]
    verify: ssl.SSLContext | bool = False
    scheme = "http"
    if tls is not None:
        argv += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
        verify, scheme = ssl.create_default_context(cafile=str(tls[0])), "https"
    env = {k: v for k, v in os.environ.items() if not k.startswith(RETENTION_PREFIX)}
    env.update(object_store or {})
    with log.open("ab") as sink:
        process = subprocess.Popen(argv, cwd=ROOT, stdout=sink, stderr=sink, env=env)
    emulator = Emulator(
        f"{scheme}://127.0.0.1:{port}/api/v2",
        verify,
        state_dir,
        password_file,
        mount_root or state_dir / "mounts",
        log,
        process,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"emulator exited with {process.returncode}:\n{log.read_text()}")
        try:
            reply = httpx.get(f"{emulator.base_url}/healthcheck", verify=verify, timeout=1)
            if reply.status_code == 200:
                return emulator
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"emulator did not answer within 20 s:\n{log.read_text()}")


def stop_emulator(emulator: Emulator) -> None:
    emulator.process.terminate()
    try:
        emulator.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        emulator.process.kill()
        emulator.process.wait()


def self_signed_certificate(workdir: Path) -> tuple[Path, Path]:
    """A throwaway certificate and key for 127.0.0.1, for an emulator that serves HTTPS."""
    cert, key = workdir / "cert.pem", workdir / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key
