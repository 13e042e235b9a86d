"""The tenant's workloads as the program declares offboarding's stop of them."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
from pulumi.dynamic import Resource

from providers.kubernetes.login_pods_provider import LoginPodsReadyProvider
from providers.kubernetes.workloads_provider import WorkloadsStoppedProvider

__all__ = ["LoginPodsReady", "WorkloadsStopped"]


class WorkloadsStopped(Resource, module="kubernetes", name="WorkloadsStopped"):
    """The tenant's own workloads in `namespace` stopped: Deployments, StatefulSets and its own
    ReplicaSets at zero (their earlier `replicas` recorded), Jobs and CronJobs `suspended`,
    DaemonSets `parked`, each given back when this is deleted before stage destroy; its bare
    pods deleted. `keep_instance` names the stack's own login release, left running."""

    replicas: pulumi.Output[dict[str, int]]
    suspended: pulumi.Output[list[str]]
    parked: pulumi.Output[list[str]]
    deleted_pods: pulumi.Output[list[str]]

    def __init__(
        self,
        resource_name: str,
        *,
        namespace: pulumi.Input[str],
        keep_instance: str,
        lifecycle: Mapping[str, object],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "namespace": namespace,
            "keep_instance": keep_instance,
            "lifecycle": dict(lifecycle),
            "replicas": None,
            "suspended": None,
            "parked": None,
            "deleted_pods": None,
        }
        super().__init__(WorkloadsStoppedProvider(), resource_name, inputs, opts)


class LoginPodsReady(Resource, module="kubernetes", name="LoginPodsReady"):
    """The login release `release` in `namespace` serving: `replicas` pods Ready with sshd
    listening (none, for 0), waited for at each change of `release_values` (a digest of the
    release's values) or `replicas`."""

    pods: pulumi.Output[list[str]]

    def __init__(
        self,
        resource_name: str,
        *,
        namespace: pulumi.Input[str],
        release: str,
        replicas: int,
        release_values: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "namespace": namespace,
            "release": release,
            "replicas": replicas,
            "release_values": release_values,
            "pods": None,
        }
        super().__init__(LoginPodsReadyProvider(), resource_name, inputs, opts)
