"""The Authentik emulator as a sandbox service."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from sandbox.service import Service

AUTHENTIK_PORT = 29000


def authentik_url() -> str:
    return f"http://127.0.0.1:{AUTHENTIK_PORT}"


def token_file(state_dir: Path) -> Path:
    return state_dir / "bootstrap-token"


def authentik_service(state_dir: Path) -> Service:
    def ready() -> bool:
        try:
            reply = httpx.get(f"{authentik_url()}/api/v3/root/config/", timeout=2)
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    return Service(
        name="authentik-emulator",
        argv=[
            sys.executable,
            "-m",
            "sandbox.authentik",
            "--host=127.0.0.1",
            f"--port={AUTHENTIK_PORT}",
            f"--state-dir={state_dir}",
            f"--bootstrap-token-file={token_file(state_dir)}",
        ],
        ports=(AUTHENTIK_PORT,),
        cwd=Path(__file__).resolve().parents[2],
        prepare=lambda: state_dir.mkdir(parents=True, exist_ok=True),
        ready=ready,
    )
