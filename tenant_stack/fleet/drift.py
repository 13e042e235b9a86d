"""Drift over the fleet: every tenant stack checked by the engine's own drift check, several at a
time, reported per stack, layer, resource and property.

The check is `pulumi refresh --preview-only` (Stacks.refresh_preview): each resource's provider
reads it live (the dynamic providers' `read`, the Kubernetes provider's GET) and the engine
compares that with the state, without running the program and without taking the stack's lock.
So it answers "did anything change behind Pulumi's back", not "would `up` change anything" (that
is `review`'s question), and an offboarded stack is checked for what it still holds: its retained
resources. The engine's events carry each drifted resource's recorded and live outputs; the
property paths are computed here, leaving out what a Kubernetes server rewrites on every write
(resourceVersion, managedFields, status) and masking secrets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tenant_stack.errors import StackError
from tenant_stack.fleet.engine_events import failure
from tenant_stack.fleet.parallel import fan_out
from tenant_stack.stacks import Stacks

__all__ = [
    "PropertyDrift",
    "ResourceDrift",
    "StackDrift",
    "check_fleet",
    "check_stack",
    "drifted_resources",
    "exit_status",
    "layer_of",
    "property_drift",
]

Status = Literal["clean", "drift", "error"]

SECRET = "[secret]"
# Written by the Kubernetes API server on every write, or computed by the provider: never drift.
_BOOKKEEPING = (
    "__inputs",
    "__provider",
    "metadata.managedFields",
    "metadata.resourceVersion",
    "metadata.generation",
    "metadata.creationTimestamp",
    "metadata.uid",
    "status",
)
_SECRET_WORDS = ("password", "token", "secret", "private")


@dataclass(frozen=True)
class PropertyDrift:
    path: str  # dotted, keys holding a dot quoted: spec.hard["requests.cpu"]
    recorded: Any  # in the state
    live: Any  # what the backend holds now

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "recorded": self.recorded, "live": self.live}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PropertyDrift:
        return cls(data["path"], data["recorded"], data["live"])


@dataclass(frozen=True)
class ResourceDrift:
    layer: str  # the component (runbook layer) the resource belongs to, or "stack"
    name: str
    type: str
    urn: str
    change: Literal["changed", "gone"]
    properties: tuple[PropertyDrift, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "resource": self.name,
            "type": self.type,
            "urn": self.urn,
            "change": self.change,
            "properties": [p.as_json() for p in self.properties],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResourceDrift:
        properties = tuple(PropertyDrift.from_json(p) for p in data["properties"])
        return cls(
            data["layer"], data["resource"], data["type"], data["urn"], data["change"], properties
        )


@dataclass(frozen=True)
class StackDrift:
    stack: str
    status: Status
    seconds: float
    resources: tuple[ResourceDrift, ...] = ()
    error: str = ""  # the engine's and the backend's own words, when status is "error"

    def as_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "status": self.status,
            "seconds": round(self.seconds, 2),
            "error": self.error,
            "resources": [r.as_json() for r in self.resources],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StackDrift:
        """A stack's report as `as_json` wrote it (a fleet workflow's result, say)."""
        resources = tuple(ResourceDrift.from_json(r) for r in data["resources"])
        return cls(data["stack"], data["status"], data["seconds"], resources, data["error"])


def check_stack(stacks: Stacks, stack: str) -> StackDrift:
    """The drift of one stack; an engine or backend failure is this stack's error, not raised."""
    started = time.monotonic()
    try:
        result = stacks.refresh_preview(stack)
        events = result.events()
    except (StackError, ValueError) as error:
        return StackDrift(stack, "error", time.monotonic() - started, error=str(error))
    seconds = time.monotonic() - started
    if result.returncode != 0:
        return StackDrift(stack, "error", seconds, error=failure(result, events))
    drifted = tuple(drifted_resources(events))
    return StackDrift(stack, "drift" if drifted else "clean", seconds, drifted)


def check_fleet(
    stacks: Stacks,
    names: Sequence[str],
    workers: int,
    done: Callable[[StackDrift], None] = lambda _: None,
) -> list[StackDrift]:
    """Every stack in `names`, at most `workers` at a time; `done` hears of each as it ends.
    The report is in the order of `names`."""
    return fan_out(names, lambda name: check_stack(stacks, name), workers, done)


def exit_status(report: Iterable[StackDrift]) -> int:
    """The drift commands' exit status: 2 a stack could not be checked, 1 drift, 0 clean."""
    statuses = {stack.status for stack in report}
    return 2 if "error" in statuses else 1 if "drift" in statuses else 0


def drifted_resources(events: Iterable[Mapping[str, Any]]) -> Iterator[ResourceDrift]:
    """The resources a refresh preview's events show as changed or gone, with what changed."""
    for event in events:
        metadata = (event.get("resOutputsEvent") or {}).get("metadata") or {}
        op = metadata.get("op")
        if op not in ("update", "delete"):
            continue
        urn = str(metadata["urn"])
        old = metadata.get("old") or {}
        name, type_ = urn.rsplit("::", 1)[-1], str(metadata.get("type") or old.get("type"))
        if op == "delete":
            yield ResourceDrift(layer_of(urn), name, type_, urn, "gone")
            continue
        new = metadata.get("new") or {}
        properties = property_drift(
            old.get("outputs") or {}, new.get("outputs") or {}, secret=_is_secret_type(type_)
        )
        yield ResourceDrift(layer_of(urn), name, type_, urn, "changed", tuple(properties))


def layer_of(urn: str) -> str:
    """The component a resource is parented under, read from its URN's type chain
    (`...::gpu-tenants:slurm:SlurmAccounting$pulumi-python:dynamic/slurm:Account::name`)."""
    chain = urn.split("::")[2].split("$")
    return chain[0].rsplit(":", 1)[-1] if len(chain) > 1 else "stack"


def property_drift(
    recorded: Mapping[str, Any], live: Mapping[str, Any], *, secret: bool = False
) -> list[PropertyDrift]:
    """Every leaf that differs between two outputs, bookkeeping left out; a secret's value (by
    the engine's mark, by its name, or every value when `secret`) is masked on both sides."""
    before, after = dict(_leaves(recorded)), dict(_leaves(live))
    drifted = []
    for path in sorted(before.keys() | after.keys()):
        if path.startswith(_BOOKKEEPING) or before.get(path) == after.get(path):
            continue
        masked = secret or any(word in path.lower() for word in _SECRET_WORDS)
        was, now = before.get(path), after.get(path)
        if masked or SECRET in (was, now):
            was, now = _mask(was), _mask(now)
        drifted.append(PropertyDrift(path, was, now))
    return drifted


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            step = f'["{key}"]' if "." in str(key) else f".{key}" if path else str(key)
            yield from _leaves(item, f"{path}{step}")
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _mask(value: Any) -> Any:
    return None if value is None else SECRET


def _is_secret_type(type_: str) -> bool:
    return type_ == "kubernetes:core/v1:Secret"
