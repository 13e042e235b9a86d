"""What the commands' text shares, for a person at a terminal: plain text, coloured only when
the stream is a terminal and NO_COLOR is unset (https://no-color.org)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TextIO

COLOURS = {"clean": "32", "drift": "33", "error": "31", "no-changes": "32", "changes": "33"}
COLOURS |= {"ok": "32", "failed": "31", "changed": "33", "unchanged": "32", "not run": "33"}
COLOURS |= {"True": "32", "False": "31", "Unknown": "33"}


def wants_colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")


def paint(status: str, colour: bool) -> str:
    return f"\033[{COLOURS[status]}m{status}\033[0m" if colour else status


def table(
    header: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
    painted: Callable[[str], str] = str,
) -> str:
    """Columns aligned on the cells' text; `painted` may colour a cell without moving them."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            painted(str(cell)) + " " * (width - len(str(cell)))
            for cell, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in [header, *rows]
    )
