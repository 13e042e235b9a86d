"""Faults the tests inject into the sandbox's Slurm, as they happen on real nodes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sandbox.slurm.settings import SlurmSettings

__all__ = ["epilog_hangs"]


@contextmanager
def epilog_hangs(settings: SlurmSettings, node: str) -> Iterator[None]:
    """While it lasts, every job that ends on `node` stays COMPLETING: the node's epilog waits,
    as one stuck on a wedged process does (the offboarding runbook's "scancel hits a job in CG").
    Lifted on leaving, so the epilogs it held finish within a second."""
    fault = settings.epilog_fault(node)
    fault.touch()
    try:
        yield
    finally:
        fault.unlink(missing_ok=True)
