"""The retention store's resources as the program declares them: what offboarding keeps."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
from pulumi.dynamic import Resource

from providers.retention.archive_provider import SlurmArchiveProvider

__all__ = ["SlurmArchive"]


class SlurmArchive(Resource, module="retention", name="SlurmArchive"):
    """One kind of the tenant's Slurm records (jobs, steps, associations, logs) archived at
    `key` until `retention_until`. Declare it protected, with plain values only: it must not
    depend on anything `destroy` deletes."""

    key: pulumi.Output[str]
    url: pulumi.Output[str]
    rows: pulumi.Output[int]
    size: pulumi.Output[int]
    retention_until: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        kind: str,
        accounts: Sequence[str],
        retention_days: int,
        allow_empty: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "kind": kind,
            "accounts": list(accounts),
            "retention_days": retention_days,
            "allow_empty": allow_empty,
            **dict.fromkeys(("key", "url", "etag", "rows", "size", "retention_until")),
        }
        super().__init__(SlurmArchiveProvider(), resource_name, inputs, opts)
