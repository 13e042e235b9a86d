"""Pulumi mocks that record what the engine would be told, and a context manager that sets and
restores them for a test fixture.

`pulumi.runtime.Mocks.new_resource` sees a resource's type, name and inputs, but not its parent or
dependencies. Those travel in the raw `RegisterResourceRequest` (`parent`, `dependencies`,
`propertyDependencies`) and `ReadResourceRequest` (`parent`, `dependencies`, `id`) that the SDK
sends to its resource monitor. `RecordingMonitor` is a `MockMonitor` (passed to `set_mocks` as
`monitor=`) that keeps those requests, so the tests compare parents and dependencies as exact URNs,
as the engine will receive them, instead of guessing them from URN strings. Dependencies on a
ComponentResource arrive expanded to the URNs of its children, as the engine sees them: that is
what makes `pulumi destroy` delete in reverse order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi
from pulumi._utils import ContextProperty
from pulumi.runtime import rpc, settings
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs

__all__ = ["Recorded", "Recorder", "is_secret", "pulumi_mocks", "reveal"]

T = TypeVar("T")


def is_secret(value: Any) -> bool:
    """Whether a deserialized input is a secret (the SDK sends secrets wrapped in a signature)."""
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def reveal(value: Any) -> Any:
    """The value inside a secret, or the value itself."""
    return value["value"] if is_secret(value) else value


@dataclass(frozen=True)
class Recorded:
    """One resource as the engine is told of it: registered (`read_id` None) or read (`get`)."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    read_id: str | None
    inputs: dict[str, Any]
    dependencies: frozenset[str]
    property_dependencies: dict[str, frozenset[str]]
    retain_on_delete: bool = False
    protect: bool = False


class _Mocks(pulumi.runtime.Mocks):
    """Outputs echo the inputs; a read (`Resource.get`) returns the state given for its id."""

    def __init__(self, reads: dict[str, dict[str, Any]]) -> None:
        self.reads = reads

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.resource_id:
            return args.resource_id, {**args.inputs, **self.reads.get(args.resource_id, {})}
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        raise AssertionError(f"unexpected invoke {args.token}")


class RecordingMonitor(MockMonitor):
    """A MockMonitor that keeps every RegisterResource and ReadResource request it answers."""

    def __init__(self, mocks: _Mocks) -> None:
        super().__init__(mocks)
        self.recorded: list[Recorded] = []
        self.registered_outputs: dict[str, dict[str, Any]] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            self.recorded.append(
                Recorded(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    custom=request.custom,
                    read_id=None,
                    inputs=rpc.deserialize_properties(request.object),
                    dependencies=frozenset(request.dependencies),
                    property_dependencies={
                        key: frozenset(deps.urns)
                        for key, deps in request.propertyDependencies.items()
                    },
                    retain_on_delete=request.retainOnDelete,
                    protect=request.protect,
                )
            )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:  # noqa: N802
        self.registered_outputs[request.urn] = rpc.deserialize_properties(request.outputs)
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]

    def ReadResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        response = super().ReadResource(request)  # type: ignore[no-untyped-call]
        self.recorded.append(
            Recorded(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=True,
                read_id=request.id,
                inputs=rpc.deserialize_properties(request.properties),
                dependencies=frozenset(request.dependencies),
                property_dependencies={},
            )
        )
        return response


@dataclass
class Recorder:
    """Runs a Pulumi program under the mocks and answers questions about what it declared."""

    monitor: RecordingMonitor
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run(self, program: Callable[[], pulumi.Output[T]]) -> T:
        """Run `program`, wait until every resource is registered, and return the value of the
        Output it returns (component outputs, say)."""
        values: list[T] = []

        @pulumi.runtime.test  # type: ignore[untyped-decorator]
        def body() -> pulumi.Output[None]:
            return program().apply(values.append)

        body()
        assert len(values) == 1, "the program's Output never resolved"
        return values[0]

    @property
    def resources(self) -> list[Recorded]:
        return list(self.monitor.recorded)

    def one(self, type_: str, name: str) -> Recorded:
        found = [r for r in self.monitor.recorded if r.type == type_ and r.name == name]
        assert len(found) == 1, f"{len(found)} resources of type {type_} named {name}"
        return found[0]

    def find(self, type_: str, name: str) -> list[Recorded]:
        return [r for r in self.monitor.recorded if r.type == type_ and r.name == name]

    def children(self, parent: Recorded) -> list[Recorded]:
        return [r for r in self.monitor.recorded if r.parent == parent.urn]

    def outputs_of(self, component: Recorded) -> dict[str, Any]:
        """What the component passed to `register_outputs` (KeyError if it never did)."""
        return self.monitor.registered_outputs[component.urn]


def _settings_vars() -> list[ContextProperty]:
    return [v for v in vars(settings.Settings).values() if isinstance(v, ContextProperty)]


@contextmanager
def pulumi_mocks() -> Iterator[Recorder]:
    """Sets Pulumi mocks (for one test, through a fixture), then restores the runtime's settings
    as they were.

    The SDK keeps its settings (monitor, stack, dry_run, ...) and the root Stack resource in
    ContextVars. Each is set here to its current value first, so that resetting the token after
    the test undoes everything `set_mocks` and the program changed. A ContextProperty also
    overwrites its default when first set (the default is what the SDK's executor threads, which
    do not inherit ContextVars, read); that default is saved and put back too. The root is
    cleared so that every test registers under a Stack of its own monitor.
    """
    saved = []
    for prop in _settings_vars():
        default = prop._ContextProperty__default  # type: ignore[attr-defined]
        saved.append((prop, prop._data.set(prop._data.get()), default))
    root = settings.ROOT.set(None)
    reads: dict[str, dict[str, Any]] = {}
    monitor = RecordingMonitor(_Mocks(reads))
    pulumi.runtime.set_mocks(monitor.mocks, preview=False, monitor=monitor)
    try:
        yield Recorder(monitor, reads)
    finally:
        settings.ROOT.reset(root)
        for prop, token, default in reversed(saved):
            prop._data.reset(token)
            prop._ContextProperty__default = default
