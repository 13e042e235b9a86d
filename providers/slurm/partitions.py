"""Tenant partitions as lines of the file that slurm.conf includes (runbook step 4d).

slurm.conf keeps what survives a restart or `scontrol reconfigure`: live `scontrol create` or
`update` changes are lost then. So a partition is one `PartitionName=...` line of that file,
rewritten whole while every other line stays byte for byte, and applied with `scontrol
reconfigure`. Before writing, a line is rendered, parsed back and compared (a syntax error in an
included file breaks every Slurm client), and its nodes are checked against the nodes slurmctld
knows (an unknown node name makes slurmctld exit on reconfigure).

Pure functions over text, plus the file's lock (writes go through `providers.files.write_atomic`);
running scontrol is the client's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from providers.files import exclusive_lock
from providers.slurm import values

__all__ = [
    "OVERSUBSCRIBE",
    "PREEMPT_MODES",
    "STATES",
    "Entry",
    "Partition",
    "find_partition",
    "line_of",
    "locked",
    "parse_file",
    "parse_line",
    "parse_node_names",
    "parse_show_partition",
    "render_line",
    "set_partition",
    "shows",
    "unknown_nodes",
]

STATES = ("UP", "DOWN")
PREEMPT_MODES = ("OFF", "CANCEL", "REQUEUE")
OVERSUBSCRIBE = ("EXCLUSIVE", "NO")
# The keys this provider writes, in the runbook's order. slurm.conf reads keys case-insensitively.
_KEYS = {
    "name": "PartitionName",
    "nodes": "Nodes",
    "allow_accounts": "AllowAccounts",
    "default": "Default",
    "state": "State",
    "max_time": "MaxTime",
    "default_time": "DefaultTime",
    "preempt_mode": "PreemptMode",
    "oversubscribe": "OverSubscribe",
}
_BY_LOWER = {key.lower(): key for key in _KEYS.values()}
_SAFE_VALUE = re.compile(r"[A-Za-z0-9_.:,\[\]-]+")


@dataclass(frozen=True)
class Partition:
    """A partition as this provider writes it, or as `scontrol show partition` reports it (then
    its values are Slurm's: times as `1-00:00:00`, and anything Slurm allows)."""

    name: str
    nodes: str
    allow_accounts: tuple[str, ...]
    max_time: str
    default_time: str
    preempt_mode: str
    oversubscribe: str
    state: str
    default: str = "NO"

    def pairs(self) -> dict[str, str]:
        """As `Key=Value` pairs of slurm.conf, in the runbook's order."""
        found = {}
        for attribute, key in _KEYS.items():
            value = getattr(self, attribute)
            found[key] = ",".join(value) if isinstance(value, tuple) else value
        return found


def _validate(p: Partition) -> None:
    values.name(p.name)
    values.expand_hosts(p.nodes)
    if not p.allow_accounts:
        raise ValueError("AllowAccounts must name at least one account")
    values.names(p.allow_accounts)
    max_time = values.seconds(p.max_time)
    default_time = values.seconds(p.default_time)
    if default_time is None:
        raise ValueError("DefaultTime must be a time limit, not UNLIMITED")
    if max_time is not None and default_time > max_time:
        raise ValueError(f"DefaultTime {p.default_time} is longer than MaxTime {p.max_time}")
    values.choice(p.preempt_mode, PREEMPT_MODES)
    values.choice(p.oversubscribe, OVERSUBSCRIBE)
    values.choice(p.state, STATES)
    values.choice(p.default, ("NO",))


def render_line(p: Partition) -> str:
    """The partition's line of the include file, with its newline. Refuses (ValueError) anything
    that would not parse back to exactly these values."""
    _validate(p)
    pairs = p.pairs()
    for key, value in pairs.items():
        if not _SAFE_VALUE.fullmatch(value):
            raise ValueError(f"{key}={value!r} holds characters slurm.conf would misread")
    line = " ".join(f"{key}={value}" for key, value in pairs.items())
    if parse_line(line) != pairs:
        raise ValueError(f"the rendered line does not parse back to its values: {line!r}")
    return line + "\n"


def parse_line(text: str) -> dict[str, str]:
    """`Key=Value` pairs of one logical slurm.conf line; the keys this provider writes are spelt
    as it writes them, whatever their case in the file. Comments are dropped."""
    pairs: dict[str, str] = {}
    for token in text.split("#", 1)[0].split():
        key, _, value = token.partition("=")
        pairs[_BY_LOWER.get(key.lower(), key)] = value
    return pairs


@dataclass(frozen=True)
class Entry:
    """One logical line of the file, as its physical lines (continuations and newlines kept);
    `name` is its partition, None for comments and other configuration."""

    text: str
    name: str | None


def parse_file(text: str) -> list[Entry]:
    entries: list[Entry] = []
    pending = ""
    for physical in text.splitlines(keepends=True):
        pending += physical
        # A trailing backslash continues the logical line on the next physical one.
        if physical.rstrip("\r\n").endswith("\\"):
            continue
        entries.append(_entry(pending))
        pending = ""
    if pending:
        entries.append(_entry(pending))
    return entries


def _logical_pairs(text: str) -> dict[str, str]:
    """`parse_line` of a logical line still written as its physical lines."""
    return parse_line(text.replace("\\\n", " "))


def _entry(text: str) -> Entry:
    return Entry(text, _logical_pairs(text).get("PartitionName"))


def find_partition(text: str, name: str) -> dict[str, str] | None:
    """The `Key=Value` pairs of partition `name` in the file, or None."""
    for entry in parse_file(text):
        if entry.name == name:
            return _logical_pairs(entry.text)
    return None


def line_of(text: str, name: str) -> str | None:
    """Partition `name`'s line in the file as written there (continuations kept), or None."""
    return next((entry.text for entry in parse_file(text) if entry.name == name), None)


def shows(text: str, name: str, line: str | None) -> bool:
    """Whether the file holds partition `name` as `line` says (None: holds no such partition),
    whatever other writers did to the other lines."""
    found = find_partition(text, name)
    if line is None:
        return found is None
    return found == _logical_pairs(line)


def set_partition(text: str, name: str, line: str | None) -> str:
    """The file with partition `name`'s line replaced by `line` (appended when absent; removed
    when `line` is None). Every other line is kept as it was."""
    out: list[str] = []
    placed = False
    for entry in parse_file(text):
        if entry.name != name:
            out.append(entry.text)
        elif line is not None and not placed:
            out.append(line)
            placed = True
    if line is not None and not placed:
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        out.append(line)
    return "".join(out)


def unknown_nodes(text: str, known: set[str]) -> dict[str, list[str]]:
    """Per partition of the file, the nodes it names that slurmctld does not know. Node lists
    this module cannot expand (`ALL`, several bracket groups) are left to Slurm."""
    unknown: dict[str, list[str]] = {}
    for entry in parse_file(text):
        nodes = _logical_pairs(entry.text).get("Nodes")
        if entry.name is None or not nodes or nodes.upper() == "ALL":
            continue
        try:
            missing = [node for node in values.expand_hosts(nodes) if node not in known]
        except ValueError:
            continue
        if missing:
            unknown[entry.name] = missing
    return unknown


def parse_show_partition(text: str) -> Partition | None:
    """`scontrol show partition NAME -o` (one line); None when it says the partition is not
    found or prints nothing."""
    line = text.strip()
    if not line.startswith("PartitionName="):
        return None
    pairs = parse_line(line)
    return Partition(
        name=pairs["PartitionName"],
        nodes=pairs.get("Nodes", ""),
        allow_accounts=tuple(sorted(a for a in pairs.get("AllowAccounts", "").split(",") if a)),
        max_time=pairs.get("MaxTime", ""),
        default_time=pairs.get("DefaultTime", ""),
        preempt_mode=pairs.get("PreemptMode", ""),
        oversubscribe=pairs.get("OverSubscribe", ""),
        state=pairs.get("State", ""),
        default=pairs.get("Default", ""),
    )


def parse_node_names(text: str) -> set[str]:
    """The node names in `scontrol show node -o` (one node a line, `NodeName=` first)."""
    return {
        line.split(None, 1)[0].removeprefix("NodeName=")
        for line in text.splitlines()
        if line.startswith("NodeName=")
    }


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Holds an exclusive lock beside `path` for one read-modify-write-reconfigure, so that two
    tenant stacks applied at once do not lose each other's line. A separate lock file, because
    the atomic write replaces `path`'s inode."""
    with exclusive_lock(path.with_name(f".{path.name}.lock")):
        yield
