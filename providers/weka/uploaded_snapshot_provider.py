"""Offboarding step 4 for a tenant with filesystems of its own (org isolation): the copy that
outlives the filesystem. A Weka snapshot lives inside its filesystem and is deleted with it, so
what is kept is the snapshot uploaded to an object store bucket (Snap-To-Object): the bucket is
attached to the filesystem, the snapshot `offboarding` taken (or found, on a rerun), verified in
the filesystem's snapshot list, uploaded (a rerun gets the same locator back) and verified by
reading its locator from the bucket.

The tenant's organization admin logs in with the password derived from the organization's name
(`org_admin_password`), so this resource takes plain values only and depends on nothing that
destroy deletes. Reading it back reads the locator from the bucket: an upload gone from the
bucket is drift. Delete refuses until `retention_until`; the program declares it protected. The
bucket is the retention store's (RETENTION_S3_*), where the purge deletes the upload's objects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Schema, gone
from providers.errors import WekaError
from providers.retention.client import RetentionStore
from providers.retention.erasure import erased_users
from providers.retention.ledger import Ledger, refuse_deletion
from providers.retention.objects import (
    kept_until,
    retained_until,
    uploaded_snapshot_prefix,
)
from providers.weka.mount import mount_client
from providers.weka.organization_provider import org_admin_password
from providers.weka.props import NAME, WekaProvider, at_least, matching, typed, weka_client
from providers.weka.settings import ROOT_ORG, Credentials, Settings

if TYPE_CHECKING:
    from providers.weka.client import WekaClient

__all__ = ["SNAPSHOT_NAME", "UploadedSnapshotProvider", "org_admin_client"]

SNAPSHOT_NAME = "offboarding"
# The ledger's record of an erasure's steps (`_upload_without`).
_MADE, _UPLOADED = "erasure-filesystem", "erasure-uploaded"


def org_admin_client(org: str) -> WekaClient:
    """A client logged in as organization `org`'s admin (`<org>-admin`)."""
    settings = Settings.from_environment()
    login = Credentials(f"{org}-admin", org_admin_password(settings.password, org), org)
    return weka_client(settings, login)


class UploadedSnapshotProvider(WekaProvider):
    schema = Schema(
        kind="uploaded snapshot",
        fields=(
            Field("org", matching(NAME, "a Weka organization name"), replaces=True),
            Field("filesystem", matching(NAME, "a Weka filesystem name"), replaces=True),
            Field("object_store", typed(str), replaces=True),
            Field("retention_days", at_least(1, "must be 1 or more days")),
            # Users whose right to erasure was exercised (username -> uid), and the capacity of
            # the filesystem their files are removed in (the original's).
            Field("erased", erased_users, None),
            Field("capacity", at_least(0, "must be a number of bytes"), 0),
        ),
    )

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.schema.recorded(props)
        doing = f"keeping an uploaded snapshot of filesystem {p['filesystem']!r} ({p['org']})"
        with org_admin_client(p["org"]) as weka:
            fs = weka.find_filesystem(p["filesystem"])
            if fs is None:
                raise WekaError(
                    doing,
                    "the filesystem does not exist, so its data can no longer be kept",
                    "if it was deleted by hand, the tenant's data is gone: record that in the "
                    "change ticket before going on",
                )
            weka.attach_object_store(fs.uid, p["object_store"])
            snap = weka.find_snapshot(fs.name, SNAPSHOT_NAME) or weka.create_snapshot(
                fs.uid, SNAPSHOT_NAME
            )
            if weka.find_snapshot(fs.name, SNAPSHOT_NAME) is None:
                raise WekaError(
                    doing, f"snapshot {SNAPSHOT_NAME!r} is not listed after it was taken"
                )
            locator = weka.upload_snapshot(snap.uid).locator
            weka.wait_uploaded(snap.uid)
            self._verify(weka, p, locator, doing)
        until = retained_until(int(p["retention_days"]))
        outputs = {**p, "snapshot_uid": snap.uid, "locator": locator, "retention_until": str(until)}
        return CreateResult(f"{p['org']}/{p['filesystem']}@{locator}", outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with org_admin_client(props["org"]) as weka:
            try:
                self._verify(weka, props, props["locator"], "reading the uploaded snapshot")
            except WekaError:
                return gone()
        return ReadResult(id_, props)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """A new retention period (the date is kept in the stack, not the bucket), or a user's
        erasure: the upload replaced by one without their files."""
        p = self.schema.recorded(news)
        until = kept_until(olds, int(p["retention_days"]))
        locator = str(olds["locator"])
        # An erasure is never undone: only a user not erased yet makes the upload be redone.
        if set(erased_users(p["erased"])) - set(erased_users(olds.get("erased"))):
            locator = _upload_without(p, locator)
        return UpdateResult({**olds, **p, "locator": locator, "retention_until": until})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """The retention purge, after `retention_until`: the filesystem is gone by then, and
        Weka lists no snapshot of a deleted filesystem, so the upload's objects are deleted from
        the bucket by its locator."""
        # The snapshot is kept in the tenant's own organization, named as the tenant.
        refuse_deletion(
            WekaError, props["org"], f"the uploaded snapshot {id_!r}", props.get("retention_until")
        )
        prefix = uploaded_snapshot_prefix(props["locator"])
        with RetentionStore.from_environment() as store:
            store.delete_prefix(prefix)
            if store.list(prefix):
                raise WekaError(
                    f"deleting the uploaded snapshot {id_!r}",
                    f"{store.url(prefix)} still holds objects after they were deleted",
                    "run the retention purge again",
                )

    @staticmethod
    def _verify(weka: WekaClient, p: dict[str, Any], locator: str, doing: str) -> None:
        info = weka.locator_info(p["object_store"], locator)
        if (info.fs_name, info.snapshot_name) != (p["filesystem"], SNAPSHOT_NAME):
            raise WekaError(
                doing,
                f"the bucket holds snapshot {info.snapshot_name!r} of {info.fs_name!r} at "
                f"{locator}, not this one",
            )


def _upload_without(p: dict[str, Any], old: str) -> str:
    """The locator of a new upload of filesystem `p["filesystem"]` without the erased users'
    files, the upload at `old` deleted. A snapshot cannot be changed in place, so it is done as
    an operator would: a filesystem made from the upload (in Root, under the original's name, the
    tenant's being gone), the users' files removed, a new snapshot of the same name taken,
    uploaded and verified, the old upload's objects deleted, the filesystem deleted.

    Each step is written to the tenant's ledger first, so that a rerun after a crash neither
    trusts a half-made filesystem nor uploads twice."""
    tenant, name = p["org"], p["filesystem"]
    users = erased_users(p["erased"])
    doing = f"erasing {', '.join(users)} from the uploaded snapshot of {name!r} ({tenant})"
    step = {"filesystem": name, "from": old, "users": ",".join(sorted(users))}
    with (
        RetentionStore.from_environment() as store,
        Ledger.open() as ledger,
        weka_client(Settings.from_environment()) as weka,
    ):
        entries = ledger.entries(tenant)
        uploaded = [
            e.details["locator"]
            for e in entries
            if e.action == _UPLOADED and {k: e.details.get(k) for k in step} == step
        ]
        if uploaded:
            new = uploaded[-1]
        else:
            leftover = weka.find_filesystem(name)
            if leftover is not None:
                if not any(e.action == _MADE and e.details == step for e in entries):
                    raise WekaError(
                        doing,
                        f"a filesystem named {name!r} exists in Root, and no erasure made it",
                        "an erasure redoes the upload of an offboarded tenant, whose filesystem "
                        "is gone: find out whose this one is",
                    )
                weka.delete_filesystem(leftover.uid, name)
            ledger.append(tenant, _MADE, datetime.now(UTC), step)
            new = _snapshot_without(weka, p, users, old, doing)
            ledger.append(tenant, _UPLOADED, datetime.now(UTC), {**step, "locator": new})
        if new != old:
            store.delete_prefix(uploaded_snapshot_prefix(old))
        scratch = weka.find_filesystem(name)
        if scratch is not None:
            weka.delete_filesystem(scratch.uid, name)
    return new


def _snapshot_without(
    weka: WekaClient, p: dict[str, Any], users: dict[str, int], old: str, doing: str
) -> str:
    """Makes filesystem `p["filesystem"]` from the upload at `old`, removes the users' files,
    and uploads its new snapshot: the new locator, verified."""
    name, bucket, capacity = p["filesystem"], p["object_store"], int(p["capacity"])
    fs = weka.create_filesystem_from_locator(
        name, "default", capacity, capacity, obs_name=bucket, locator=old
    )
    mount_client().erase_users(ROOT_ORG, name, "/", users, doing)
    # The filesystem holds the snapshot it was made from, the erased files in it.
    made_from = weka.find_snapshot(name, SNAPSHOT_NAME)
    if made_from is not None:
        weka.delete_snapshot(made_from.uid, SNAPSHOT_NAME)
    weka.attach_object_store(fs.uid, bucket)
    snap = weka.create_snapshot(fs.uid, SNAPSHOT_NAME)
    new = weka.upload_snapshot(snap.uid).locator
    weka.wait_uploaded(snap.uid)
    UploadedSnapshotProvider._verify(weka, p, new, doing)
    return new
