"""Counts and times backend calls, for `benchmarks/onboarding.py`: when GPU_TENANTS_CALL_LOG names
a file, every request or command a backend client makes appends one line
`<backend> <seconds> <call>` to it once answered. The providers run in a process of their own, so
a file is the simplest way to count across it."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # the Slurm transport logs through here too, and needs no HTTP client
    import httpx

VARIABLE = "GPU_TENANTS_CALL_LOG"
_STARTED = "gpu_tenants_started"


@dataclass(frozen=True)
class Call:
    backend: str
    seconds: float
    call: str


def record(backend: str, call: str, seconds: float) -> None:
    path = os.environ.get(VARIABLE)
    if path:
        # One short O_APPEND write per line: lines from concurrent threads do not interleave.
        with open(path, "a") as log:
            log.write(f"{backend} {seconds:.4f} {call}\n")


def read_log(path: Path) -> list[Call]:
    """The calls in the log; lines of a release that logged no times (`<backend> <call>`, which
    the benchmark reads when it measures an earlier commit) have a time of NaN."""
    calls = []
    for line in path.read_text().splitlines():
        backend, rest = line.split(" ", 1)
        seconds, _, call = rest.partition(" ")
        try:
            calls.append(Call(backend, float(seconds), call))
        except ValueError:
            calls.append(Call(backend, math.nan, rest))
    return calls


def httpx_hooks(backend: str) -> dict[str, list[Callable[..., None]]]:
    """Event hooks that record every request an httpx client sends (retries and logins too),
    with the time until its answer's headers."""

    def on_request(request: httpx.Request) -> None:
        request.extensions[_STARTED] = time.perf_counter()

    def on_response(response: httpx.Response) -> None:
        request = response.request
        seconds = time.perf_counter() - request.extensions.get(_STARTED, time.perf_counter())
        record(backend, f"{request.method} {request.url.path}", seconds)

    return {"request": [on_request], "response": [on_response]}


def botocore_handlers(backend: str) -> dict[str, Callable[..., None]]:
    """Handlers for a boto3 client's event system (`client.meta.events.register(event,
    handler)`) that record every HTTP request it sends (retries and the parts of a multipart
    transfer too), with the time until its answer. botocore is not imported: the handlers only
    read what its events pass them."""

    def on_request(request: Any, **_: Any) -> None:
        call = f"{request.method} {urlsplit(request.url).path}"
        request.context[_STARTED] = (time.perf_counter(), call)

    def on_response(context: MutableMapping[str, Any], **_: Any) -> None:
        started = context.pop(_STARTED, None)
        if started is not None:
            record(backend, started[1], time.perf_counter() - started[0])

    # Unqualified event names: botocore calls these for every operation of the client.
    return {"request-created": on_request, "response-received": on_response}
