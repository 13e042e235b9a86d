"""What offboarding keeps after the tenant is gone: the archives of its Slurm records (runbook
step 3), and later its uploaded snapshots. Every resource here is protected and takes plain
values only, never another component's outputs: `pulumi destroy --exclude-protected` keeps a
protected resource and everything it depends on, so a dependency would keep the tenant alive.
Once made, they stay declared at every stage, rollback included."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from providers.retention.resources import SlurmArchive

TYPE = "gpu-tenants:retention:Retention"


@dataclass(frozen=True)
class Archive:
    kind: str  # jobs | steps | associations | logs
    retention_days: int


@dataclass(frozen=True)
class RetentionArgs:
    tenant: str
    accounts: list[str]
    archives: list[Archive]  # empty before stage archived
    allow_empty: bool  # a rehearsal ran no job: an empty jobs export is no failure


class Retention(pulumi.ComponentResource):
    archives: pulumi.Output[dict[str, str]]

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
                retention_days=archive.retention_days,
                allow_empty=args.allow_empty,
                opts=kept,
            )
            for archive in args.archives
        }
        self.archives = pulumi.Output.all(**{k: a.url for k, a in made.items()})
        self.register_outputs({"archives": self.archives})
