"""A tenant namespace's workloads through kubectl (`providers.kubectl`: the operator's own tool,
with KUBECONFIG as the Kubernetes provider uses it): every controller the tenant runs pods by,
and how each is stopped and started again, its bare pods, and which pods run.

Each kind stops its own way, so that a rollback can give back exactly what it had:
- Deployments, StatefulSets, and ReplicaSets no Deployment owns: scaled to zero, their replicas
  recorded;
- Jobs and CronJobs: suspended (a suspended Job's pods are deleted; a CronJob makes no Job);
- DaemonSets: parked, their pods' node selector given a label no node carries, so the
  controller deletes their pods; started again by taking the label out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.kubectl import Kubectl, kubectl_json

__all__ = ["BACKEND", "PARKED_LABEL", "Workloads"]

# The name kubectl's commands for the Kubernetes provider's clients go under in the call log.
BACKEND = "kubernetes"
# Scaling objects the tenant made: these kinds hold a replica count a rollback gives back.
SCALED_KINDS = ("deployments", "statefulsets", "replicasets")
SUSPENDED_KINDS = ("jobs", "cronjobs")
PARKED_KINDS = ("daemonsets",)
# What Helm marks a release's objects with: the stack's own login release is not the tenant's.
# The admins may not set it to the login release's name (the namespace's admission policy).
INSTANCE_LABEL = "app.kubernetes.io/instance"
# The node label a parked DaemonSet's pods select: no node carries it.
PARKED_LABEL = "gpu-tenants.example.io/parked"


@dataclass(frozen=True)
class Pod:
    name: str
    phase: str
    bare: bool  # no controller owns it: nothing recreates it once deleted
    instance: str | None  # the Helm release it belongs to


def _controlled(item: Mapping[str, Any]) -> bool:
    return any(o.get("controller") for o in item["metadata"].get("ownerReferences") or [])


class Workloads:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def _run(self, *args: str, doing: str) -> None:
        Kubectl(*args, namespace=self.namespace, doing=doing, backend=BACKEND).output()

    def _items(self, kind: str) -> list[dict[str, Any]]:
        doing = f"listing {kind} in {self.namespace}"
        listed = kubectl_json("get", kind, namespace=self.namespace, doing=doing, backend=BACKEND)
        items: list[dict[str, Any]] = listed["items"]
        return items

    def _tenants(
        self, kinds: Iterable[str], keep_instance: str
    ) -> list[tuple[str, dict[str, Any]]]:
        """(`<kind>/<name>`, object) of the kinds' objects of the tenant's: not the release
        `keep_instance`'s (the stack's own login release), and not a Deployment's ReplicaSets
        (the Deployment is scaled instead). A CronJob's Jobs are: a suspended CronJob makes no
        new Job, but those it made run on."""
        return [
            (f"{kind}/{item['metadata']['name']}", item)
            for kind in kinds
            for item in self._items(kind)
            if (item["metadata"].get("labels") or {}).get(INSTANCE_LABEL) != keep_instance
            and not (kind == "replicasets" and _controlled(item))
        ]

    def replicas(self, keep_instance: str) -> dict[str, int]:
        """`<kind>/<name>` -> replicas, for every scaled workload of the tenant's."""
        return {
            name: int(item["spec"].get("replicas", 1))
            for name, item in self._tenants(SCALED_KINDS, keep_instance)
        }

    def running(self, keep_instance: str) -> list[str]:
        """The tenant's Jobs and CronJobs that are not suspended."""
        return [
            name
            for name, item in self._tenants(SUSPENDED_KINDS, keep_instance)
            if not item["spec"].get("suspend")
        ]

    def unparked(self, keep_instance: str) -> list[str]:
        """The tenant's DaemonSets whose pods are not parked."""
        return [
            name
            for name, item in self._tenants(PARKED_KINDS, keep_instance)
            if PARKED_LABEL not in (item["spec"]["template"]["spec"].get("nodeSelector") or {})
        ]

    def scale(self, replicas: Mapping[str, int]) -> None:
        # A recorded count comes back from the engine as a float (2.0), which kubectl refuses.
        for workload, count in sorted((name, int(n)) for name, n in replicas.items()):
            doing = f"scaling {workload} to {count}"
            self._run("scale", workload, f"--replicas={count}", doing=doing)

    def suspend(self, names: Sequence[str], suspended: bool) -> None:
        for workload in sorted(names):
            doing = f"{'suspending' if suspended else 'resuming'} {workload}"
            patch = json.dumps({"spec": {"suspend": suspended}})
            self._run("patch", workload, "--type=merge", f"--patch={patch}", doing=doing)

    def park(self, names: Sequence[str], parked: bool) -> None:
        selector = {PARKED_LABEL: "true"} if parked else {PARKED_LABEL: None}
        patch = json.dumps({"spec": {"template": {"spec": {"nodeSelector": selector}}}})
        for workload in sorted(names):
            doing = f"{'parking' if parked else 'unparking'} {workload}"
            self._run("patch", workload, "--type=merge", f"--patch={patch}", doing=doing)

    def pods(self) -> list[Pod]:
        return [
            Pod(
                item["metadata"]["name"],
                (item.get("status") or {}).get("phase", "Unknown"),
                not _controlled(item),
                (item["metadata"].get("labels") or {}).get(INSTANCE_LABEL),
            )
            for item in self._items("pods")
        ]

    def delete_pods(self, names: Sequence[str]) -> None:
        if names:
            self._run(
                *("delete", "pod", *names, "--wait=false", "--ignore-not-found"),
                doing=f"deleting pods {', '.join(names)}",
            )
