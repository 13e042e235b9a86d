"""Offboarding step 2's Kubernetes half: every controller the tenant runs pods by stopped
(`providers.kubernetes.workloads` says how each kind stops; what each had is recorded) and its
bare pods deleted; PVCs kept. The stack's own login release is left alone (it stops at stage
snapshotted).

A record: deleting it on a rollback (the last `up` was before stage destroy) gives every
workload back what it had (replicas, unsuspended, unparked); at stage destroy it does nothing,
as the namespace goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import LIFECYCLE, Field, Schema, SchemaProvider, nonempty_text
from providers.errors import KubernetesError
from providers.kubernetes.workloads import Workloads

__all__ = ["WorkloadsStoppedProvider"]


STOPPED = Schema(
    kind="stopped workloads",
    fields=(
        Field("namespace", nonempty_text, replaces=True),
        Field("keep_instance", nonempty_text),
        LIFECYCLE,
    ),
)


class WorkloadsStoppedProvider(SchemaProvider):
    schema = STOPPED
    error = KubernetesError

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.load(props, f"stopping the workloads of namespace {props.get('namespace')!r}")
        return CreateResult(p["namespace"], self._stop(p, {}))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        p = self.load(news, f"stopping the workloads of namespace {news.get('namespace')!r}")
        return UpdateResult(self._stop(p, olds))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        stage = (props.get(LIFECYCLE.key) or {}).get("stage")
        if stage != "destroy":
            workloads = Workloads(id_)
            workloads.scale(props.get("replicas") or {})
            # Absent from a record made before these kinds were stopped.
            workloads.suspend(props.get("suspended") or [], suspended=False)
            workloads.park(props.get("parked") or [], parked=False)

    @staticmethod
    def _stop(p: Mapping[str, Any], recorded: Mapping[str, Any]) -> dict[str, Any]:
        workloads, keep = Workloads(p["namespace"]), p["keep_instance"]
        live = workloads.replicas(keep)
        # A workload already at zero keeps the count it had when it was first stopped.
        replicas = {
            name: (recorded.get("replicas") or {}).get(name, count) for name, count in live.items()
        }
        workloads.scale({name: 0 for name, count in live.items() if count})
        running, unparked = workloads.running(keep), workloads.unparked(keep)
        workloads.suspend(running, suspended=True)
        workloads.park(unparked, parked=True)
        bare = [
            pod.name
            for pod in workloads.pods()
            if pod.bare and pod.instance != keep and pod.phase not in ("Succeeded", "Failed")
        ]
        workloads.delete_pods(bare)
        return {
            **p,
            "replicas": replicas,
            "suspended": sorted({*(recorded.get("suspended") or []), *running}),
            "parked": sorted({*(recorded.get("parked") or []), *unparked}),
            "deleted_pods": bare,
        }
