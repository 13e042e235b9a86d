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

import time
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Schema, gone
from providers.errors import WekaError
from providers.retention.client import RetentionStore
from providers.retention.objects import (
    refuse_while_retained,
    retained_until,
    uploaded_snapshot_prefix,
)
from providers.weka.client import Credentials, WekaClient
from providers.weka.organization_provider import org_admin_password
from providers.weka.props import NAME, WekaProvider, at_least, matching, typed
from providers.weka.settings import Settings

__all__ = ["SNAPSHOT_NAME", "UploadedSnapshotProvider", "org_admin_client"]

SNAPSHOT_NAME = "offboarding"
# A real cluster uploads in the background; the stage's `up` waits this long for SYNCHRONIZED.
_UPLOAD_WAIT_SECONDS = 600.0


def org_admin_client(org: str) -> WekaClient:
    """A client logged in as organization `org`'s admin (`<org>-admin`)."""
    settings = Settings.from_environment()
    login = Credentials(f"{org}-admin", org_admin_password(settings.password, org), org)
    return WekaClient.from_settings(settings, login)


class UploadedSnapshotProvider(WekaProvider):
    schema = Schema(
        kind="uploaded snapshot",
        fields=(
            Field("org", matching(NAME, "a Weka organization name"), replaces=True),
            Field("filesystem", matching(NAME, "a Weka filesystem name"), replaces=True),
            Field("object_store", typed(str), replaces=True),
            Field("retention_days", at_least(1, "must be 1 or more days")),
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
            self._wait_uploaded(weka, snap.uid, doing)
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
        # Only retention_days can change in place: the date is kept in the stack, not the bucket.
        until = retained_until(int(news["retention_days"]))
        return UpdateResult({**olds, **self.schema.recorded(news), "retention_until": str(until)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """The retention purge, after `retention_until`: the filesystem is gone by then, and
        Weka lists no snapshot of a deleted filesystem, so the upload's objects are deleted from
        the bucket by its locator."""
        refuse_while_retained(
            WekaError, f"the uploaded snapshot {id_!r}", props.get("retention_until")
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
    def _wait_uploaded(weka: WekaClient, uid: str, doing: str) -> None:
        deadline = time.monotonic() + _UPLOAD_WAIT_SECONDS
        while True:
            snap = weka.get_snapshot(uid)
            if snap is not None and snap.uploaded:
                return
            if time.monotonic() > deadline:
                raise WekaError(
                    doing,
                    f"the upload is still {snap.stow_status if snap else 'unknown'} after "
                    f"{_UPLOAD_WAIT_SECONDS:.0f}s",
                    "run `pulumi up` again: the upload goes on, and is not started twice",
                )
            time.sleep(2)

    @staticmethod
    def _verify(weka: WekaClient, p: dict[str, Any], locator: str, doing: str) -> None:
        info = weka.locator_info(p["object_store"], locator)
        if (info.fs_name, info.snapshot_name) != (p["filesystem"], SNAPSHOT_NAME):
            raise WekaError(
                doing,
                f"the bucket holds snapshot {info.snapshot_name!r} of {info.fs_name!r} at "
                f"{locator}, not this one",
            )
