"""Where the tenant partitions' include file is kept (runbook step 4d), in its two forms.

- `FileStore`: the file itself, on a host where slurmctld reads it (the sandbox, a controller
  host). Writers take a lock beside the file; slurmctld sees a write at once.
- `ConfigMapStore`: a key of the Slurm operator's ConfigMap, which the operator mounts into the
  controller pod (runbook 4d: "added via the Slurm-operator's ConfigMap"). Writers use the
  ConfigMap's resourceVersion (a stale write is refused with a conflict, then read again and
  redone), and the kubelet copies a change into the pod only after a while (about a minute), so
  `scontrol reconfigure` must wait until the pod's file shows it; reconfiguring earlier reapplies
  the old file and reports success. A ConfigMap mounted with subPath is never updated at all:
  the wait then ends in an error that says so.

Both are read and written as whole texts; what goes in the text is `partitions`' job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from providers.command import CommandResult, Transport
from providers.errors import SlurmError
from providers.files import write_atomic
from providers.kubectl import Kubectl, Options, start_read
from providers.slurm import commands, partitions
from providers.slurm.transport import BACKEND, SlurmCommandError, SlurmRunner

__all__ = ["ConfigMapStore", "FileStore", "PartitionStore", "StaleWriteError", "Version"]


@dataclass(frozen=True)
class Version:
    """The text as read, and what a write must name to replace exactly it."""

    text: str
    token: str | None = None


class StaleWriteError(Exception):
    """Someone else wrote between our read and our write: read again and redo the change."""


class PartitionStore(Protocol):
    def describe(self) -> str:
        """Where the partitions are, for messages: a path, or the ConfigMap and key."""

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Held over one read, write and reconfigure by this host's writers."""

    def read(self, doing: str) -> Version: ...

    def write(self, text: str, over: Version, doing: str) -> None:
        """Replaces exactly `over` with `text`, or raises StaleWriteError."""

    def wait_visible(self, name: str, line: str | None, doing: str) -> None:
        """Returns once slurmctld would read partition `name` as `line` (None: no such
        partition) on reconfigure, whatever other writers did to the other lines meanwhile."""


@dataclass(frozen=True)
class FileStore:
    path: Path

    def describe(self) -> str:
        return str(self.path)

    @contextmanager
    def lock(self) -> Iterator[None]:
        with partitions.locked(self.path):
            yield

    def read(self, doing: str) -> Version:
        return Version(self.path.read_text())

    def write(self, text: str, over: Version, doing: str) -> None:
        write_atomic(self.path, text)

    def wait_visible(self, name: str, line: str | None, doing: str) -> None:
        return None  # slurmctld reads this very file


@dataclass(frozen=True, kw_only=True)
class ConfigMapStore:
    """Key `key` of ConfigMap `namespace`/`name`, seen by slurmctld at `controller_path` (read
    through `controller`, the Slurm commands' transport). kubectl finds the cluster as usual."""

    namespace: str
    name: str
    key: str
    controller_path: str
    controller: Transport
    timeout: float
    sync_timeout: float
    poll_seconds: float = 2.0

    def describe(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name} (key {self.key})"

    @contextmanager
    def lock(self) -> Iterator[None]:
        yield  # writers on other hosts exist too: the resourceVersion is what serializes them

    def read(self, doing: str) -> Version:
        read = start_read("get", "configmap", self.name, "--ignore-not-found", **self._options)
        result = self._answer(read, doing)
        if not result.ok:
            raise SlurmCommandError(
                doing, result, f"{self.describe()}: check that kubectl reaches the cluster"
            )
        if not result.stdout.strip():  # kubectl's answer when there is no such ConfigMap
            raise SlurmError(
                doing,
                f"{self.describe()} was not found",
                "create it, or set SLURM_PARTITIONS_CONFIGMAP to the Slurm operator's ConfigMap",
            )
        configmap = json.loads(result.stdout)
        data = configmap.get("data") or {}
        return Version(data.get(self.key, ""), configmap["metadata"]["resourceVersion"])

    def write(self, text: str, over: Version, doing: str) -> None:
        # A patch that names the resourceVersion it read is refused with a Conflict when the
        # object has changed since: optimistic concurrency without a read-modify-write race.
        patch = {"metadata": {"resourceVersion": over.token}, "data": {self.key: text}}
        write = Kubectl(
            *("patch", "configmap", self.name, "--type=merge", "-p", json.dumps(patch)),
            **self._options,
        )
        result = self._answer(write, doing)
        if result.ok:
            return
        if "Conflict" in result.words or "has been modified" in result.words:
            raise StaleWriteError(self.describe())
        raise SlurmCommandError(doing, result, f"{self.describe()} was left as it was")

    def wait_visible(self, name: str, line: str | None, doing: str) -> None:
        # Not "the file equals what we wrote": another tenant's write may follow ours before the
        # kubelet copies either, and then our text is never seen, only a later one holding it.
        deadline = time.monotonic() + self.sync_timeout
        while True:
            seen = SlurmRunner(self.controller).result(commands.cat(self.controller_path))
            if seen.ok and partitions.shows(seen.stdout, name, line):
                return
            if time.monotonic() >= deadline:
                raise SlurmError(
                    doing,
                    f"{self.controller_path} in the controller did not show the change to "
                    f"{self.describe()} within {self.sync_timeout:g} s"
                    + ("" if seen.ok else f" ({seen.words})"),
                    "check that the Slurm operator mounts the ConfigMap there without subPath "
                    "(subPath mounts never update) and that SLURM_PARTITIONS_FILE names that "
                    "path; the ConfigMap holds the change, so run `pulumi up` again once it shows",
                )
            time.sleep(self.poll_seconds)

    @property
    def _options(self) -> Options:
        return {"namespace": self.namespace, "timeout": self.timeout, "backend": BACKEND}

    @staticmethod
    def _answer(command: Kubectl, doing: str) -> CommandResult:
        result = command.result()
        if result.returncode is None:
            raise SlurmCommandError(doing, result, "check that kubectl reaches the cluster")
        return result
