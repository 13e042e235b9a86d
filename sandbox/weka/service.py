"""The Weka emulator as a sandbox service: HTTPS on Weka's port, with a sandbox CA certificate."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from sandbox.kubernetes.client import tls_context
from sandbox.pki import Pki
from sandbox.service import Service


def weka_url(port: int) -> str:
    return f"https://127.0.0.1:{port}/api/v2"


def admin_password_file(state_dir: Path) -> Path:
    return state_dir / "admin-password"


def weka_service(state_dir: Path, pki: Pki, port: int) -> Service:
    def ready() -> bool:
        try:
            reply = httpx.get(
                f"{weka_url(port)}/healthcheck", verify=tls_context(pki.ca_cert), timeout=2
            )
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    def prepare() -> None:
        pki.ensure()
        state_dir.mkdir(parents=True, exist_ok=True)

    return Service(
        name="weka-emulator",
        argv=[
            sys.executable,
            "-m",
            "sandbox.weka",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--state-dir={state_dir}",
            f"--admin-password-file={admin_password_file(state_dir)}",
            f"--tls-cert={pki.cert('weka')}",
            f"--tls-key={pki.key('weka')}",
        ],
        ports=(port,),
        cwd=Path(__file__).resolve().parents[2],
        prepare=prepare,
        ready=ready,
    )
