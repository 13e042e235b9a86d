"""The emulated cluster's one object store bucket, where Snap-To-Object uploads go: an S3 bucket
reached with boto3, configured by the RETENTION_S3_* variables of the emulator's environment (the
sandbox gives it the retention store's: service.py). Without RETENTION_S3_ENDPOINT the cluster
has no object store bucket.

What Weka documents of an upload is its locator: the answer to `POST /snapshots/{uid}/upload`
(`weka fs snapshot upload`), shaped `<cluster guid's first 8>/d/s/<snapshot id>/spec/<uuid
tail>`, by which any cluster the bucket is attached to reads the snapshot back (`locatorInfo`,
`weka fs download`). The bucket keeps what the cluster writes under the prefix it is configured
with (`UPLOADS_PREFIX`, the platform's setting), and a snapshot's objects under its locator. The
objects themselves are a format of the cluster's own; the emulator's, all under
`<prefix>/<locator>/`:

    blobs/000000, blobs/000001, ...   the snapshot's tree as a tar stream (archive.py), cut in
                                      pieces of about BLOB_SIZE, each stored as it fills
    spec                              what the snapshot was of (what locatorInfo reports, and
                                      what a download needs), stored last

A locator whose spec is there names a complete upload. Keys are made of the locator alone, as a
locator is all a cluster needs to download a snapshot (a sandbox started afresh is another
cluster); the locator begins with the uploading cluster's short guid, and the spec names the
whole one. Nothing here is the product's code: the product finds an upload's objects from the
locator its own way, and a wrong guess of it fails the sandbox's tests.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from providers.retention.settings import Settings
from providers.weka.settings import UPLOADS_PREFIX
from sandbox.weka.errors import ApiError

MANIFEST_FORMAT = "weka-emulator-snapshot/1"
# The name the sandbox's cluster knows its bucket by (`weka fs tier s3` would list it).
DEFAULT_NAME = "retention"
# One data object's size: what the emulator holds in memory while it uploads.
BLOB_SIZE = 16 * 2**20
_SPEC, _BLOBS = "spec", "blobs/"
_READ_CHUNK = 2**20
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
        self._s3: Any = None

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

    def put(self, locator: str, data: Iterable[bytes], manifest: Mapping[str, Any]) -> None:
        """Stores a snapshot's tar stream as it comes, a blob at a time, then its spec. A stream
        that fails leaves nothing behind: the blobs stored so far are deleted."""
        body = json.dumps(manifest, indent=2, sort_keys=True).encode()
        with self._failing(f"uploading {locator}"):
            try:
                for number, blob in enumerate(_blobs(data)):
                    # Closed once stored, so that one blob at a time is in memory.
                    with blob:
                        self._put(_key(locator, f"{_BLOBS}{number:06d}"), blob)
            except BaseException:
                self._delete_under(locator)
                raise
            self._put(_key(locator, _SPEC), body)

    def manifest(self, locator: str) -> dict[str, Any] | None:
        """The spec of the snapshot uploaded at `locator`, or None if there is none."""
        check_locator(locator)
        key = _key(locator, _SPEC)
        with self._failing(f"reading {locator}"):
            try:
                raw = self._client().get_object(Bucket=self.settings.bucket, Key=key)["Body"].read()
            except self._client().exceptions.NoSuchKey:
                return None
        try:
            manifest = json.loads(raw)
        except ValueError as error:
            raise ApiError(500, f"Object store bucket {self.name}: {key} is garbled") from error
        if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
            raise ApiError(
                500, f"Object store bucket {self.name}: {key} is not a {MANIFEST_FORMAT} spec"
            )
        return manifest

    def data(self, locator: str) -> Iterator[bytes]:
        """The snapshot's tar stream, its blobs read back in order as they stream."""
        with self._failing(f"downloading {locator}"):
            for key in self._keys(_key(locator, _BLOBS)):
                body = self._client().get_object(Bucket=self.settings.bucket, Key=key)["Body"]
                with body:
                    yield from body.iter_chunks(_READ_CHUNK)

    def purge(self, locator: str) -> None:
        """Removes what the upload at `locator` stored (its spec first: no half a snapshot)."""
        with self._failing(f"purging {locator}"):
            self._client().delete_object(Bucket=self.settings.bucket, Key=_key(locator, _SPEC))
            self._delete_under(locator)

    def _put(self, key: str, body: bytes | io.BytesIO) -> None:
        self._client().put_object(Bucket=self.settings.bucket, Key=key, Body=body)

    def _keys(self, prefix: str) -> list[str]:
        pages = (
            self._client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=self.settings.bucket, Prefix=prefix)
        )
        return sorted(str(item["Key"]) for page in pages for item in page.get("Contents") or [])

    def _delete_under(self, locator: str) -> None:
        for key in self._keys(_key(locator, "")):
            self._client().delete_object(Bucket=self.settings.bucket, Key=key)

    def _client(self) -> Any:
        if self._s3 is None:
            import boto3
            from botocore.config import Config

            s = self.settings
            session = boto3.session.Session(s.access_key, s.secret_key, region_name=s.region)
            addressing = Config(signature_version="s3v4", s3={"addressing_style": "path"})
            verify = str(s.ca_file) if s.ca_file else True
            self._s3 = session.client(
                "s3", endpoint_url=s.endpoint, verify=verify, config=addressing
            )
        return self._s3

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """The store's failure as the cluster's: 500, with the store's own words."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (BotoCoreError, ClientError) as error:
            says = f"Object store bucket {self.name} failed {doing}: {error}"
            raise ApiError(500, says) from error


def _key(locator: str, part: str) -> str:
    """The key of `part` of the upload at `locator`, in the bucket's prefix."""
    return f"{UPLOADS_PREFIX}/{locator}/{part}"


def _blobs(data: Iterable[bytes]) -> Iterator[io.BytesIO]:
    """`data` regrouped in pieces of BLOB_SIZE or a chunk more (the last one shorter), each a
    file at its start: boto3 streams a file, where it would copy bytes."""
    blob = io.BytesIO()
    for chunk in data:
        blob.write(chunk)
        if blob.tell() >= BLOB_SIZE:
            blob.seek(0)
            yield blob
            blob = io.BytesIO()
    if blob.tell():
        blob.seek(0)
        yield blob
