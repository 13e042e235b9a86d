"""Offboarding step 7's health check: a node that was healthy when the tenant got it but is not at
release goes into RMA, not into the next tenant's pool.

One record per reservation, which depends on the Reservation, so that `pulumi destroy` deletes it
first. Its delete reads the health condition the platform's health checker sets on each reserved
node (`condition`, Pulumi.prod.yaml `node_health`) and holds back each node for which it is False:
cordoned, tainted `gpu-tenants.example.io/rma=<tenant>:NoSchedule` with the condition's reason
and message in an annotation (the Reservation's own label and taint then go, this stays), and
drained in Slurm with the same reason. An `up` that takes a node out of the reservation checks it
the same way, just after the Reservation has let it go (an update runs after what it depends
on). A node without the condition, or with it Unknown, is released with a warning: no
signal is no evidence of a fault. Each node held back is named on the resource's row (and an
update records it in `held_back`), with what returns it after the repair (`kubectl uncordon`, the
taint removed, `scontrol update State=RESUME`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers import progress
from providers.base import Field, Schema, SchemaProvider, nonempty_text
from providers.errors import KubernetesError
from providers.kubectl import Kubectl, kubectl_get
from providers.slurm import commands, values
from providers.slurm.settings import Settings as SlurmSettings
from providers.slurm.transport import SlurmRunner

__all__ = ["RMA_REASON", "RMA_TAINT", "NodeReleaseProvider", "fault"]

RMA_TAINT = "gpu-tenants.example.io/rma"
RMA_REASON = "gpu-tenants.example.io/rma-reason"

RELEASE = Schema(
    kind="node release",
    fields=(
        Field("tenant", nonempty_text),
        Field("nodes", values.names),
        Field("condition", nonempty_text),
    ),
)


def _reported(node: Mapping[str, Any], condition: str) -> Mapping[str, Any]:
    """The node's `condition` as its status holds it; empty when the checker never set it."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == condition), {})


def fault(node: Mapping[str, Any], condition: str) -> str | None:
    """Why `node` (a Node object) must not go back to the pool: its health `condition` is False,
    with the checker's reason and message; None when it is True, Unknown or not reported."""
    found = _reported(node, condition)
    if found.get("status") != "False":
        return None
    said = ": ".join(str(found[key]) for key in ("reason", "message") if found.get(key))
    return f"{condition} False" + (f" ({said})" if said else "")


class NodeReleaseProvider(SchemaProvider):
    schema = RELEASE
    error = KubernetesError

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.load(props, f"recording the nodes of tenant {props.get('tenant')!r}")
        return CreateResult(p["tenant"], {**p, "held_back": {}})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # A record of the reservation's nodes; the nodes themselves are the Reservation's.
        return ReadResult(id_, props)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        p = self.load(news, f"recording the nodes of tenant {news.get('tenant')!r}")
        leaving = sorted(set(olds.get("nodes") or []) - set(p["nodes"]))
        held = {**(olds.get("held_back") or {}), **_release(p["tenant"], leaving, p["condition"])}
        return UpdateResult({**p, "held_back": held})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        _release(props["tenant"], props["nodes"], props["condition"])


def _release(tenant: str, nodes: Sequence[str], condition: str) -> dict[str, str]:
    """Checks each node leaving the tenant; holds back the failing ones. Node -> why held."""
    held = {}
    for name in nodes:
        node = kubectl_get("node", name)
        if node is None:
            continue  # gone from the cluster: nothing to return to the pool
        why = fault(node, condition)
        if why is None:
            if _reported(node, condition).get("status") != "True":
                progress.say(
                    f"releasing node {name} from tenant {tenant!r} unchecked: it reports no "
                    f"{condition} True (offboarding step 7: run the health check by hand)"
                )
            continue
        _hold_back(tenant, name, why)
        held[name] = why
        progress.say(
            f"node {name} held back for RMA, not returned to the pool: {why}; after the "
            f"repair: `kubectl uncordon {name}`, `kubectl taint node {name} {RMA_TAINT}-`, "
            f"`scontrol update NodeName={name} State=RESUME`"
        )
    return held


def _hold_back(tenant: str, name: str, why: str) -> None:
    doing = f"holding back node {name} of tenant {tenant!r} for RMA ({why})"
    for args in (
        ("cordon", name),
        ("taint", "node", name, f"{RMA_TAINT}={tenant}:NoSchedule", "--overwrite"),
        ("annotate", "node", name, f"{RMA_REASON}={why}", "--overwrite"),
    ):
        Kubectl(*args, doing=doing).output()
    runner = SlurmRunner(SlurmSettings.from_environment().make_transport())
    runner.must(commands.drain_node(name, f"RMA after {tenant}: {why}"), doing)
