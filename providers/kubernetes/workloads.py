"""A tenant namespace's workloads through kubectl (`providers.kubectl`: the operator's own tool,
with KUBECONFIG as the Kubernetes provider uses it): the Deployments and StatefulSets the tenant
runs and their replicas, scaling them, its bare pods, and which pods run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.kubectl import Kubectl, kubectl_json

__all__ = ["BACKEND", "Workloads"]

# The name kubectl's commands for the Kubernetes provider's clients go under in the call log.
BACKEND = "kubernetes"
# Scaling objects the tenant made: these kinds hold a replica count a rollback gives back.
SCALED_KINDS = ("deployments", "statefulsets")
# What Helm marks a release's objects with: the stack's own login release is not the tenant's.
INSTANCE_LABEL = "app.kubernetes.io/instance"


@dataclass(frozen=True)
class Pod:
    name: str
    phase: str
    bare: bool  # no controller owns it: nothing recreates it once deleted
    instance: str | None  # the Helm release it belongs to


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

    def replicas(self, keep_instance: str) -> dict[str, int]:
        """`<kind>/<name>` -> replicas, for every scaled workload of the namespace but those of
        the release `keep_instance` (the stack's own login release)."""
        return {
            f"{kind}/{item['metadata']['name']}": int(item["spec"].get("replicas", 1))
            for kind in SCALED_KINDS
            for item in self._items(kind)
            if (item["metadata"].get("labels") or {}).get(INSTANCE_LABEL) != keep_instance
        }

    def scale(self, replicas: Mapping[str, int]) -> None:
        for workload, count in sorted(replicas.items()):
            doing = f"scaling {workload} to {count}"
            self._run("scale", workload, f"--replicas={count}", doing=doing)

    def pods(self) -> list[Pod]:
        return [
            Pod(
                item["metadata"]["name"],
                (item.get("status") or {}).get("phase", "Unknown"),
                not any(o.get("controller") for o in item["metadata"].get("ownerReferences") or []),
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
