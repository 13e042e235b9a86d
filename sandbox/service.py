"""What the supervisor needs to know about one sandbox process."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Service:
    """One long-running process of the sandbox.

    `prepare` runs before every start (create config files, keys, databases; it must be idempotent
    and must keep existing state). `ready` is polled after the start until it returns True; it must
    return quickly (wrap anything that can block in a timeout) and never raise. `ports` are the TCP
    ports the process listens on, checked free before start and after stop.
    """

    name: str
    argv: Sequence[str]
    ready: Callable[[], bool]
    ports: Sequence[int] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    prepare: Callable[[], None] | None = None
    ready_timeout: float = 60.0
