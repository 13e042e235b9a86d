"""Rules for the values the Slurm provider writes, and the forms Slurm stores them in.

Each function takes a value as it arrives from Pulumi (numbers come as floats) or from Slurm's
output, raises ValueError saying what would be right, and returns it in one canonical form, so
that a value the program wrote and the value Slurm reads back compare equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

MAX_COUNT = 2**31 - 1  # Slurm keeps limits and priorities in 32-bit fields
OWNER_PREFIX = "gpu-tenants:"
# The QoS flags of Slurm 22.05 (sacctmgr(1)), spelt as sacctmgr prints them.
QOS_FLAGS = (
    "DenyOnLimit",
    "EnforceUsageThreshold",
    "NoDecay",
    "NoReserve",
    "OverPartQOS",
    "PartitionMaxNodes",
    "PartitionMinNodes",
    "PartitionTimeLimit",
    "RequiresReservation",
    "UsageFactorSafe",
)
# As slurmdbd stores them: PreemptMode=OFF on a QoS is stored (and printed) as `cluster`.
QOS_PREEMPT_MODES = ("cluster", "cancel", "requeue")

# Slurm lowercases account, QoS and user names; sacctmgr splits its arguments on ',' and '=' and
# its -P output on '|', and reads a leading '-' as an option. These rules exclude all of that.
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
_TEXT_UNSAFE = set("|,=\"'`\\#")
_CLOCK = re.compile(r"(?:([0-9]+)-)?([0-9]{2,}):([0-5][0-9]):([0-5][0-9])")
_HOSTS = re.compile(r"([a-z0-9][a-z0-9_.-]*?)(?:\[([0-9,-]+)\]([a-z0-9_.-]*))?")


def name(value: Any) -> str:
    """An account, QoS or partition name."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a Slurm name: use 1-40 lowercase letters, digits, '-' and '_', "
            "starting with a letter"
        )
    if value in ("root", "default", "all"):
        raise ValueError(f"{value!r} is reserved by Slurm")
    return value


def parent(value: Any) -> str:
    """An account's parent: `root` or another account."""
    return "root" if value in (None, "root") else name(value)


def user(value: Any) -> str:
    if not isinstance(value, str) or not _USER.fullmatch(value) or value == "root":
        raise ValueError(
            f"{value!r} is not a Slurm user name: use up to 32 lowercase letters, digits, "
            "'.', '-' and '_', starting with a letter or '_', and not 'root'"
        )
    return value


def text(value: Any) -> str:
    """A Description: one argv element, so spaces are fine, but nothing sacctmgr would split."""
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ValueError(f"{value!r} must be non-empty text without leading or trailing spaces")
    if not value.isprintable() or len(value) > 100:
        raise ValueError(f"{value!r} must be printable text on one line, at most 100 characters")
    unsafe = sorted(set(value) & _TEXT_UNSAFE)
    if unsafe or value.startswith("-"):
        shown = " ".join(repr(c) for c in unsafe) if unsafe else "a leading '-'"
        raise ValueError(f"{value!r} contains {shown}, which sacctmgr would misread")
    return value


def count(value: Any) -> int:
    """A non-negative limit. Pulumi sends numbers as floats; 64.0 is 64, 64.5 is an error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a whole number")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{value!r} is not a whole number")
    number = int(value)
    if not 0 <= number <= MAX_COUNT:
        raise ValueError(f"{number} is outside 0..{MAX_COUNT}")
    return number


def optional_count(value: Any) -> int | None:
    """A limit, or None for no limit. Slurm prints an unset limit as an empty field."""
    return None if value in (None, "") else count(int(value) if isinstance(value, str) else value)


def names(value: Any) -> tuple[str, ...]:
    """A set of names (QoS, AllowAccounts), sorted: Slurm keeps no order."""
    if isinstance(value, str):
        value = [part for part in value.split(",") if part]
    if not isinstance(value, list | tuple):
        raise ValueError(f"{value!r} is not a list of names")
    found = tuple(sorted({name(item) for item in value}))
    if len(found) != len(value):
        raise ValueError(f"{list(value)!r} names one entry twice")
    return found


def seconds(value: Any) -> int | None:
    """A time limit in seconds, None for UNLIMITED. Accepts `[D-]HH:MM:SS` and `UNLIMITED`: the
    form Slurm prints, and the only one a reader cannot mistake (Slurm reads `24:00` as 24
    minutes). Slurm keeps minutes, so seconds must be zero."""
    if isinstance(value, str) and value.upper() in ("UNLIMITED", "INFINITE"):
        return None
    match = _CLOCK.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"{value!r} is not a time limit: write [D-]HH:MM:SS or UNLIMITED")
    days, hours, minutes, secs = (int(part or 0) for part in match.groups())
    if secs:
        raise ValueError(f"{value!r}: Slurm keeps time limits in whole minutes")
    return ((days * 24 + hours) * 60 + minutes) * 60


def time_limit(value: Any) -> str:
    """A time limit in the form Slurm prints it: `24:00:00` becomes `1-00:00:00`."""
    total = seconds(value)
    if total is None:
        return "UNLIMITED"
    days, rest = divmod(total, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:00"
    return f"{days}-{clock}" if days else clock


def optional_time_limit(value: Any) -> str | None:
    """A QoS wall limit: None (and UNLIMITED, and Slurm's empty field) mean no limit."""
    if value in (None, ""):
        return None
    limit = time_limit(value)
    return None if limit == "UNLIMITED" else limit


def owner_mark(tenant: str) -> str:
    """The Description that marks a QoS as a tenant's (slurmdbd keeps it lowercased)."""
    return f"{OWNER_PREFIX}{tenant}"


def expand_hosts(value: Any) -> tuple[str, ...]:
    """The node names of a hostlist, sorted: `gpu-[01-03,05]` -> gpu-01, gpu-02, gpu-03, gpu-05.
    One bracket group per host expression, as Slurm prints lists of nodes named `<prefix>NN`."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} is not a hostlist such as 'gpu-[01-08]'")
    hosts: set[str] = set()
    for expression in _split_hostlist(value):
        match = _HOSTS.fullmatch(expression)
        if not match:
            raise ValueError(f"{expression!r} in {value!r} is not a host or 'prefix[01-08]'")
        prefix, ranges, suffix = match.groups()
        if ranges is None:
            hosts.add(prefix)
            continue
        for part in ranges.split(","):
            first, dash, last = part.partition("-")
            last = last if dash else first
            if not first.isdigit() or not last.isdigit() or int(last) < int(first):
                raise ValueError(f"{part!r} in {value!r} is not a range such as 01-08")
            width = len(first)
            for number in range(int(first), int(last) + 1):
                hosts.add(f"{prefix}{number:0{width}d}{suffix}")
    return tuple(sorted(hosts))


def _split_hostlist(value: str) -> Iterable[str]:
    """Splits on the commas outside brackets."""
    depth, start = 0, 0
    for index, char in enumerate(value):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            yield value[start:index]
            start = index + 1
    yield value[start:]


def choice(value: Any, allowed: Sequence[str]) -> str:
    """One of `allowed`, matched case-insensitively, returned as `allowed` spells it."""
    for option in allowed:
        if isinstance(value, str) and value.lower() == option.lower():
            return option
    raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
