"""The delete gate every tenant-level object and the offboarding gate share: nothing tenant-level
is deleted before stage destroy with a sign-off, and the refusal names the next pull request."""

from __future__ import annotations

from typing import Any

import pytest

from providers.errors import OffboardingError
from providers.offboarding.gate_provider import OffboardingGateProvider

GATE = OffboardingGateProvider()


def record(
    stage: str,
    next_stage: str | None,
    signed_off: bool = False,
    rehearsal: bool = False,
    abandoned: bool = False,
) -> dict[str, Any]:
    """The outputs of an object whose last `up` recorded this stage."""
    return {
        "lifecycle": {
            "stage": stage,
            "next_stage": next_stage,
            "signed_off": signed_off,
            "rehearsal": rehearsal,
            "abandoned": abandoned,
        }
    }


@pytest.mark.parametrize(
    ("stage", "next_stage", "says"),
    [
        ("active", "frozen", "moves lifecycle.stage to 'frozen'"),
        ("archived", "snapshotted", "moves lifecycle.stage to 'snapshotted'"),
        ("destroy", None, "adds lifecycle.sign_off {by, date, ticket, confirmation}"),
    ],
)
def test_before_a_signed_off_destroy_deletion_is_refused_with_the_next_step(
    stage: str, next_stage: str | None, says: str
) -> None:
    with pytest.raises(OffboardingError) as refused:
        GATE.refuse_before_offboarding(
            "account 'tenant-foo'", record(stage, next_stage), "deleting"
        )
    message = str(refused.value)
    assert f"at offboarding stage '{stage}'" in message
    assert says in message
    assert "nothing was deleted" in message


def test_a_signed_off_destroy_a_rehearsal_and_an_unrecorded_object_may_go() -> None:
    GATE.refuse_before_offboarding("x", record("destroy", None, signed_off=True), "deleting")
    GATE.refuse_before_offboarding("x", record("active", "frozen", rehearsal=True), "deleting")
    GATE.refuse_before_offboarding("x", {"lifecycle": None}, "deleting")  # a team's sub-account
    GATE.refuse_before_offboarding("x", {}, "deleting")  # a state from before stages were recorded


def test_a_rehearsal_gate_deletes_without_asking_any_backend() -> None:
    props = {"tenant": "tenant-foo", "accounts": ["tenant-foo"], "namespace": "tenant-foo"}
    GATE.delete("tenant-foo", {**props, **record("active", "frozen", rehearsal=True)})


def test_a_destroy_whose_up_recorded_no_confirmation_is_refused_before_any_backend() -> None:
    """A stack last applied by a release before sign-offs named who confirmed for the customer:
    no backend is asked (none runs here), and the refusal says how to record it."""
    props = {"tenant": "tenant-foo", "accounts": ["tenant-foo"], "namespace": "tenant-foo"}
    with pytest.raises(OffboardingError) as refused:
        GATE.delete("tenant-foo", {**props, **record("destroy", None, signed_off=True)})
    message = str(refused.value)
    assert "recorded no sign-off naming who confirmed for the customer" in message
    assert "lifecycle.sign_off (by, date, ticket, confirmation)" in message
    assert "nothing was deleted" in message


def test_an_abandoned_onboarding_opens_the_objects_gates_and_its_own_reads_first() -> None:
    """The tenant-level objects go at stage active once the onboarding is abandoned: the
    offboarding gate, deleted first, is what reads that the tenant was never used. A gate whose
    `up` recorded no directories to read refuses before asking any backend (none runs here)."""
    GATE.refuse_before_offboarding("x", record("active", "frozen", abandoned=True), "deleting")
    props = {"tenant": "tenant-foo", "accounts": ["tenant-foo"], "namespace": "tenant-foo"}
    with pytest.raises(OffboardingError) as refused:
        GATE.delete("tenant-foo", {**props, **record("active", "frozen", abandoned=True)})
    assert "without the tenant's directories" in str(refused.value)
    assert "nothing was deleted" in str(refused.value)
