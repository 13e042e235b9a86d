"""Counts backend calls, for `benchmarks/onboarding.py`: when GPU_TENANTS_CALL_LOG names a file,
every request or command a backend client makes appends one line `<backend> <call>` to it. The
providers run in their own process, so a file is the simplest way to count across it."""

from __future__ import annotations

import os
from collections.abc import Callable

import httpx

VARIABLE = "GPU_TENANTS_CALL_LOG"


def record(backend: str, call: str) -> None:
    path = os.environ.get(VARIABLE)
    if path:
        # One short O_APPEND write per line: lines from concurrent threads do not interleave.
        with open(path, "a") as log:
            log.write(f"{backend} {call}\n")


def httpx_hooks(backend: str) -> dict[str, list[Callable[[httpx.Request], None]]]:
    """Event hooks that record every request an httpx client sends (retries and logins too)."""

    def on_request(request: httpx.Request) -> None:
        record(backend, f"{request.method} {request.url.path}")

    return {"request": [on_request]}
