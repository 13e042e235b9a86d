"""Calling a dynamic provider as the engine does, for the contract tests: numbers cross the
engine's wire as floats, check comes first, and a diff right after a create or read must be
empty."""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import ResourceProvider

GB = 10**9


def wire(props: dict[str, Any]) -> dict[str, Any]:
    """`props` as the engine hands them to a provider: every number a float."""
    return {
        k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
        for k, v in props.items()
    }


def checked(
    provider: ResourceProvider, news: dict[str, Any], olds: dict[str, Any] | None = None
) -> dict[str, Any]:
    result = provider.check(wire(olds or {}), wire(news))
    assert result.failures == [], [(f.property, f.reason) for f in result.failures]
    return wire(result.inputs)


def no_changes(
    provider: ResourceProvider, id_: str, outs: dict[str, Any], inputs: dict[str, Any]
) -> None:
    diff = provider.diff(id_, wire(outs), inputs)
    assert diff.changes is False, diff.__dict__
