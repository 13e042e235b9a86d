"""The units a byte count is written in, one table for every place that reads or writes a size:
the spec's sizes (`tenant_stack.spec.quantities`), which also writes them back, and the storage
quantities the cluster returns (`tenant_stack.live`). SI units are powers of 1000 (`100GB`,
`100G`, Kubernetes' `11000G`), IEC units powers of 1024 (`10Ti`, `16GiB`).
"""

from __future__ import annotations

__all__ = ["UNITS"]

UNITS: dict[str, int] = {
    "B": 1,
    **{f"{p}{b}": 1000**i for i, p in enumerate("KMGTPE", 1) for b in ("", "B")},
    "kB": 1000,
    "k": 1000,
    **{f"{p}i{b}": 1024**i for i, p in enumerate("KMGTPE", 1) for b in ("", "B")},
}
