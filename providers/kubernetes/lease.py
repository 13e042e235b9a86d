"""A Kubernetes Lease (coordination.k8s.io/v1) as a lock that every host reaching the cluster
sees, through kubectl: for backend writes that must go one at a time across machines (two fleet
workers adding Slurm users at once), where a file lock holds on one host only.

The Lease is taken with a merge patch that carries the resourceVersion just read, so the API
server refuses it (a conflict) when anyone wrote in between, and gives it back by clearing the
holder the same way. A holder that died holding it is taken over once its renewTime plus
leaseDurationSeconds has passed, as Kubernetes' own leader election does: `duration` must be
longer than anything done under the lock.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from providers.errors import KubernetesError
from providers.kubectl import Kubectl, kubectl_get
from providers.kubernetes.workloads import BACKEND

__all__ = ["LeaseLock"]

_POLL_SECONDS = 0.2
_CONFLICT = ("the object has been modified", "AlreadyExists", "already exists")


@dataclass(frozen=True)
class LeaseLock:
    namespace: str
    name: str
    holder: str  # who takes it: host and process
    duration: int  # seconds a holder keeps it without renewing

    @contextmanager
    def held(self, timeout: float) -> Iterator[None]:
        """The Lease, held for the block; a KubernetesError naming its holder if it could not be
        taken within `timeout` seconds."""
        self._take(timeout)
        try:
            yield
        finally:
            self._give_back()

    @property
    def _doing(self) -> str:
        return f"taking Lease {self.namespace}/{self.name} for {self.holder}"

    def _take(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            lease = self._read()
            if lease is None:
                if self._create():
                    return
            elif _free(lease.get("spec") or {}) and self._patch(lease, self._holding()):
                return
            if time.monotonic() >= deadline:
                spec = (lease or {}).get("spec") or {}
                raise KubernetesError(
                    self._doing,
                    f"held by {spec.get('holderIdentity')} (renewed {spec.get('renewTime')}, "
                    f"for {spec.get('leaseDurationSeconds')} s) for more than {timeout:g} s",
                    "wait for that write to end, or, if its host is gone, delete the Lease "
                    f"(`kubectl -n {self.namespace} delete lease {self.name}`)",
                )
            time.sleep(_POLL_SECONDS)

    def _give_back(self) -> None:
        while (lease := self._read()) and (lease.get("spec") or {}).get("holderIdentity") == (
            self.holder
        ):
            if self._patch(lease, {"holderIdentity": None}):
                return

    def _holding(self) -> dict[str, Any]:
        now = _micro_time(datetime.now(UTC))
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "acquireTime": now,
            "renewTime": now,
        }

    def _read(self) -> dict[str, Any] | None:
        """The Lease, or None when there is none."""
        return kubectl_get(
            "lease", self.name, namespace=self.namespace, doing=self._doing, backend=BACKEND
        )

    def _create(self) -> bool:
        """Makes the Lease, held by us; False if someone made it first."""
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": self._holding(),
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json") as manifest:
            json.dump(lease, manifest)
            manifest.flush()
            return self._written("create", "--filename", manifest.name)

    def _patch(self, lease: dict[str, Any], spec: dict[str, Any]) -> bool:
        """Writes `spec` into the Lease as it was read; False if it changed since."""
        version = lease["metadata"]["resourceVersion"]
        patch = json.dumps({"metadata": {"resourceVersion": version}, "spec": spec})
        return self._written("patch", "lease", self.name, "--type=merge", f"--patch={patch}")

    def _written(self, *args: str) -> bool:
        """Whether `kubectl <args>` wrote the Lease; False if it was refused as a conflict."""
        write = Kubectl(*args, namespace=self.namespace, doing=self._doing, backend=BACKEND)
        result = write.result()
        if not result.ok and any(word in result.words for word in _CONFLICT):
            return False
        write.output()  # a KubernetesError with kubectl's words when it failed otherwise
        return True


def _free(spec: dict[str, Any]) -> bool:
    """Whether nobody holds the Lease: no holder, or one that has not renewed it in time."""
    if not spec.get("holderIdentity"):
        return True
    renewed = spec.get("renewTime") or spec.get("acquireTime")
    if not renewed:
        return True
    expires = datetime.fromisoformat(renewed) + timedelta(
        seconds=int(spec.get("leaseDurationSeconds") or 0)
    )
    return datetime.now(UTC) > expires


def _micro_time(moment: datetime) -> str:
    """Kubernetes' MicroTime: RFC 3339 with microseconds, in UTC."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
