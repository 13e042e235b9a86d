"""Offboarding step 2, the drain, as two records: `DrainStart` and `Drained`.

A drain can take days, and no `up` may hold the stack's lock that long, so the wait is split:
- `DrainStart` is made once, when the tenant reaches stage drained: it cancels the pending jobs
  (with GrpJobs=0 and the partition DOWN they can never start) and lists them, and in `hard` mode
  sends TERM to the whole of every running job. It records when, so that reruns measure the
  drain from its real start. Moving the mode from graceful to hard later sends the TERM then.
- `Drained` waits at most `wait_seconds` for the tenant's queue to empty, looking every
  SLURM_DRAIN_POLL_SECONDS (`Settings.drain_poll`), saying how it goes (`progress`), then fails
  with the progress (jobs left, the latest expected end) and the instruction to rerun
  `pulumi up`. In `hard` mode, once `timeout_seconds` have passed since the TERM, it ends what
  is left (KILL). A graceful drain past `timeout_seconds` says to switch to hard. A job stuck
  completing (`queue.stuck_completing`), which no wait ends, fails it with the runbook's way out
  as soon as only such jobs are left. Made once the queue is empty.

Both are records of what was done: deleting them (rollback to active, or destroy) does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers import progress
from providers.base import Field, Schema, SchemaProvider
from providers.errors import SlurmError
from providers.slurm import values
from providers.slurm.queue import Job, SlurmQueue, described, stuck_completing, unstick
from providers.slurm.settings import Settings

__all__ = ["NEEDS_HARD_DRAIN", "STILL_DRAINING", "DrainStartProvider", "DrainedProvider"]

# What a drain still waiting for the queue says when its `up` gives up, and what one says that
# only a new pull request can move on: whoever reruns `up` for the operator tells them apart.
STILL_DRAINING = "jobs still in the queue"
NEEDS_HARD_DRAIN = "switch lifecycle.drain_mode to hard"


def _mode(value: Any) -> str:
    return values.choice(value, ("graceful", "hard"))


def _seconds(value: Any) -> int:
    return values.count(int(value) if isinstance(value, float) else value)


def _moment(value: Any) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a time in seconds since the epoch")
    return float(value)


_COMMON = (
    Field("tenant", values.name),
    Field("accounts", values.names),
    Field("mode", _mode),
)
START = Schema(kind="drain start", fields=_COMMON)
DRAINED = Schema(
    kind="drain",
    fields=(
        *_COMMON,
        Field("started_at", _moment),
        Field("term_sent_at", _moment, default=None),
        Field("timeout_seconds", _seconds),
        Field("wait_seconds", _seconds),
    ),
)


def _queue() -> SlurmQueue:
    return SlurmQueue(Settings.from_environment().make_transport())


def _when(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


class _RecordProvider(SchemaProvider):
    error = SlurmError

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # What the drain did; nothing live stands behind it to drift.
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """A record: the jobs it ended stay ended."""


class DrainStartProvider(_RecordProvider):
    schema = START

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.load(props, f"starting the drain of tenant {props.get('tenant')!r}")
        queue = _queue()
        jobs = queue.jobs(p["accounts"])
        pending = [job for job in jobs if job.pending]
        if pending:
            queue.cancel_pending(p["accounts"])
        outputs = {**p, "started_at": time.time(), "cancelled": [str(j) for j in pending]}
        outputs["term_sent_at"] = self._terminate(queue, p, jobs)
        return CreateResult(p["tenant"], outputs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        p = self.load(news, f"changing the drain of tenant {news.get('tenant')!r}")
        term_sent_at = olds.get("term_sent_at")
        if term_sent_at is None:
            queue = _queue()
            term_sent_at = self._terminate(queue, p, queue.jobs(p["accounts"]))
        kept = {key: olds.get(key) for key in ("started_at", "cancelled")}
        return UpdateResult({**p, **kept, "term_sent_at": term_sent_at})

    @staticmethod
    def _terminate(queue: SlurmQueue, p: Mapping[str, Any], jobs: list[Job]) -> float | None:
        """Hard mode's TERM to every running job; when it was sent (None: graceful)."""
        if p["mode"] != "hard":
            return None
        queue.signal([job for job in jobs if not job.pending], "TERM")
        return time.time()


class DrainedProvider(_RecordProvider):
    schema = DRAINED

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.load(props, f"draining tenant {props.get('tenant')!r}")
        return CreateResult(p["tenant"], self._drain(p))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._drain(self.load(news, f"draining tenant {news['tenant']!r}")))

    def _drain(self, p: Mapping[str, Any]) -> dict[str, Any]:
        doing = f"draining tenant {p['tenant']!r} ({p['mode']})"
        settings = Settings.from_environment()
        queue = SlurmQueue(settings.make_transport())
        deadline = time.monotonic() + p["wait_seconds"]
        killed = False
        next_word = time.monotonic() + progress.EVERY
        while True:
            jobs = queue.jobs(p["accounts"])
            if not jobs:
                return {**p, "drained_at": time.time()}
            if not killed and self._grace_over(p):
                queue.end(jobs)
                killed = True
            stuck = stuck_completing(jobs, settings.stuck_completing, time.time())
            left = deadline - time.monotonic()
            # No wait ends a job stuck completing: once only those are left, say so at once.
            if stuck and (left <= 0 or len(stuck) == len(jobs)):
                raise SlurmError(doing, _stuck(stuck), f"{unstick(stuck)}; then run `pulumi up`")
            if left <= 0:
                raise SlurmError(doing, _progress(p, jobs), _next_step(p))
            if time.monotonic() >= next_word:
                progress.say(f"{doing}: {_progress(p, jobs)}; {left:.0f}s left to wait")
                next_word += progress.EVERY
            # The last look is at the deadline, not a poll past it.
            time.sleep(min(settings.drain_poll, left))

    @staticmethod
    def _grace_over(p: Mapping[str, Any]) -> bool:
        term = p["term_sent_at"]
        return (
            p["mode"] == "hard" and term is not None and time.time() >= term + p["timeout_seconds"]
        )


def _progress(p: Mapping[str, Any], jobs: list[Job]) -> str:
    running = [job for job in jobs if not job.pending]
    ends = sorted(job.end for job in running if job.end[:1].isdigit())
    latest = f"; the latest expected end is {ends[-1]}" if ends else ""
    listed = ", ".join(str(job) for job in jobs[:10])
    return f"{len(jobs)} {STILL_DRAINING} ({listed}){latest}"


def _stuck(jobs: list[Job]) -> str:
    return f"{len(jobs)} jobs stuck completing (CG): {described(jobs)}"


def _next_step(p: Mapping[str, Any]) -> str:
    started = float(p["started_at"])
    if p["mode"] == "hard":
        kill_at = (p["term_sent_at"] or started) + p["timeout_seconds"]
        return (
            f"TERM was sent; what is left is killed at {_when(kill_at)}: run `pulumi up` again "
            "then (nothing is done twice)"
        )
    if time.time() > started + p["timeout_seconds"]:
        return (
            f"the drain started {_when(started)} and is past lifecycle.drain_timeout: "
            f"{NEEDS_HARD_DRAIN} (TERM, then KILL after the grace) and run `pulumi up`"
        )
    return (
        "the running jobs are left to finish (graceful drain): run `pulumi up` again later; it "
        f"completes once the queue is empty (drain started {_when(started)})"
    )
