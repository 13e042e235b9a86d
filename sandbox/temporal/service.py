"""The Temporal dev server as a sandbox service."""

from __future__ import annotations

from pathlib import Path

import httpx

from sandbox.service import Service, built_tool

# The namespace the dev server makes at start, and the one the fleet's workflows run in.
NAMESPACE = "default"


def temporal_address(port: int) -> str:
    """The front end's gRPC address, what clients and workers connect to (TEMPORAL_ADDRESS)."""
    return f"127.0.0.1:{port}"


def temporal_service(state_dir: Path, port: int, http_port: int, metrics_port: int) -> Service:
    def ready() -> bool:
        # The namespace answers once the front end and the history behind it serve.
        url = f"http://127.0.0.1:{http_port}/api/v1/namespaces/{NAMESPACE}"
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return Service(
        name="temporal",
        argv=[
            built_tool("temporal"),
            "server",
            "start-dev",
            "--headless",
            f"--db-filename={state_dir / 'temporal.db'}",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--http-port={http_port}",
            f"--metrics-port={metrics_port}",
            "--log-level=warn",
        ],
        ports=(port, http_port, metrics_port),
        prepare=lambda: state_dir.mkdir(parents=True, exist_ok=True),
        ready=ready,
    )
