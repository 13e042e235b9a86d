"""Reading the engine's event stream (a command run with PULUMI_ENABLE_STREAMING_JSON_PREVIEW and
`--json`: one event per line): the steps of a preview, the policy pack's findings, and what a
failed run said. The one-document `--json` output leaves policy findings out, so the fleet
commands read the stream."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tenant_stack.stacks import Engine

__all__ = ["Violation", "failure", "steps", "violations"]

_ERRORS_SHOWN = 3
# What the engine adds after the errors that say why.
_GENERIC = {"", "preview failed", "update failed", "refresh failed", "destroy failed"}


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str  # "mandatory" fails the preview; "advisory" only warns
    resource: str  # the resource's name, or "" for the stack as a whole
    message: str

    def __str__(self) -> str:
        on = f" on {self.resource}" if self.resource else ""
        return f"[{self.level}] {self.policy}{on}: {self.message}"

    def as_json(self) -> dict[str, str]:
        return {
            "policy": self.policy,
            "level": self.level,
            "resource": self.resource,
            "message": self.message,
        }


def steps(events: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """A preview's steps, shaped as the one-document output shapes them."""
    for event in events:
        metadata = (event.get("resourcePreEvent") or {}).get("metadata")
        if metadata:
            yield {
                "op": metadata.get("op"),
                "urn": metadata.get("urn"),
                "oldState": metadata.get("old"),
                "newState": metadata.get("new"),
                "replaceReasons": metadata.get("keys") or [],
                "detailedDiff": metadata.get("detailedDiff"),
            }


def violations(events: Iterable[Mapping[str, Any]]) -> list[Violation]:
    found = []
    for event in events:
        policy = event.get("policyEvent")
        if policy:
            urn = str(policy.get("resourceUrn") or "")
            found.append(
                Violation(
                    str(policy.get("policyName")),
                    str(policy.get("enforcementLevel")),
                    urn.rsplit("::", 1)[-1] if urn else "",
                    " ".join(str(policy.get("message") or "").split()),
                )
            )
    return found


def failure(result: Engine, events: Sequence[Mapping[str, Any]]) -> str:
    """A failed run's errors, each with the resource it is about and in the provider's (or the
    program's) own words, the first few in full; else the engine's stderr."""
    said: list[str] = []
    for event in events:
        diagnostic = event.get("diagnosticEvent") or {}
        message = str(diagnostic.get("message") or "").strip()
        urn = str(diagnostic.get("urn") or "")
        if diagnostic.get("severity") != "error" or message in _GENERIC:
            continue
        name = urn.rsplit("::", 1)[-1]
        line = f"{name}: {message}" if urn and "pulumi:Stack::" not in urn else message
        if line not in said:
            said.append(line)
    if not said:
        return (result.stderr.strip() or result.stdout.strip())[-2000:] or (
            f"`{result.command}` exited {result.returncode}"
        )
    shown = [line if len(line) <= 1500 else line[:1497] + "..." for line in said[:_ERRORS_SHOWN]]
    more = len(said) - len(shown)
    return "\n".join(shown + ([f"...and {more} more errors like these"] if more else []))
