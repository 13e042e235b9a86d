"""What the supervisor needs to know about one sandbox process."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


def _python() -> str:
    """The interpreter the Python services run on, named the same whichever way this process was
    started (`python`, `python3` or a script's shebang all name one virtualenv's interpreter):
    a service's argv is part of its fingerprint, and another name would restart it for nothing."""
    named = Path(sys.prefix) / "bin" / "python3"
    return str(named) if named.exists() else sys.executable


PYTHON = _python()


@dataclass(frozen=True)
class Service:
    """One long-running process of the sandbox.

    `prepare` runs before every start (create config files, keys, databases; it must be idempotent
    and must keep existing state). `ready` is polled after the start until it returns True; it must
    return quickly (wrap anything that can block in a timeout) and never raise. `ports` are the TCP
    ports the process listens on, checked free before start and after stop. `revision` returns
    what else the process was made from (its rendered configuration, its source code): when that,
    the argv or the env differ from the running process's, the next `up` restarts it. `stopped`
    runs after every stop, to end what the process started and left running (containerd's
    containers, which outlive it).
    """

    name: str
    argv: Sequence[str]
    ready: Callable[[], bool]
    ports: Sequence[int] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    prepare: Callable[[], None] | None = None
    ready_timeout: float = 60.0
    revision: Callable[[], str] | None = None
    stopped: Callable[[], None] | None = None

    def fingerprint(self) -> str:
        made_of = [
            list(self.argv),
            sorted(self.env.items()),
            self.revision() if self.revision else "",
        ]
        return hashlib.sha256(json.dumps(made_of).encode()).hexdigest()


def built_tool(name: str) -> str:
    """The path of `name`, one of the binaries `make setup` builds, or what to do to get it."""
    path = shutil.which(name)
    if path is None:
        raise FileNotFoundError(
            f'{name} is not on PATH: run `make setup` and `eval "$(make -s env)"`'
        )
    return path


def source_revision(*packages: Path) -> Callable[[], str]:
    """A revision made of the Python sources under `packages`: a changed module restarts the
    service that runs it."""

    def revision() -> str:
        digest = hashlib.sha256()
        for package in packages:
            for source in sorted(package.rglob("*.py")):
                digest.update(source.read_bytes())
        return digest.hexdigest()

    return revision
