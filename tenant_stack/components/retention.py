"""What offboarding keeps after the tenant is gone: the archives of its Slurm records (runbook
step 3) and the copies of its data (step 4): a directory-isolated tenant's own directories on the
shared filesystems, archived into the retention store, or the snapshots of a tenant's own
filesystems, uploaded to the object store bucket (Snap-To-Object).

Every resource here is protected and takes plain values only, never another component's outputs:
`pulumi destroy --exclude-protected` keeps a protected resource and everything it depends on, so
a dependency would keep the tenant alive. Once made, they stay declared at every stage, rollback
included."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from providers.retention.resources import DirectoryCopy, SlurmArchive
from providers.weka.resources import WekaUploadedSnapshot

TYPE = "gpu-tenants:retention:Retention"


@dataclass(frozen=True)
class Archive:
    kind: str  # jobs | steps | associations | logs
    retention_days: int


@dataclass(frozen=True)
class Copy:
    filesystem: str  # a shared filesystem of the platform
    path: str  # the tenant's directory on it


@dataclass(frozen=True)
class RetentionArgs:
    tenant: str
    accounts: list[str]
    nodes: list[str]  # the reservation's, whose slurmd logs the logs archive reads
    archives: list[Archive]  # empty before stage archived
    allow_empty: bool  # a rehearsal ran no job: an empty jobs export is no failure
    copies: list[Copy]  # empty before stage snapshotted
    # Org isolation: the tenant's own filesystems whose snapshots are uploaded to object_store.
    uploads: list[str]
    object_store: str
    copy_retention_days: int
    # Users whose right to erasure was exercised (username -> uid), none of whose files a copy
    # keeps, and the capacity of each own filesystem, for the upload's redo without them.
    erased: Mapping[str, int] = field(default_factory=dict)
    capacities: Mapping[str, int] = field(default_factory=dict)

    @property
    def kept(self) -> list[str]:
        """What this keeps, as the namespace records it (RETAINED_ANNOTATION)."""
        return (
            [a.kind for a in self.archives]
            + [f"copy:{c.filesystem}" for c in self.copies]
            + [f"snapshot:{fs}" for fs in self.uploads]
        )


class Retention(pulumi.ComponentResource):
    archives: pulumi.Output[dict[str, str]]
    # filesystem -> the key of its copy, which the directories' delete gate checks.
    copies: dict[str, pulumi.Output[str]]
    # filesystem -> the locator of its uploaded snapshot, which the filesystem's delete checks.
    locators: dict[str, pulumi.Output[str]]

    def __init__(
        self, name: str, args: RetentionArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        kept = pulumi.ResourceOptions(parent=self, protect=True)
        made = {
            archive.kind: SlurmArchive(
                f"{name}-slurm-{archive.kind}",
                tenant=args.tenant,
                kind=archive.kind,
                accounts=args.accounts,
                nodes=args.nodes if archive.kind == "logs" else [],
                retention_days=archive.retention_days,
                allow_empty=args.allow_empty,
                opts=kept,
            )
            for archive in args.archives
        }
        self.copies = {
            copy.filesystem: DirectoryCopy(
                f"{name}-copy-{copy.filesystem}",
                tenant=args.tenant,
                filesystem=copy.filesystem,
                path=copy.path,
                retention_days=args.copy_retention_days,
                erased=args.erased,
                opts=kept,
            ).key
            for copy in args.copies
        }
        self.locators = {
            fs: WekaUploadedSnapshot(
                f"{name}-snapshot-{fs}",
                org=args.tenant,
                filesystem=fs,
                object_store=args.object_store,
                retention_days=args.copy_retention_days,
                erased=args.erased,
                capacity=args.capacities.get(fs, 0),
                opts=kept,
            ).locator
            for fs in args.uploads
        }
        self.archives = pulumi.Output.all(
            **{k: a.url for k, a in made.items()},
            **{f"copy:{k}": v for k, v in self.copies.items()},
            **{f"snapshot:{k}": v for k, v in self.locators.items()},
        )
        self.register_outputs({"archives": self.archives})
