"""Offboarding step 4 for a tenant on the platform's shared filesystems (directory isolation):
the shared filesystems' snapshots hold every tenant, so the tenant's retained copy is its own
directory only, archived on the mount host (a gzipped tar, numeric owners kept) and put in the
retention store at `<tenant>/storage/<filesystem>.tar.gz` with `tenant`, `retention-until`,
`filesystem` and `path` metadata (`kept_object_provider` says how it is kept).

A copy is as large as the tenant's directory, terabytes, so it is never held: the archive
streams from the mount host into a multipart upload (`RetentionStore.upload`), which leaves no
object if anything fails on the way. Once it is in, the copy is marked with its digest and
member count (`sha256`, `files`) and read back whole against that digest; a copy without the
mark is not whole. The directory's delete gate checks the digest again
(`providers.retention.client.holds`). A user's erasure (`erased`) streams the copy through
`erasure` into the same key, keeping the retention date; the outputs keep the digest before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from providers.base import Field, Schema
from providers.errors import OffboardingError
from providers.retention.client import RetentionStore, Uploaded
from providers.retention.erasure import erased_users, without_users
from providers.retention.kept_object_provider import KeptObjectProvider, Stored
from providers.retention.objects import COPIED_PATH, FILES, SHA256, copy_key
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


def _marked(
    store: RetentionStore, key: str, uploaded: Uploaded, members: int, doing: str
) -> Stored:
    """Marks the copy just uploaded with its digest and count, then reads it back whole
    against the digest."""
    store.mark(key, {SHA256: uploaded.sha256, FILES: str(members)})
    if problem := store.why_not_whole(key):
        raise OffboardingError(
            doing,
            f"{problem} (the upload sent sha256 {uploaded.sha256})",
            "the store changed the object while it was written: run `pulumi up` again",
        )
    return Stored(key, uploaded.size, {"sha256": uploaded.sha256, "files": members})


class DirectoryCopyProvider(KeptObjectProvider):
    schema = COPY
    what = "retained directory copy"
    read_back: ClassVar[Mapping[str, str]] = {"sha256": SHA256}

    def doing(self, props: Mapping[str, Any]) -> str:
        return f"keeping a copy of {props.get('filesystem')}{props.get('path')}"

    def keep(
        self, store: RetentionStore, p: Mapping[str, Any], metadata: Mapping[str, str], doing: str
    ) -> Stored:
        key = copy_key(p["tenant"], p["filesystem"])
        metadata = {**metadata, "filesystem": p["filesystem"], COPIED_PATH: p["path"]}
        with mount_client().archive(p["org"], p["filesystem"], p["path"], doing) as archive:
            removed: list[str] = []
            kept = without_users(archive, p["erased"], removed) if p["erased"] else archive
            uploaded = store.upload(key, kept, metadata)
        assert archive.members is not None  # the upload read it to its end
        return _marked(store, key, uploaded, archive.members - len(removed), doing)

    def keep_again(
        self,
        store: RetentionStore,
        key: str,
        olds: Mapping[str, Any],
        p: Mapping[str, Any],
        metadata: Mapping[str, str],
        doing: str,
    ) -> Stored:
        """A new retention date is a new mark on the same bytes; a new erasure streams the copy
        through into the same key without the users' files."""
        already = erased_users(olds.get("erased"))
        if set(p["erased"].items()) <= set(already.items()):
            store.mark(key, metadata)
            found = store.head(key)
            if found is None:
                raise OffboardingError(doing, f"{store.url(key)} is gone from the retention store")
            return Stored(key, found.size)
        removed: list[str] = []
        members = int(metadata.get(FILES) or olds.get("files") or 0)
        kept = without_users(store.chunks(key), p["erased"], removed)
        # The metadata goes with the upload but the mark of the old digest does not: until the
        # new one is set, the copy is not whole.
        unmarked = {k: v for k, v in metadata.items() if k not in (SHA256, FILES)}
        uploaded = store.upload(key, kept, unmarked)
        stored = _marked(store, key, uploaded, members - len(removed), doing)
        before = olds.get("sha256") or metadata.get(SHA256, "")
        return Stored(key, stored.size, {**stored.outputs, "sha256_before_erasure": before})
