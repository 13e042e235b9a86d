"""A tenant namespace's workloads through kubectl (the operator's own tool, with KUBECONFIG as the
Kubernetes provider uses it): the Deployments and StatefulSets the tenant runs and their
replicas, scaling them, its bare pods, and which pods run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.command import LocalTransport
from providers.errors import KubernetesError

__all__ = ["Workloads", "kubectl"]

# Scaling objects the tenant made: these kinds hold a replica count a rollback gives back.
SCALED_KINDS = ("deployments", "statefulsets")
# What Helm marks a release's objects with: the stack's own login release is not the tenant's.
INSTANCE_LABEL = "app.kubernetes.io/instance"
_TIMEOUT = 60.0


def kubectl() -> LocalTransport:
    return LocalTransport(backend="kubernetes", timeout=_TIMEOUT)


@dataclass(frozen=True)
class Pod:
    name: str
    phase: str
    bare: bool  # no controller owns it: nothing recreates it once deleted
    instance: str | None  # the Helm release it belongs to


class Workloads:
    def __init__(self, namespace: str, transport: LocalTransport | None = None) -> None:
        self.namespace = namespace
        self.transport = transport or kubectl()

    def _run(self, argv: Sequence[str], doing: str) -> str:
        result = self.transport.run(["kubectl", "--namespace", self.namespace, *argv])
        if not result.ok:
            raise KubernetesError(doing, result.words, "check that the cluster answers (kubectl)")
        return result.stdout

    def _items(self, kind: str) -> list[dict[str, Any]]:
        text = self._run(["get", kind, "--output=json"], f"listing {kind} in {self.namespace}")
        items: list[dict[str, Any]] = json.loads(text)["items"]
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
            self._run(["scale", workload, f"--replicas={count}"], f"scaling {workload} to {count}")

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
                ["delete", "pod", *names, "--wait=false", "--ignore-not-found"],
                f"deleting pods {', '.join(names)}",
            )
