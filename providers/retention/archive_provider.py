"""Offboarding step 3: one archive of a tenant's Slurm records (`jobs`, `steps`, `associations`
or `logs`, see `providers.slurm.accounting_export`) in the retention store, at the fixed key
`<tenant>/slurm/<kind>.<ext>` with the metadata `tenant`, `retention-until`, `kind` and `rows`
(`kept_object_provider` says how it is kept). An archive is made only from a drained tenant (no
job queued or running), so that the records are final. The logs archive reads the slurmd log of
each of `nodes` (the reservation's) too, and records in `unread_logs` each node whose log it could
not read, with why, which the `up` also says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers import progress
from providers.base import Field, Schema
from providers.errors import OffboardingError
from providers.retention.kept_object_provider import Content, KeptObjectProvider
from providers.retention.objects import archive_key
from providers.slurm import values
from providers.slurm.accounting_export import KINDS, export, export_logs
from providers.slurm.queue import SlurmQueue
from providers.slurm.settings import Settings as SlurmSettings

__all__ = ["SlurmArchiveProvider"]


def _kind(value: Any) -> str:
    return values.choice(value, KINDS)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    return value


ARCHIVE = Schema(
    kind="Slurm archive",
    fields=(
        Field("tenant", values.name, replaces=True),
        Field("kind", _kind, replaces=True),
        Field("accounts", values.names),
        Field("nodes", values.names, default=()),
        Field("retention_days", values.count),
        Field("allow_empty", _flag, default=False),
    ),
)


class SlurmArchiveProvider(KeptObjectProvider):
    schema = ARCHIVE
    what = "Slurm archive"

    def doing(self, props: Mapping[str, Any]) -> str:
        return f"archiving the Slurm {props.get('kind')} of tenant {props.get('tenant')!r}"

    def content(self, p: Mapping[str, Any], doing: str) -> Content:
        slurm = SlurmSettings.from_environment()
        transport = slurm.make_transport()
        left = SlurmQueue(transport).jobs(p["accounts"])
        if left:
            raise OffboardingError(
                doing,
                f"{len(left)} jobs of the tenant are still queued or running "
                f"({', '.join(str(job) for job in left[:10])}): the records are not final",
                "complete stage drained first (`pulumi up` at lifecycle.stage drained), then "
                "move to archived; nothing was archived",
            )
        if p["kind"] == "logs":
            records = export_logs(slurm, p["accounts"], p["nodes"])
        else:
            records = export(transport, p["kind"], p["accounts"], p["allow_empty"])
        for node, why in records.unread.items():
            progress.say(
                f"archiving the logs of tenant {p['tenant']!r} without node {node}'s slurmd log "
                f"(offboarding step 3c: copy it by hand if it is needed): {why}"
            )
        return Content(
            key=archive_key(p["tenant"], p["kind"], records.extension),
            data=records.data,
            metadata={"kind": p["kind"], "rows": str(records.rows)},
            outputs={"rows": records.rows, "unread_logs": dict(records.unread)},
        )
