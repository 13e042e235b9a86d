"""Each node's slurmd log, read where it lives (offboarding step 3c: "slurmd.log on each node").

With the kubectl transport a node's log is read in its slurmd pod, found as the runbook finds it:
the pod of SLURMD_POD_SELECTOR in the controller's namespace whose `spec.nodeName` is the node.
With the local transport (the sandbox, whose slurmd daemons run on this host and log one file
each) it is read on this host, at SLURMD_LOG_FILE with `{node}` standing for the node's name.

A log that cannot be read does not stop the archive: the node may be gone for repair, or never
have run a slurmd. Each such node is named with why, for the archive and the operator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from providers.errors import KubernetesError
from providers.kubectl import kubectl_get
from providers.slurm import commands
from providers.slurm.settings import Settings
from providers.slurm.transport import BACKEND, SlurmRunner

__all__ = ["NodeLogs", "read_node_logs"]


@dataclass(frozen=True)
class NodeLogs:
    read: Mapping[str, str]  # node -> its log's text
    unread: Mapping[str, str]  # node -> why its log could not be read


def read_node_logs(settings: Settings, nodes: Sequence[str]) -> NodeLogs:
    if settings.transport.kind != "kubectl":
        runner = SlurmRunner(settings.make_transport())
        return _each(nodes, lambda node: (runner, settings.node_log.replace("{node}", node)))
    pods = _slurmd_pods(settings)

    def where(node: str) -> tuple[SlurmRunner, str] | str:
        pod = pods.get(node)
        if pod is None:
            return (
                f"no slurmd pod ({settings.slurmd_selector}) in namespace "
                f"{settings.transport.namespace} runs on it"
            )
        transport = replace(settings.transport, target=f"pod/{pod}").make(BACKEND)
        return SlurmRunner(transport), settings.node_log

    return _each(nodes, where)


# Where a node's log is read (a runner and the path it reads), or why it cannot be.
_Where = Callable[[str], tuple[SlurmRunner, str] | str]


def _each(nodes: Sequence[str], where: _Where) -> NodeLogs:
    read, unread = {}, {}
    for node in sorted(set(nodes)):
        found = where(node)
        if isinstance(found, str):
            unread[node] = found
            continue
        runner, path = found
        result = runner.result(commands.cat(path))
        if result.ok:
            read[node] = result.stdout
        else:
            unread[node] = f"{path}: {(result.stderr or result.stdout).strip() or 'no output'}"
    return NodeLogs(read, unread)


def _slurmd_pods(settings: Settings) -> dict[str, str]:
    """Node name -> the running slurmd pod on it."""
    namespace, selector = settings.transport.namespace, settings.slurmd_selector
    doing = f"finding the slurmd pods ({selector}) in namespace {namespace}"
    found = kubectl_get("pods", "-l", selector, "-o", "json", namespace=namespace, doing=doing)
    if found is None:
        raise KubernetesError(doing, "kubectl answered nothing")
    return {
        item["spec"]["nodeName"]: item["metadata"]["name"]
        for item in found.get("items", [])
        if item["spec"].get("nodeName") and item.get("status", {}).get("phase") == "Running"
    }
