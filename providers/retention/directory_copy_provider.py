"""Offboarding step 4 for a tenant on the platform's shared filesystems (directory isolation):
the shared filesystems' snapshots hold every tenant, so the tenant's retained copy is its own
directory only, archived on the mount host (a gzipped tar, numeric owners kept) and put in the
retention store at `<tenant>/storage/<filesystem>.tar.gz` with `tenant`, `retention-until`,
`filesystem` and `path` metadata (`kept_object_provider` says how it is kept). The directory's
delete gate trusts the key only while the object is still in the store
(`providers.retention.client.holds`). A user's erasure (`erased`) rewrites the archive without
their files (`erasure`), under the same key and retention date.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.base import Field, Schema
from providers.retention.erasure import erased_users, without_users
from providers.retention.kept_object_provider import Content, KeptObjectProvider
from providers.retention.objects import copy_key
from providers.slurm import values
from providers.weka.mount import mount_client
from providers.weka.props import NAME, matching
from providers.weka.settings import ROOT_ORG

__all__ = ["DirectoryCopyProvider"]


def _path(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/") or ".." in value.split("/"):
        raise ValueError(f"{value!r} is not an absolute path inside the filesystem")
    return value


COPY = Schema(
    kind="retained directory copy",
    fields=(
        Field("tenant", values.name, replaces=True),
        Field("filesystem", matching(NAME, "a Weka filesystem name"), replaces=True),
        Field("path", _path, replaces=True),
        Field("org", matching(NAME, "a Weka organization name"), ROOT_ORG, replaces=True),
        Field("retention_days", values.count),
        # Users whose right to erasure was exercised (username -> uid): not in the copy.
        Field("erased", erased_users, None),
    ),
)


class DirectoryCopyProvider(KeptObjectProvider):
    schema = COPY
    what = "retained directory copy"

    def doing(self, props: Mapping[str, Any]) -> str:
        return f"keeping a copy of {props.get('filesystem')}{props.get('path')}"

    def content(self, p: Mapping[str, Any], doing: str) -> Content:
        archive = mount_client().archive(p["org"], p["filesystem"], p["path"], doing)
        return Content(
            key=copy_key(p["tenant"], p["filesystem"]),
            data=self.rewritten(archive, p, doing),
            metadata={"filesystem": p["filesystem"], "path": p["path"]},
        )

    def rewritten(self, data: bytes, p: Mapping[str, Any], doing: str) -> bytes:
        """The archive without the erased users' files."""
        if not p["erased"]:
            return data
        kept, _ = without_users(data, p["erased"])
        return kept
