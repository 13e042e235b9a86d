"""Judging runbook step 7's smoke tests from what their jobs printed: the tools' own output
(`nvidia-smi -L`, `nvidia-smi --query-gpu`, nccl-tests' `all_reduce_perf`, `dd`, `df -h`) and
the jobs' accounting records. Each check passes or fails with its evidence, and a failure
carries the runbook's fix for its cause.

The evidence holds what was read out of the output and checked (counts, figures, a GPU model, a
mount), never the output itself: the job's user writes it, and the evidence goes into the
handover sheet and the tenant's ledger. The output stays in the run's directory.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from providers.slurm.batch import JobRecord

__all__ = [
    "AllReduce",
    "Verdict",
    "all_reduce",
    "df_mount",
    "gpus_listed",
    "gpus_queried",
    "judge_all_reduce",
    "judge_gpus",
    "judge_partition",
    "judge_scratch",
]

# The runbook's fixes, one per cause it warns of.
FIX_PARTITION = (
    "the partition must hold exactly the reservation's nodes (runbook 4d): run `pulumi up` on the "
    "tenant's stack, then `gpu-tenants diagnose {slug}`"
)
FIX_CONSTRAIN_DEVICES = (
    "ConstrainDevices=yes is missing in cgroup.conf: fix it in the SUNK chart's values for the "
    "whole cluster, not for this tenant (runbook 7a)"
)
FIX_NETWORK = (
    "run network validation before declaring the tenant operational: PCIe ACS still on, NCCL "
    "not on the InfiniBand plane, a fabric MTU mismatch (runbook 7b)"
)
FIX_SCRATCH = (
    "/scratch is not the Weka mount in the slurmd pod: add the volume mount to the SUNK NodeSet "
    "template (runbook 7c)"
)

_LISTED = re.compile(r"GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)\s*")
# A GPU model as nvidia-smi names one (`NVIDIA H100 80GB HBM3`).
_QUERIED = re.compile(r"([A-Za-z0-9][A-Za-z0-9 ._()/-]{0,63}), (\d+) MiB\s*")
# A size or a mount point as df prints one.
_DF_FIELD = re.compile(r"[A-Za-z0-9_.,:/@+-]{1,128}")
# A result row of nccl-tests: size, count, type, redop, root, then time, algbw, busbw and #wrong
# out of place and in place.
_ROW = re.compile(
    r"\s*(\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+"
    r"\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+(\S+)"
    r"\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+(\S+)\s*"
)
_COPIED = re.compile(r"^(\d+) bytes .* copied")


@dataclass(frozen=True)
class Verdict:
    check: str
    job: str
    node: str
    passed: bool
    evidence: str
    fix: str = ""

    @property
    def result(self) -> str:
        return "passed" if self.passed else "FAILED"


@dataclass(frozen=True)
class AllReduce:
    size: int  # bytes, of the largest message
    busbw: float  # GB/s, out of place, at that size
    wrong: int  # values that came back wrong, over every row


def gpus_listed(output: str) -> list[str]:
    """The GPUs `nvidia-smi -L` printed, as their UUIDs."""
    return [m.group(3) for line in output.splitlines() if (m := _LISTED.fullmatch(line))]


def gpus_queried(output: str) -> list[str]:
    """The lines of `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`."""
    return [line.strip() for line in output.splitlines() if _QUERIED.fullmatch(line)]


def all_reduce(output: str) -> AllReduce | None:
    """nccl-tests' result rows, read at the largest message; None if it printed none."""
    rows = [m for line in output.splitlines() if (m := _ROW.fullmatch(line))]
    if not rows:
        return None
    largest = max(rows, key=lambda m: int(m.group(1)))
    wrong = sum(_count(m.group(3)) + _count(m.group(5)) for m in rows)
    return AllReduce(int(largest.group(1)), float(largest.group(2)), wrong)


def _count(field: str) -> int:
    # nccl-tests prints N/A in #wrong when it did not check (-c 0).
    return int(field) if field.isdigit() else 0


def df_mount(output: str) -> tuple[str, str] | None:
    """(size, mount point) of the line under `df -h`'s header, or None without one."""
    lines = output.splitlines()
    for header, line in itertools.pairwise(lines):
        if header.split()[:1] == ["Filesystem"] and header.rstrip().endswith("Mounted on"):
            fields = line.split()
            if len(fields) >= 6 and all(_DF_FIELD.fullmatch(f) for f in (fields[1], fields[-1])):
                return fields[1], fields[-1]
    return None


def _copied(output: str) -> list[int]:
    """The bytes each finished `dd` copied: its summary follows `records out` (the lines of
    status=progress, each after a carriage return, say `copied` too, as it goes)."""
    lines = output.splitlines()
    return [
        int(m.group(1))
        for before, line in itertools.pairwise(lines)
        if before.endswith("records out") and (m := _COPIED.match(line))
    ]


def _ran(record: JobRecord) -> str:
    return f"job {record.state.lower()} ({record.exit_code}); its output is in the run's directory"


def judge_partition(
    slug: str, partition: str, shown: Sequence[str], reserved: Sequence[str]
) -> Verdict:
    """7a: sinfo shows the partition, with the reservation's nodes when the tenant has one."""
    seen = f"sinfo -p {partition}: {', '.join(shown) or 'no such partition'}"
    if not shown:
        return Verdict("7a partition", "-", "-", False, seen, FIX_PARTITION.format(slug=slug))
    if reserved and sorted(shown) != sorted(reserved):
        extra = sorted(set(shown) - set(reserved))
        missing = sorted(set(reserved) - set(shown))
        wrong = "; ".join(
            part
            for part in (
                f"not reserved for it: {', '.join(extra)}" if extra else "",
                f"reserved but missing: {', '.join(missing)}" if missing else "",
            )
            if part
        )
        evidence = f"{seen} ({wrong})"
        return Verdict("7a partition", "-", "-", False, evidence, FIX_PARTITION.format(slug=slug))
    return Verdict("7a partition", "-", "-", True, seen)


def judge_gpus(record: JobRecord, nodes: Sequence[str], output: str, asked: int) -> Verdict:
    """7a: the job saw exactly the GPUs it asked for."""
    node = ", ".join(nodes) or "-"
    listed = gpus_listed(output)
    if len(listed) > asked:
        evidence = f"nvidia-smi -L lists {len(listed)} GPUs to a job that asked for {asked}"
        return Verdict("7a GPUs", record.id, node, False, evidence, FIX_CONSTRAIN_DEVICES)
    if record.state != "COMPLETED" or len(listed) != asked:
        evidence = f"{len(listed)} of {asked} GPUs listed; {_ran(record)}"
        return Verdict("7a GPUs", record.id, node, False, evidence)
    models = ", ".join(gpus_queried(output)) or "no --query-gpu line"
    return Verdict("7a GPUs", record.id, node, True, f"{asked} GPU seen: {models}")


def judge_all_reduce(
    record: JobRecord,
    nodes: Sequence[str],
    tenant_nodes: Sequence[str],
    output: str,
    min_busbw: float,
    slug: str,
) -> Verdict:
    """7b: a two-node all-reduce ran on two of the tenant's nodes at the SKU's bandwidth."""
    node = ", ".join(nodes) or "-"
    outside = sorted(set(nodes) - set(tenant_nodes))
    if outside:
        evidence = f"ran on {', '.join(outside)}, outside the tenant's partition"
        return Verdict(
            "7b all-reduce", record.id, node, False, evidence, FIX_PARTITION.format(slug=slug)
        )
    result = all_reduce(output)
    if record.state != "COMPLETED" or result is None or len(set(nodes)) != 2:
        evidence = f"on {len(set(nodes))} node(s); {_ran(record)}"
        return Verdict("7b all-reduce", record.id, node, False, evidence)
    at = f"busbw {result.busbw:g} GB/s at {result.size} B (the SKU's bar: {min_busbw:g} GB/s)"
    if result.wrong:
        evidence = f"{result.wrong} wrong values; {at}"
        return Verdict("7b all-reduce", record.id, node, False, evidence, FIX_NETWORK)
    if result.busbw < min_busbw:
        return Verdict("7b all-reduce", record.id, node, False, at, FIX_NETWORK)
    return Verdict("7b all-reduce", record.id, node, True, at)


def judge_scratch(record: JobRecord, nodes: Sequence[str], output: str, scratch: str) -> Verdict:
    """7c: the scratch directory is a mount, not the node's root filesystem, and a write and a
    read back of it succeeded."""
    node = ", ".join(nodes) or "-"
    if f"{scratch}: No such file or directory" in output:
        evidence = f"{scratch} does not exist on the node"
        return Verdict("7c scratch", record.id, node, False, evidence, FIX_SCRATCH)
    mount = df_mount(output)
    if mount is not None and mount[1] == "/":
        evidence = f"df -h {scratch}: {mount[0]} on / (the node's root filesystem)"
        return Verdict("7c scratch", record.id, node, False, evidence, FIX_SCRATCH)
    copies = _copied(output)
    if record.state != "COMPLETED" or mount is None or len(copies) < 2:
        return Verdict("7c scratch", record.id, node, False, _ran(record))
    written = copies[0] // 2**20
    evidence = f"wrote and read back {written} MiB; df -h: {mount[0]} on {mount[1]}"
    return Verdict("7c scratch", record.id, node, True, evidence)
