"""The offboarding stages of a tenant's `lifecycle` and the rules for moving between them, in a
module of their own: the commands' parser offers the stages as choices and must not load the
spec's models (pydantic) to do so, and the program's preflight (against the stage the last `up`
applied) and `gpu-tenants stage` (against the spec's own) apply the same rules."""

from __future__ import annotations

from typing import Literal

__all__ = ["SIGNED_OFF", "STAGES", "Stage", "hold_refusal", "move_refusal"]

Stage = Literal["active", "frozen", "drained", "archived", "snapshotted", "destroy"]
# The offboarding runbook's order; a stage implies every one before it.
STAGES: tuple[Stage, ...] = ("active", "frozen", "drained", "archived", "snapshotted", "destroy")
# The stages that delete, which the spec accepts only with a sign-off (`lifecycle.sign_off`: by,
# date, ticket) and which no sign-off is accepted without: nothing is deleted on a reviewer's
# approval alone, and an old sign-off cannot authorise a later destroy.
SIGNED_OFF: tuple[Stage, ...] = ("destroy",)


def move_refusal(now: Stage, wanted: Stage) -> str | None:
    """Why a tenant at stage `now` may not move to `wanted`, or None when it may: offboarding
    goes one stage forward per pull request in the runbook's order, or back to any earlier stage
    (the runbook's rollback), and never back from destroy."""
    if now == wanted:
        return None
    if now == "destroy":
        return "the tenant is at stage destroy, from which there is no way back"
    following = STAGES.index(now) + 1
    if STAGES.index(wanted) > following:
        return (
            f"the tenant is at stage {now}, and offboarding goes one stage per pull request "
            f"in the runbook's order: the next is {STAGES[following]}"
        )
    return None


def hold_refusal(wanted: Stage, legal_hold: bool) -> str | None:
    """Why a live tenant may not move to `wanted` under a legal hold, or None: nothing of it may
    be deleted. (Once offboarded, a hold pauses the retention purge instead.)"""
    if wanted not in SIGNED_OFF or not legal_hold:
        return None
    return (
        "the tenant is under legal hold (lifecycle.legal_hold), which forbids deleting anything "
        f"of it; stay at {STAGES[STAGES.index(wanted) - 1]} until legal releases the hold"
    )
