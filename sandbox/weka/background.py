"""Work the real cluster finishes after it has answered: a new filesystem is not usable until it
reports `is_ready`, a quota stays `ADDING` before it is `ACTIVE`, and an upload to the object store
is `UPLOADING` until `SYNCHRONIZED`. The emulator does the work at once but reports it unfinished
for `settle_seconds` (its `--settle-seconds`), refusing what the real cluster cannot do yet, so
that a client which does not wait fails here as it would there. Kept in memory: an emulator
restarted has finished its background work."""

from __future__ import annotations

import time
from collections.abc import Hashable


class Background:
    def __init__(self, settle_seconds: float = 0.0) -> None:
        self.settle_seconds = settle_seconds
        self._done_at: dict[Hashable, float] = {}

    def start(self, work: Hashable) -> None:
        """`work` (a kind and the object's ids) begins now."""
        if self.settle_seconds > 0:
            self._done_at[work] = time.monotonic() + self.settle_seconds

    def pending(self, work: Hashable) -> bool:
        done_at = self._done_at.get(work)
        if done_at is None:
            return False
        if time.monotonic() >= done_at:
            del self._done_at[work]
            return False
        return True
