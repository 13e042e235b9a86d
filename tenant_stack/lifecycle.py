"""The offboarding stages of a tenant's `lifecycle`, in a module of their own: the commands'
parser offers them as choices, and must not load the spec's models (pydantic) to do so."""

from __future__ import annotations

from typing import Literal

__all__ = ["STAGES", "Stage"]

Stage = Literal["active", "frozen", "drained", "archived", "snapshotted", "destroy"]
# The offboarding runbook's order; a stage implies every one before it.
STAGES: tuple[Stage, ...] = ("active", "frozen", "drained", "archived", "snapshotted", "destroy")
