"""Running one piece of fleet work per stack, a bounded number at a time.

Threads suffice: each piece waits on a `pulumi` process of its own, which does the work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

__all__ = ["fan_out"]

Item = TypeVar("Item")
Result = TypeVar("Result")


def fan_out(
    items: Sequence[Item],
    work: Callable[[Item], Result],
    workers: int,
    done: Callable[[Result], None] = lambda _: None,
) -> list[Result]:
    """`work` on every item, at most `workers` at once; `done` hears of each result as it ends
    (for progress). The results are in the order of `items`."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        running = {pool.submit(work, item): index for index, item in enumerate(items)}
        results: dict[int, Result] = {}
        for future in as_completed(running):
            results[running[future]] = future.result()
            done(results[running[future]])
    return [results[index] for index in range(len(items))]
