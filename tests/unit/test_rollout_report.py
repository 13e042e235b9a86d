"""A rollout's report: the waves' stacks as updated, where it stopped, its exit status."""

from __future__ import annotations

from tenant_stack.commands.fleet import rollout_text
from tenant_stack.fleet.rollout import UpdateResult, Wave, exit_status, not_run

CHANGED = UpdateResult("tenant-a", "changed", 12.34, {"update": 2, "create": 1})
UNCHANGED = UpdateResult("tenant-b", "unchanged", 3.0)
FAILED = UpdateResult("tenant-c", "failed", 4.5, error="settings: admission webhook said no\nmore")


def test_a_stopped_rollout_says_what_changed_and_where_it_stopped() -> None:
    waves = [Wave((CHANGED,)), Wave((UNCHANGED, FAILED)), Wave((not_run("tenant-d"),))]
    assert rollout_text(waves, colour=False).splitlines() == [
        "wave 1:",
        "  tenant-a: changed (2 update, 1 create) 12.3s",
        "wave 2:",
        "  tenant-b: unchanged 3.0s",
        "  tenant-c: failed 4.5s",
        "    settings: admission webhook said no",
        "    more",
        "wave 3:",
        "  tenant-d: not run",
        "changed: tenant-a",
        "stopped at wave 2 of 3: a stack failed",
    ]
    assert exit_status(waves) == 1


def test_a_recovered_update_says_how() -> None:
    recovered = UpdateResult("tenant-a", "unchanged", 1.0, recovered="its engine was killed")
    assert rollout_text([Wave((recovered,))], colour=False).splitlines() == [
        "wave 1:",
        "  tenant-a: unchanged 1.0s",
        "    its engine was killed",
        "changed: no stack",
    ]
    assert exit_status([Wave((recovered,))]) == 0


def test_a_stack_update_reads_back_what_it_wrote() -> None:
    for update in (CHANGED, FAILED, not_run("tenant-d")):
        assert UpdateResult.from_json({**update.as_json(), "worker": "host:1"}) == update
