"""The order the test files are handed to pytest-xdist's workers (`--dist loadfile`, a file at a
time): the longest first, so that no worker is left with a long file while the other idles at the
end. The ranks come from a real run's `--durations` (docs/testing.md has the figures); a file not
listed runs after them, the tiers that start a backend before those that start nothing.
"""

from __future__ import annotations

import pytest

# Longest first, as measured; refresh when docs/testing.md's figures are.
LONGEST_FIRST = (
    "tests/e2e/test_offboarding.py",
    "tests/e2e/test_offboarding_own_filesystems.py",
    "tests/e2e/test_fleet_rollout.py",
    "tests/e2e/test_import.py",
    "tests/e2e/test_fleet_temporal.py",
    "tests/e2e/test_fleet.py",
    "tests/e2e/test_diagnose.py",
    "tests/sandbox/test_doctor.py",
    "tests/e2e/test_isolation.py",
    "tests/e2e/test_stage_rollback.py",
)
TIERS = ("tests/e2e/", "tests/sandbox/", "tests/contract/", "tests/unit/")


def _rank(path: str) -> tuple[int, int]:
    if path in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(path))
    tier = next((n for n, prefix in enumerate(TIERS) if path.startswith(prefix)), len(TIERS))
    return (1, tier)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # sorted() is stable: the tests of a file keep their order.
    items.sort(key=lambda item: _rank(item.nodeid.split("::", 1)[0]))
