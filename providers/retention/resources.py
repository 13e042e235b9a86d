"""The retention store's resources as the program declares them: what offboarding keeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
from pulumi.dynamic import Resource

from providers.retention.archive_provider import SlurmArchiveProvider
from providers.retention.directory_copy_provider import DirectoryCopyProvider

__all__ = ["DirectoryCopy", "SlurmArchive"]


class SlurmArchive(Resource, module="retention", name="SlurmArchive"):
    """One kind of the tenant's Slurm records (jobs, steps, associations, logs) archived at
    `key` until `retention_until`. Declare it protected, with plain values only: it must not
    depend on anything `destroy` deletes."""

    key: pulumi.Output[str]
    url: pulumi.Output[str]
    rows: pulumi.Output[int]
    size: pulumi.Output[int]
    retention_until: pulumi.Output[str]
    unread_logs: pulumi.Output[dict[str, str]]  # logs: node -> why its slurmd log was not read

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        kind: str,
        accounts: Sequence[str],
        nodes: Sequence[str],
        retention_days: int,
        allow_empty: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "kind": kind,
            "accounts": list(accounts),
            "nodes": list(nodes),
            "retention_days": retention_days,
            "allow_empty": allow_empty,
            **dict.fromkeys(("key", "url", "rows", "size", "retention_until", "unread_logs")),
        }
        super().__init__(SlurmArchiveProvider(), resource_name, inputs, opts)


class DirectoryCopy(Resource, module="retention", name="DirectoryCopy"):
    """A tenant's directory `path` on a shared filesystem, archived on the mount host into the
    retention store at `key` until `retention_until`. Protected, with plain values only."""

    key: pulumi.Output[str]
    url: pulumi.Output[str]
    size: pulumi.Output[int]
    retention_until: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        filesystem: str,
        path: str,
        retention_days: int,
        erased: Mapping[str, int] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "filesystem": filesystem,
            "path": path,
            "retention_days": retention_days,
            **dict.fromkeys(("key", "url", "size", "retention_until")),
        }
        if erased:
            # Absent until a user's erasure, so that no other copy shows a change for it.
            inputs["erased"] = dict(erased)
        super().__init__(DirectoryCopyProvider(), resource_name, inputs, opts)
