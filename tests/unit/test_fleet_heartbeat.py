"""How long the fleet's workflows wait for a dead worker: the run's heartbeat timeout, from the
environment of the command that starts it, and the beats a worker sends under it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tenant_stack.errors import StackError
from tenant_stack.workflows.activities import HEARTBEAT_EVERY, _beat_every
from tenant_stack.workflows.commands import heartbeat_timeout


def test_production_waits_20_s_and_the_sandbox_what_it_sets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GPU_TENANTS_HEARTBEAT_TIMEOUT", raising=False)
    assert heartbeat_timeout() == 20.0
    monkeypatch.setenv("GPU_TENANTS_HEARTBEAT_TIMEOUT", "5")
    assert heartbeat_timeout() == 5.0


@pytest.mark.parametrize("value", ["1", "0", "-3", "soon"])
def test_a_timeout_too_short_to_tell_a_busy_worker_from_a_dead_one_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GPU_TENANTS_HEARTBEAT_TIMEOUT", value)
    with pytest.raises(StackError, match="GPU_TENANTS_HEARTBEAT_TIMEOUT"):
        heartbeat_timeout()


def test_workers_beat_four_times_per_timeout_and_never_less_often_than_every_5_s() -> None:
    assert _beat_every(timedelta(seconds=20)) == HEARTBEAT_EVERY == 5.0
    assert _beat_every(timedelta(seconds=5)) == 1.25
    assert _beat_every(timedelta(minutes=5)) == HEARTBEAT_EVERY
    assert _beat_every(None) == HEARTBEAT_EVERY
