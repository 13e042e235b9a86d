"""sacctmgr's options: how each kind of value is written as an argument of `add` and `modify ...
set`, and read back from a column of `show -P`. The Slurm field table (`props`) names, for each
field sacctmgr keeps, its option and one of these forms.

On `modify`, a value that is not set is cleared where Slurm has a way to (`-1`), and left alone
where the association inherits it from its parent (a QoS binding); on `add` it is simply not
written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FLAGS",
    "FREE_TEXT",
    "GPU",
    "GPU_TRES",
    "INHERITED_NAME",
    "INHERITED_NAMES",
    "LIMIT",
    "NUMBER",
    "PREEMPT_MODE",
    "TEXT",
    "WALL",
    "Form",
    "Option",
    "tres",
]

GPU = "gres/gpu"


def _unset(value: Any) -> bool:
    # 0 is a limit (a frozen account's GrpJobs): only None and an empty list are no value.
    return value is None or value == ()


def _joined(value: Any) -> str:
    return ",".join(value) if isinstance(value, tuple | list) else str(value)


def _always(option: str, value: Any, _clear: bool) -> list[str]:
    return [f"{option}={_joined(value)}"]


def _cleared(option: str, value: Any, clear: bool) -> list[str]:
    if _unset(value):
        return [f"{option}=-1"] if clear else []
    return [f"{option}={_joined(value)}"]


def _inherited(option: str, value: Any, _clear: bool) -> list[str]:
    return [] if value is None else [f"{option}={_joined(value)}"]


def _gpu_tres(option: str, value: Any, clear: bool) -> list[str]:
    # Only the GPU entry is touched: -1 on one TRES clears that TRES and keeps the others.
    if value is None:
        return [f"{option}={GPU}=-1"] if clear else []
    return [f"{option}={GPU}={value}"]


def _preempt_mode(option: str, value: Any, _clear: bool) -> list[str]:
    # slurmdbd stores (and prints) PreemptMode=OFF on a QoS as `cluster`.
    return [f"{option}={'OFF' if value == 'cluster' else str(value).upper()}"]


def _count(text: str) -> int | None:
    return int(text) if text else None


def _list(text: str) -> tuple[str, ...]:
    return tuple(sorted(item for item in text.split(",") if item))


def _or_none(text: str) -> str | None:
    return text or None


def tres(text: str, name: str = GPU) -> int | None:
    """One TRES from a list such as `cpu=4,gres/gpu=64`."""
    for item in text.split(","):
        key, _, count = item.partition("=")
        if key == name:
            return int(count)
    return None


@dataclass(frozen=True)
class Form:
    """How sacctmgr takes a value (`write(option, value, clear)`: the arguments; `clear` on
    `modify`) and prints it back (`read`). `last`: free text, which `show` must print as its
    last column so that a `|` inside it cannot shift the others."""

    write: Callable[[str, Any, bool], list[str]]
    read: Callable[[str], Any]
    last: bool = False


TEXT = Form(_always, str)
FREE_TEXT = Form(_always, str, last=True)
NUMBER = Form(_always, lambda text: int(text or 0))
LIMIT = Form(_cleared, _count)
GPU_TRES = Form(_gpu_tres, tres)
WALL = Form(_cleared, _or_none)
FLAGS = Form(_cleared, _list)
INHERITED_NAMES = Form(_inherited, _list)
INHERITED_NAME = Form(_inherited, _or_none)
PREEMPT_MODE = Form(_preempt_mode, str)


@dataclass(frozen=True)
class Option:
    """A sacctmgr option: `name` as `add` and `modify ... set` take it, `column` as `show
    format=` prints it (when it is spelt otherwise), and whether it is kept on the account or
    user record (`on_record`) rather than on each of its associations."""

    name: str
    form: Form = TEXT
    column: str = ""
    on_record: bool = False

    @property
    def shown_as(self) -> str:
        return self.column or self.name
