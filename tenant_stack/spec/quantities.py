"""Quantities as a spec writes them: durations, sizes and CPU. Each is parsed into the number
Slurm, Weka or Kubernetes takes, and written back in the unit a reviewer would have used, so a
message quotes the spec in its own terms.

Durations are parsed here rather than passed to Slurm because Slurm's own forms mislead: it reads
`24:00` as 24 minutes (MM:SS) where a person reads 24 hours, and a bare number as minutes; both are
refused. Wall limits are whole minutes, Slurm's resolution.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import total_ordering
from typing import Annotated

from pydantic import BeforeValidator, PlainValidator

from tenant_stack.sizes import UNITS


@total_ordering
@dataclass(frozen=True)
class Duration:
    """A time limit in seconds; `seconds=None` is Slurm's UNLIMITED, longer than any other."""

    seconds: int | None

    def _key(self) -> float:
        return math.inf if self.seconds is None else self.seconds

    def __lt__(self, other: Duration) -> bool:
        return self._key() < other._key()

    def slurm(self) -> str:
        """As Slurm writes a time limit: `UNLIMITED`, `04:00:00` or `1-00:00:00`."""
        if self.seconds is None:
            return "UNLIMITED"
        days, rest = divmod(self.seconds, 86400)
        clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
        return f"{days}-{clock}" if days else clock

    def __str__(self) -> str:
        if self.seconds is None:
            return "UNLIMITED"
        parts, rest = [], self.seconds
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
            count, rest = divmod(rest, size)
            if count:
                parts.append(f"{count}{unit}")
        return "".join(parts)


_UNITS = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
_CLOCK = re.compile(r"(?:([0-9]+)-)?([0-9]+):([0-5][0-9]):([0-5][0-9])")
_DAYS_HOURS = re.compile(r"([0-9]+)-([0-9]+)(?::([0-5][0-9]))?")
_DURATION_HINT = "such as '24h', '90m', '1d12h', '1-00:00:00', '24:00:00' or 'UNLIMITED'"


def parse_duration(value: object) -> Duration:
    """A duration as written in a spec: units (`24h`, `1d12h`, `90s`), Slurm's `[D-]HH:MM:SS` and
    `D-HH[:MM]`, or `UNLIMITED`. Raises ValueError saying what would be right."""
    if not isinstance(value, str):
        raise ValueError(
            f"write a duration as text {_DURATION_HINT}; a bare number is ambiguous "
            f"(Slurm reads it as minutes), got {value!r}"
        )
    text = value.strip()
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return Duration(None)
    if re.fullmatch(r"[0-9]+:[0-9]{2}", text):
        raise ValueError(
            f"{text!r} is ambiguous: Slurm reads MM:SS, so it would be {text.split(':')[0]} "
            f"minutes; write hours as '{text}:00' or '{text.split(':')[0]}h'"
        )
    seconds: int | None = None
    if match := (_UNITS.fullmatch(text) if text else None) or _CLOCK.fullmatch(text):
        d, h, m, s = (int(part or 0) for part in match.groups())
        seconds = ((d * 24 + h) * 60 + m) * 60 + s
    elif match := _DAYS_HOURS.fullmatch(text):
        d, h, m = (int(part or 0) for part in match.groups())
        seconds = ((d * 24 + h) * 60 + m) * 60
    if seconds is None:
        raise ValueError(f"{text!r} is not a duration; write one {_DURATION_HINT}")
    if seconds == 0:
        raise ValueError(f"{text!r} is zero; a limit must be longer than that")
    return Duration(seconds)


def _wall_time(value: object) -> Duration:
    duration = parse_duration(value)
    if duration.seconds is not None and duration.seconds % 60:
        raise ValueError(f"{value!r}: Slurm time limits are whole minutes; round it to minutes")
    return duration


def _bounded(value: object) -> Duration:
    duration = parse_duration(value)
    if duration.seconds is None:
        raise ValueError("must be bounded; UNLIMITED would let the stage wait forever")
    return duration


WallTime = Annotated[Duration, PlainValidator(_wall_time)]
BoundedDuration = Annotated[Duration, PlainValidator(_bounded)]

_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?([A-Za-z]+)")


def parse_size(value: object) -> int:
    """Bytes from a size with its unit: SI (`100GB`, `50TB`, `100G`) or IEC (`10Ti`, `16GiB`)."""
    hint = "such as '100GB', '50TB' (SI, powers of 1000) or '10Ti', '16GiB' (IEC, powers of 1024)"
    if not isinstance(value, str):
        raise ValueError(f"write a size as text with its unit, {hint}, got {value!r}")
    match = _SIZE.fullmatch(value.strip())
    if not match or match.group(2) not in UNITS:
        raise ValueError(f"{value!r} is not a size; write one {hint}")
    size = Decimal(match.group(1)) * UNITS[match.group(2)]
    if size != size.to_integral_value() or size <= 0:
        raise ValueError(f"{value!r} is not a positive whole number of bytes")
    return int(size)


def parse_cpu(value: object) -> int:
    """Millicores from a Kubernetes CPU quantity: cores (`4`, `"1.5"`) or millicores (`"500m"`)."""
    hint = "write cores (4, '1.5') or millicores ('500m')"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not a CPU quantity; {hint}")
    text = str(value).strip()
    if match := re.fullmatch(r"([0-9]+)m", text):
        millicores = int(match.group(1))
    elif re.fullmatch(r"[0-9]+(\.[0-9]{1,3})?", text):
        millicores = int(Decimal(text) * 1000)
    else:
        raise ValueError(f"{value!r} is not a CPU quantity; {hint}")
    if millicores <= 0:
        raise ValueError(f"{value!r} is not positive")
    return millicores


Bytes = Annotated[int, BeforeValidator(parse_size)]
MilliCpu = Annotated[int, BeforeValidator(parse_cpu)]


def _largest_first(units: Iterable[str]) -> list[tuple[int, str]]:
    return sorted(((UNITS[unit], unit) for unit in units), reverse=True)


def _in_largest(count: int, units: list[tuple[int, str]]) -> str | None:
    """`count` in the largest of `units` that divides it exactly; None when none does."""
    for size, unit in units:
        if count % size == 0:
            return f"{count // size}{unit}"
    return None


_DISPLAY_UNITS = _largest_first(unit for unit in UNITS if unit[1:] in ("B", "iB"))
# Kubernetes' quantity suffixes (k8s.io/apimachinery resource.Quantity): no `B`, and `k`, not `K`.
_KUBERNETES_UNITS = _largest_first((*"kMGTPE", *(f"{p}i" for p in "KMGTPE")))
# The units a contract states capacity in, largest first.
_CONTRACT_UNITS = ("PB", "TB", "GB", "MB")


def format_size(count: int) -> str:
    """A byte count in the unit it was most likely written in: the largest that divides it."""
    return _in_largest(count, _DISPLAY_UNITS) or f"{count}B"


def kubernetes_quantity(count: int) -> str:
    """A byte count as a Kubernetes quantity, in the largest unit that divides it exactly."""
    return _in_largest(count, _KUBERNETES_UNITS) or str(count)


def readable_size(count: int) -> str:
    """A byte count for a person, as a contract states it: SI units with at most one decimal
    (`1.5 TB`), bytes when it is less than a megabyte or not a tenth of one."""
    for unit in _CONTRACT_UNITS:
        size = UNITS[unit]
        if count >= size and count % (size // 10) == 0:
            return f"{count / size:g} {unit}"
    return f"{count} bytes"


def approximate_size(count: int) -> str:
    """A byte count rounded for a person: one decimal in the largest SI unit under it."""
    unit = next((u for u in _CONTRACT_UNITS if count >= UNITS[u]), "B")
    return f"{count} bytes" if unit == "B" else f"{count / UNITS[unit]:.1f} {unit}"


def format_cpu(millicores: int) -> str:
    """Millicores as a Kubernetes quantity: whole cores as `4`, anything else as `1500m`."""
    return f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"
