"""A preview's steps in the runbooks' words: which backend, what object, what the step does to it,
and whether it holds a tenant's data (a replace or delete of one is what a reviewer must not miss).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from providers.base import ADOPT
from tenant_stack.fleet.drift import layer_of, property_drift

__all__ = ["Action", "actions_of"]

Op = Literal["create", "import", "update", "replace", "delete"]

_DYNAMIC = "pulumi-python:dynamic/"
# type (without the dynamic prefix) -> backend, noun
_NOUNS: dict[str, tuple[str, str]] = {
    "authentik:TenantGroup": ("Authentik", "group"),
    "authentik:TenantUser": ("Authentik", "user"),
    "slurm:Account": ("Slurm", "account"),
    "slurm:User": ("Slurm", "user association"),
    "slurm:Qos": ("Slurm", "QoS"),
    "slurm:Partition": ("Slurm", "partition"),
    "slurm:DrainStart": ("Slurm", "drain start"),
    "slurm:Drained": ("Slurm", "drain"),
    "weka:Organization": ("Weka", "organization"),
    "weka:Filesystem": ("Weka", "filesystem"),
    "weka:Directory": ("Weka", "directory"),
    "weka:DirectoryQuota": ("Weka", "quota"),
    "weka:OrgUser": ("Weka", "CSI user"),
    "weka:UploadedSnapshot": ("Weka", "uploaded snapshot"),
    "retention:SlurmArchive": ("retention store", "accounting archive"),
    "retention:DirectoryCopy": ("retention store", "directory copy"),
    "offboarding:Gate": ("offboarding", "gate"),
    "kubernetes:WorkloadsStopped": ("Kubernetes", "workloads scaled to zero"),
    "kubernetes:LoginPodsReady": ("Kubernetes", "login pods serving SSH"),
}
# What a delete does, where the runbook says more than "delete".
_DELETES = {
    "authentik:TenantUser": "disable user {name} and take them out of the group (never deleted)",
    "slurm:User": "remove user {name} from the account (their accounting history stays)",
    "weka:Directory": "delete directory {name} with every file in it",
    "weka:Filesystem": "delete filesystem {name} with every file in it",
}
_DATA_BEARING = {
    "weka:Filesystem",
    "weka:Directory",
    "weka:Organization",
    "weka:UploadedSnapshot",
    "retention:SlurmArchive",
    "retention:DirectoryCopy",
    "slurm:Account",
    "kubernetes:scheduling.example.io/v1alpha1:Reservation",
    "kubernetes:core/v1:PersistentVolumeClaim",
}
_DIFF_KINDS = {"add": "added", "delete": "removed", "update": "changed"}
_DIFF_KINDS |= {f"{k}-replace": f"{said}, which replaces it" for k, said in _DIFF_KINDS.items()}
_OPS: dict[str, Op] = {
    "create": "create",
    "import": "import",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
}


@dataclass(frozen=True)
class Action:
    op: Op
    layer: str
    type: str
    name: str  # the object's own name in its backend, where the state says it
    urn: str
    words: str  # what the step does, in the runbook's words
    reasons: tuple[str, ...]  # why: the properties that change, or why it goes
    data_bearing: bool

    @property
    def loud(self) -> bool:
        """A replace or delete of an object that holds the tenant's data."""
        return self.data_bearing and self.op in ("replace", "delete")

    def as_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "layer": self.layer,
            "type": self.type,
            "name": self.name,
            "urn": self.urn,
            "words": self.words,
            "reasons": list(self.reasons),
            "data_bearing": self.data_bearing,
            "loud": self.loud,
        }


def actions_of(steps: Iterable[Mapping[str, Any]], spec_file: str) -> Iterator[Action]:
    """One action per resource a preview's steps change (a replacement's three steps are one),
    skipping components, whose changes are their children's."""
    chosen: dict[str, Mapping[str, Any]] = {}
    # An object imported by the engine and then changed to what the program declares.
    updated: dict[str, Mapping[str, Any]] = {}
    for step in steps:
        urn, op = str(step.get("urn")), str(step.get("op"))
        if op == "update" and urn in chosen and chosen[urn].get("op") == "import":
            updated[urn] = step
        # Of a replacement's steps, the `replace` one says why.
        elif op in _OPS and (urn not in chosen or op == "replace"):
            chosen[urn] = step
    for urn, step in chosen.items():
        op = _OPS[str(step.get("op"))]
        state = step.get("newState") or step.get("oldState") or {}
        if not state.get("custom"):
            continue
        type_ = str(state.get("type"))
        short = type_.removeprefix(_DYNAMIC)
        old, new = step.get("oldState") or {}, step.get("newState") or {}
        name = _name(new.get("outputs") or new.get("inputs") or old.get("outputs") or {}, urn)
        # An import's reasons are those of the update that follows it, if any.
        reasons = (
            _reasons(updated[urn], "update", spec_file)
            if urn in updated
            else _reasons(step, op, spec_file)
        )
        backend, noun = _NOUNS.get(short) or ("Kubernetes", short.rsplit(":", 1)[-1])
        verb = op + " {noun} {name}"
        if op == "delete":
            verb = _DELETES.get(short, verb)
        elif op == "import":
            verb = "import {noun} {name} made by hand, as it is" + (
                ", then update it" if urn in updated else ""
            )
        elif op == "create" and (new.get("inputs") or {}).get(ADOPT) is True:
            verb = "create {noun} {name}, or adopt it if made by hand (marking it as the tenant's)"
        words = f"{backend}: " + verb.format(noun=noun, name=f"`{name}`")
        yield Action(op, layer_of(urn), type_, name, urn, words, reasons, short in _DATA_BEARING)


def _name(properties: Mapping[str, Any], urn: str) -> str:
    metadata = properties.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("name"):
        return str(metadata["name"])
    named = {k: v for k, v in properties.items() if isinstance(v, str) and v}
    if "filesystem" in named and "path" in named:
        return named["filesystem"] + named["path"]
    for key in ("username", "user", "name", "path"):
        if key in named:
            return named[key]
    return urn.rsplit("::", 1)[-1]


def _reasons(step: Mapping[str, Any], op: Op, spec_file: str) -> tuple[str, ...]:
    if op == "delete":
        return (f"no longer declared by {spec_file}",)
    if op in ("create", "import"):
        return ()
    old, new = step.get("oldState") or {}, step.get("newState") or {}
    said = [str(reason) for reason in step.get("replaceReasons") or step.get("diffReasons") or []]
    changed = property_drift(old.get("inputs") or {}, new.get("inputs") or {})
    details = [f"{c.path}: {_short(c.recorded)} → {_short(c.live)}" for c in changed]
    # A provider's own diff (Kubernetes gives one) says what a masked secret's change is.
    shown = {c.path for c in changed}
    for path, diff in (step.get("detailedDiff") or {}).items():
        if path not in shown:
            details.append(f"{path}: {_DIFF_KINDS.get(str(diff.get('kind')), 'changed')}")
    if op == "replace" and said:
        details.insert(0, f"replaced because {', '.join(said)} cannot change in place")
    return tuple(details or said)


def _short(value: Any) -> str:
    text = "(none)" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
