"""A small client of the retention object store, any S3-compatible service, with no Pulumi in it:
offboarding keeps a tenant's archives there (`objects` says how they are named and marked).

Requests go path-style (`<endpoint>/<bucket>/<key>`: an S3-compatible store seldom has the DNS
for a bucket per host name) and are signed with Signature V4, which every such store accepts.
botocore's "standard" retry mode sends a request again after a connection error, a throttle or
a 5xx, which is safe here: every call is a GET, HEAD, PUT or DELETE of one key, and doing one of
those twice leaves the store as doing it once. Failures become RetentionStoreErrors naming the
object (`s3://bucket/key`) and quoting S3's own code and message (`s3_errors`).

boto3 is imported when a store is made, not with this module: it costs about 0.2 s, which every
importer of the providers would otherwise pay. The stores of one process make their clients from
one boto3 session of this module's: a session loads S3's service model once, 0.1 s of CPU that a
session per store paid again for every store (each delete gate of a purge opens the ledger).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from providers.call_log import botocore_handlers
from providers.errors import RetentionStoreError
from providers.retention.objects import SHA256, ObjectInfo, check_metadata
from providers.retention.s3_errors import RETRY, missing_bucket, translated
from providers.retention.settings import Settings

__all__ = ["MarkedRead", "ObjectInfo", "RetentionStore", "Uploaded", "holds"]

BACKEND = "retention"
# Four tries in all; the waits between them are botocore's (exponential, with jitter, < 20 s).
MAX_ATTEMPTS = 4
CONNECT_TIMEOUT = 5.0
# Between two reads of one answer, not for all of it: a large archive streams for longer.
READ_TIMEOUT = 60.0
# Files above this go up in parts, several at once, and one failed part is sent again alone.
MULTIPART_THRESHOLD = 64 * 2**20
# A streamed upload's parts: this size for the first PART_STEP parts, then twice as large for
# each PART_STEP more, so that S3's 10,000 parts reach its 5 TiB limit of one object while the
# memory a part takes stays small for the sizes most copies have (a larger part goes through a
# file). S3 wants every part but the last to be at least 5 MiB.
PART_SIZE = 16 * 2**20
PART_STEP = 1000
# One read of a stored object as it streams back.
READ_CHUNK = 2**20


@dataclass(frozen=True)
class Uploaded:
    """An object stored from a stream: its ETag, size and sha256 (hex), as sent."""

    etag: str
    size: int
    sha256: str


# The name `list` is a method of the store below; the annotations need the builtin.
_ObjectList = list[ObjectInfo]
_Keys = list[str]


# Sessions are not thread-safe, the clients they make are: one client is made at a time (a
# dynamic provider's host runs its resources' operations on threads).
_CLIENTS_MADE_ONE_AT_A_TIME = threading.Lock()


@functools.cache
def _session() -> Any:
    import boto3

    # Not boto3's default session, which any importer may configure: every client this one
    # makes is given its endpoint, region and keys.
    return boto3.session.Session()


class RetentionStore:
    """One bucket of an S3-compatible store. Keys are relative to the bucket."""

    def __init__(self, settings: Settings) -> None:
        from botocore.config import Config

        self._settings = settings
        with _CLIENTS_MADE_ONE_AT_A_TIME:
            self._s3: Any = _session().client(
                "s3",
                endpoint_url=settings.endpoint,
                region_name=settings.region,
                aws_access_key_id=settings.access_key,
                aws_secret_access_key=settings.secret_key,
                verify=str(settings.ca_file) if settings.ca_file else True,
                config=Config(
                    signature_version="s3v4",
                    s3={"addressing_style": "path"},
                    retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS},
                    connect_timeout=CONNECT_TIMEOUT,
                    read_timeout=READ_TIMEOUT,
                ),
            )
        for event, handler in botocore_handlers(BACKEND).items():
            self._s3.meta.events.register(event, handler)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> RetentionStore:
        """A store from RETENTION_S3_* (`settings` lists them)."""
        return cls(Settings.from_environment(env))

    @property
    def bucket(self) -> str:
        return self._settings.bucket

    def url(self, key: str = "") -> str:
        """`s3://<bucket>/<key>`, how errors and logs name an object."""
        return f"s3://{self.bucket}/{key}"

    def put(self, key: str, data: bytes | Path, metadata: Mapping[str, str]) -> str:
        """Stores `data` (bytes, or a file's content) at `key` with the user `metadata`,
        replacing what was there. Returns the stored object's ETag, without quotes.

        A file goes up in parts above MULTIPART_THRESHOLD, so a snapshot larger than S3's 5 GB
        limit for one PUT can be stored; its ETag is then S3's `<md5>-<parts>`."""
        check_metadata(metadata)
        doing = f"storing {self.url(key)} at {self._settings.endpoint}"
        if isinstance(data, bytes):
            with translated(doing):
                reply = self._s3.put_object(
                    Bucket=self.bucket, Key=key, Body=data, Metadata=dict(metadata)
                )
            return _etag(reply)
        from boto3.s3.transfer import TransferConfig

        with translated(doing):
            self._s3.upload_file(
                str(data),
                self.bucket,
                key,
                ExtraArgs={"Metadata": dict(metadata)},
                Config=TransferConfig(multipart_threshold=MULTIPART_THRESHOLD),
            )
        # A managed upload returns nothing: the store's own answer is the ETag.
        stored = self.head(key)
        if stored is None:
            says = "the upload completed, but a HEAD of the key right after it found nothing"
            raise RetentionStoreError(doing, says, RETRY)
        return stored.etag

    def upload(self, key: str, chunks: Iterable[bytes], metadata: Mapping[str, str]) -> Uploaded:
        """Stores the bytes `chunks` yields at `key`, in a multipart upload of bounded parts, as
        they come: the object may be far larger than this process's memory. The object appears
        only when the last part is in; a failure before, or one of `chunks`, aborts the upload,
        so nothing is left at `key` that was not there before. Uploads of `key` left by a run
        that was killed are aborted first."""
        check_metadata(metadata)
        doing = f"storing {self.url(key)} at {self._settings.endpoint}"
        self._abort_uploads(key, doing)
        with translated(doing):
            upload_id = self._s3.create_multipart_upload(
                Bucket=self.bucket, Key=key, Metadata=dict(metadata)
            )["UploadId"]
        digest, size = hashlib.sha256(), 0
        parts: list[dict[str, Any]] = []

        def counted() -> Iterator[bytes]:
            nonlocal size
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                yield chunk

        try:
            for part in _parts(counted()):
                with part, translated(f"{doing} (part {len(parts) + 1})"):
                    reply = self._s3.upload_part(
                        Bucket=self.bucket,
                        Key=key,
                        UploadId=upload_id,
                        PartNumber=len(parts) + 1,
                        Body=part,
                    )
                parts.append({"PartNumber": len(parts) + 1, "ETag": reply["ETag"]})
            with translated(doing):
                reply = self._s3.complete_multipart_upload(
                    Bucket=self.bucket,
                    Key=key,
                    UploadId=upload_id,
                    MultipartUpload={"Parts": parts},
                )
        except BaseException:
            self._abort(key, upload_id)
            raise
        return Uploaded(_etag(reply), size, digest.hexdigest())

    def _abort_uploads(self, key: str, doing: str) -> None:
        with translated(doing):
            reply = self._s3.list_multipart_uploads(Bucket=self.bucket, Prefix=key)
        for upload in reply.get("Uploads") or []:
            if upload.get("Key") == key:
                self._abort(key, str(upload["UploadId"]))

    def _abort(self, key: str, upload_id: str) -> None:
        # Best effort, on the way out of a failure that says more than this would: an upload
        # not aborted is no object, and the next upload of the key aborts it.
        with contextlib.suppress(Exception):
            self._s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)

    def create(
        self,
        key: str,
        data: bytes,
        metadata: Mapping[str, str],
        locked_until: datetime | None = None,
    ) -> str:
        """Stores `data` at `key` only if no object is there (a conditional PUT, If-None-Match:
        *): what is written this way is never replaced. With `locked_until` (a bucket made with
        Object Lock), no one can delete it before then either (COMPLIANCE mode). Returns the
        ETag; a taken key is a RetentionStoreError (PreconditionFailed)."""
        check_metadata(metadata)
        lock: dict[str, Any] = {}
        if locked_until is not None:
            lock = {"ObjectLockMode": "COMPLIANCE", "ObjectLockRetainUntilDate": locked_until}
        with translated(f"creating {self.url(key)} at {self._settings.endpoint}"):
            reply = self._s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                Metadata=dict(metadata),
                IfNoneMatch="*",
                **lock,
            )
        return _etag(reply)

    def object_lock_enabled(self) -> bool:
        """Whether the bucket was made with S3 Object Lock."""
        from botocore.exceptions import ClientError

        doing = f"reading the Object Lock configuration of {self.url()}"
        with translated(doing):
            try:
                reply = self._s3.get_object_lock_configuration(Bucket=self.bucket)
            except ClientError as error:
                if "ObjectLockConfigurationNotFound" in str(error.response.get("Error", {})):
                    return False
                raise
        return bool((reply.get("ObjectLockConfiguration") or {}).get("ObjectLockEnabled"))

    def head(self, key: str) -> ObjectInfo | None:
        """The object at `key` with its metadata, or None if there is none.

        S3 answers a HEAD of a missing key and of a missing bucket alike (404, no body), so a
        404 is told apart by asking for the bucket: a misspelt bucket must not read as "not
        archived yet"."""
        from botocore.exceptions import ClientError

        doing = f"reading {self.url(key)} at {self._settings.endpoint}"
        with translated(doing):
            try:
                reply = self._s3.head_object(Bucket=self.bucket, Key=key)
            except ClientError as error:
                if _status(error.response) != 404:
                    raise
                reply = None
            if reply is None:
                try:
                    self._s3.head_bucket(Bucket=self.bucket)
                except ClientError as error:
                    if _status(error.response) == 404:
                        raise missing_bucket(self.bucket, doing) from error
                    raise
                return None
        return ObjectInfo(
            key=key,
            size=int(reply["ContentLength"]),
            etag=_etag(reply),
            last_modified=_utc(reply["LastModified"]),
            metadata={str(k): str(v) for k, v in (reply.get("Metadata") or {}).items()},
        )

    def get(self, key: str) -> bytes:
        """The content of the object at `key`, whole; `download` is for large objects."""
        with translated(f"reading {self.url(key)} at {self._settings.endpoint}"):
            reply = self._s3.get_object(Bucket=self.bucket, Key=key)
            return bytes(reply["Body"].read())

    def chunks(self, key: str) -> Iterator[bytes]:
        """The content of the object at `key` as it streams back, in chunks of READ_CHUNK."""
        doing = f"reading {self.url(key)} at {self._settings.endpoint}"
        with translated(doing):
            body = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"]
        with body, translated(doing):
            yield from body.iter_chunks(READ_CHUNK)

    def sha256(self, key: str) -> str:
        """The sha256 (hex) of the object at `key`, read back whole as it streams."""
        digest = hashlib.sha256()
        for chunk in self.chunks(key):
            digest.update(chunk)
        return digest.hexdigest()

    def why_not_whole(self, key: str) -> str | None:
        """Why the object at `key` is not a whole copy, or None when it is (`MarkedRead`)."""
        return MarkedRead(self, key).why_not_whole()

    def download(self, key: str, path: Path) -> None:
        """Writes the object at `key` to `path`. The data goes to a temporary file beside `path`
        first, renamed over it once complete, so `path` is never left half written."""
        with translated(f"downloading {self.url(key)} from {self._settings.endpoint} to {path}"):
            self._s3.download_file(self.bucket, key, str(path))

    def list(self, prefix: str = "") -> _ObjectList:
        """Every object whose key starts with `prefix`, in key order, without metadata (S3's
        listing carries none; `head` reads it)."""
        objects: _ObjectList = []
        with translated(f"listing {self.url(prefix)}* at {self._settings.endpoint}"):
            pages = self._s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            )
            for page in pages:
                for item in page.get("Contents") or []:
                    objects.append(
                        ObjectInfo(
                            key=str(item["Key"]),
                            size=int(item["Size"]),
                            etag=_etag(item),
                            last_modified=_utc(item["LastModified"]),
                        )
                    )
        return objects

    def delete(self, key: str) -> None:
        """Removes the object at `key`. A key that is already gone is no error (S3 answers 204
        either way), so a rerun after a partial offboarding is safe."""
        with translated(f"deleting {self.url(key)} at {self._settings.endpoint}"):
            self._s3.delete_object(Bucket=self.bucket, Key=key)

    def mark(self, key: str, metadata: Mapping[str, str]) -> None:
        """Adds `metadata` to the object at `key`, its content unchanged (a copy onto itself
        with the metadata replaced, as S3 changes metadata)."""
        found = self.head(key)
        doing = f"marking {self.url(key)} at {self._settings.endpoint}"
        if found is None:
            raise RetentionStoreError(doing, "there is no object at that key")
        merged = {**(found.metadata or {}), **metadata}
        check_metadata(merged)
        from boto3.s3.transfer import TransferConfig

        # A managed copy: above the threshold it copies in parts, as one CopyObject stops at
        # 5 GB; the data never leaves the store either way.
        with translated(doing):
            self._s3.copy(
                {"Bucket": self.bucket, "Key": key},
                self.bucket,
                key,
                ExtraArgs={"Metadata": merged, "MetadataDirective": "REPLACE"},
                Config=TransferConfig(multipart_threshold=MULTIPART_THRESHOLD),
            )

    def delete_prefix(self, prefix: str) -> _Keys:
        """Removes every object whose key starts with `prefix` (not empty); returns their keys."""
        if not prefix:
            raise ValueError("an empty prefix would delete the whole bucket")
        keys = [info.key for info in self.list(prefix)]
        for key in keys:
            self.delete(key)
        return keys

    def close(self) -> None:
        self._s3.close()

    def __enter__(self) -> RetentionStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class MarkedRead:
    """A copy read back against the digest it is marked with (`objects.SHA256`), as it streams:
    iterate it for its bytes, then ask `why_not_whole`. Whole is marked, and reading back that
    digest, all of it: what a reader left unread is read then too."""

    def __init__(self, store: RetentionStore, key: str) -> None:
        self._store = store
        self._digest = hashlib.sha256()
        self._read = self._hashed(key)
        self.url = store.url(key)
        self.found = store.head(key)
        self.metadata: Mapping[str, str] = (self.found.metadata if self.found else None) or {}

    def _hashed(self, key: str) -> Iterator[bytes]:
        for chunk in self._store.chunks(key):
            self._digest.update(chunk)
            yield chunk

    def __iter__(self) -> Iterator[bytes]:
        return self._read

    def why_not_marked(self) -> str | None:
        """Why the object cannot be whole whatever it reads back, or None."""
        if self.found is None or self.found.size == 0:
            return f"{self.url} is not in the retention store"
        if not self.metadata.get(SHA256):
            return f"{self.url} has no digest: its upload never completed"
        return None

    def why_not_whole(self) -> str | None:
        if problem := self.why_not_marked():
            return problem
        for _ in self._read:
            pass
        read, marked = self._digest.hexdigest(), self.metadata[SHA256]
        if read != marked:
            return f"{self.url} reads back with sha256 {read}, not its recorded {marked}"
        return None


def _etag(reply: Mapping[str, Any]) -> str:
    return str(reply["ETag"]).strip('"')


def _utc(moment: datetime) -> datetime:
    # botocore reads a HEAD's date as UTC and a listing's in the local zone.
    return moment.astimezone(UTC)


def _parts(chunks: Iterable[bytes]) -> Iterator[Any]:
    """`chunks` regrouped into the parts of a multipart upload (PART_SIZE, growing), each a
    file object at its start, which the caller closes: in memory up to PART_SIZE, in a
    temporary file above it."""
    import tempfile

    def spooled() -> Any:
        return tempfile.SpooledTemporaryFile(max_size=PART_SIZE)

    count, part = 0, None
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            if part is None:
                part, room = spooled(), PART_SIZE * 2 ** (count // PART_STEP)
            taken = view[:room]
            part.write(taken)
            room -= len(taken)
            view = view[len(taken) :]
            if not room:
                part.seek(0)
                yield part
                count, part = count + 1, None
    if part is not None or not count:
        part = part or spooled()
        part.seek(0)
        yield part


def _status(response: Mapping[str, Any]) -> int:
    return int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)


def holds(key: str) -> str | None:
    """Why the store the environment names does not hold a whole copy at `key`, or None when it
    does (`RetentionStore.why_not_whole`): what a delete gate asks before it lets the data go."""
    with RetentionStore.from_environment() as store:
        return store.why_not_whole(key)
