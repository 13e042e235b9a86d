"""Runs the Authentik emulator (sandbox.authentik) as a real process, for contract tests.

Not a conftest.py on purpose: tests import what they use from here explicitly.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP_KEY = "contract-tests-bootstrap-key-0123456789abcdefghijklmnopqrstuv"
START_TIMEOUT = 20.0


class Emulator:
    """One emulator process over a state directory that outlives restarts."""

    def __init__(
        self, workdir: Path, *, key: str | None = BOOTSTRAP_KEY, options: tuple[str, ...] = ()
    ) -> None:
        self.options = options  # more of `python -m sandbox.authentik`'s options
        self.state_dir = workdir / "state"
        self.key_file = workdir / "bootstrap-token"
        self.log = workdir / "emulator.log"
        if key is not None:
            self.key_file.write_text(key + "\n")
        self.port = 0  # the first start lets the emulator pick; restarts reuse that port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def key(self) -> str:
        return self.key_file.read_text().strip()

    def start(self) -> None:
        offset = self.log.stat().st_size if self.log.exists() else 0
        argv = [
            sys.executable,
            "-m",
            "sandbox.authentik",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--state-dir",
            str(self.state_dir),
            "--bootstrap-token-file",
            str(self.key_file),
            *self.options,
        ]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(argv, cwd=ROOT, stdout=sink, stderr=sink)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"emulator exited with {self.process.returncode}:\n{self.log_text()}")
            found = re.search(r"listening on http://[\d.]+:(\d+)", self.log_text()[offset:])
            if found and self._answers(int(found.group(1))):
                self.port = int(found.group(1))
                return
            time.sleep(0.05)
        self.process.kill()
        pytest.fail(f"emulator did not answer within {START_TIMEOUT} s:\n{self.log_text()}")

    @staticmethod
    def _answers(port: int) -> bool:
        try:
            reply = httpx.get(f"http://127.0.0.1:{port}/api/v3/root/config/", timeout=1)
        except httpx.TransportError:
            return False
        return reply.status_code == 200

    def kill(self) -> None:
        """SIGKILL: no chance to flush anything, as in a node failure."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def client(self, key: str | None = BOOTSTRAP_KEY) -> httpx.Client:
        """A client on /api/v3; key=None sends no Authorization header at all."""
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        return httpx.Client(base_url=f"{self.url}/api/v3", headers=headers, timeout=10)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """One emulator shared by a module; tests keep apart by using their own names."""
    running = Emulator(tmp_path_factory.mktemp("authentik"))
    running.start()
    yield running
    running.stop()


@pytest.fixture
def fresh_emulator(tmp_path: Path) -> Iterator[Emulator]:
    """An emulator of the test's own, for restarts and first-start behaviour."""
    running = Emulator(tmp_path)
    yield running
    running.stop()


@pytest.fixture
def admin(emulator: Emulator) -> Iterator[httpx.Client]:
    with emulator.client() as client:
        yield client
