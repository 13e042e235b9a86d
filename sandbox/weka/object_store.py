"""The emulated cluster's one object store bucket, where Snap-To-Object uploads go: an S3 bucket
reached with the retention store's client (`providers.retention`), configured by the
RETENTION_S3_* variables of the emulator's environment (the sandbox gives it the retention
store's: service.py). Without RETENTION_S3_ENDPOINT the cluster has no object store bucket.

A real cluster writes an uploaded snapshot as many objects in a format of its own and finds them
through the snapshot's locator. The emulator writes two, under `weka-s2o/<locator>/`:
`data.tar`, the snapshot's tree (archive.py), then `manifest.json`, what the snapshot was of
(what `POST /snapshots/locatorInfo` reports, and what a download needs). The manifest goes last,
so a locator whose manifest is there names a complete upload. The key is made of the locator
alone because a locator is all a real cluster needs to download a snapshot, on any cluster the
bucket is attached to (a sandbox started afresh is another cluster); the locator begins with the
uploading cluster's short guid, and the manifest names the whole one.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from providers.errors import RetentionStoreError
from providers.retention.client import RetentionStore
from providers.retention.objects import uploaded_snapshot_prefix
from providers.retention.settings import Settings
from sandbox.weka.errors import ApiError

DATA = "data.tar"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "weka-emulator-snapshot/1"
# The name the sandbox's cluster knows its bucket by (`weka fs tier s3` would list it).
DEFAULT_NAME = "retention"
# What a locator may hold to become part of a key: path segments of safe characters, no `..`.
_LOCATOR = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*")


def bucket_uid(name: str) -> str:
    """The uid of the bucket `name`: stable across restarts with no place in the state, as the
    bucket is configuration."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"weka-emulator/object-store/{name}"))


def check_locator(locator: str) -> None:
    if not _LOCATOR.fullmatch(locator) or ".." in locator.split("/"):
        raise ApiError(400, f"Invalid locator {locator!r}")


class ObjectStore:
    """The bucket `name`, stored in the S3 bucket `settings` name. The S3 client is made on first
    use: boto3 takes a moment to import, and most starts never upload."""

    def __init__(self, name: str, settings: Settings) -> None:
        self.name = name
        self.settings = settings
        self._store: RetentionStore | None = None

    @classmethod
    def from_environment(cls, name: str, env: Mapping[str, str]) -> ObjectStore | None:
        """The bucket RETENTION_S3_* describe, or None without RETENTION_S3_ENDPOINT. Raises
        RetentionStoreError when the settings are incomplete (a credentials file missing)."""
        if not env.get("RETENTION_S3_ENDPOINT", "").strip():
            return None
        return cls(name, Settings.from_environment(env))

    @property
    def uid(self) -> str:
        return bucket_uid(self.name)

    def key(self, locator: str, part: str) -> str:
        return uploaded_snapshot_prefix(locator) + part

    def put(self, locator: str, data: Iterable[bytes], manifest: Mapping[str, Any]) -> None:
        """Stores a snapshot's tar stream, as it comes (a multipart upload, aborted when the
        stream fails), then its manifest."""
        meta = {"weka-locator": locator}
        body = json.dumps(manifest, indent=2, sort_keys=True).encode()
        with self._failing(f"uploading {locator}"):
            self._client().upload(self.key(locator, DATA), data, meta)
            self._client().put(self.key(locator, MANIFEST), body, meta)

    def manifest(self, locator: str) -> dict[str, Any] | None:
        """The manifest of the snapshot uploaded at `locator`, or None if there is none."""
        check_locator(locator)
        key = self.key(locator, MANIFEST)
        with self._failing(f"reading {locator}"):
            if self._client().head(key) is None:
                return None
            raw = self._client().get(key)
        try:
            manifest = json.loads(raw)
        except ValueError as error:
            raise ApiError(500, f"Object store bucket {self.name}: {key} is garbled") from error
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            raise ApiError(
                500, f"Object store bucket {self.name}: {key} is not a {MANIFEST_FORMAT} manifest"
            )
        return manifest

    def data(self, locator: str) -> Iterator[bytes]:
        """The snapshot's tar stream, as it is read from the bucket."""
        with self._failing(f"downloading {locator}"):
            yield from self._client().chunks(self.key(locator, DATA))

    def purge(self, locator: str) -> None:
        """Removes what the upload at `locator` stored (manifest first: no half a snapshot)."""
        with self._failing(f"purging {locator}"):
            for part in (MANIFEST, DATA):
                self._client().delete(self.key(locator, part))

    def _client(self) -> RetentionStore:
        if self._store is None:
            self._store = RetentionStore(self.settings)
        return self._store

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """The store's failure as the cluster's: 500, the store's own words and next step."""
        try:
            yield
        except RetentionStoreError as error:
            says = f"Object store bucket {self.name} failed {doing}: {error}"
            raise ApiError(500, says) from error
