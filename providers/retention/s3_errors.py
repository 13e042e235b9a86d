"""S3's failures in the operator's words: `translated(doing)` turns what boto3 raises inside it
into a RetentionStoreError that says what was being done to which object, quotes S3's own error
code and message (or the transport's words when no answer came), and says what to do next.

Only the code and message are quoted: the rest of S3's error body can be long (a refused
signature comes back with the string that was signed), and none of it helps the operator more.
No credential is ever part of what is quoted. boto3 and botocore are imported only once a
request is made, as in `client`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from providers.errors import RetentionStoreError

__all__ = ["RETRY", "missing_bucket", "store_error", "translated"]

_CREDENTIALS = (
    "check RETENTION_S3_ACCESS_KEY(_FILE) and RETENTION_S3_SECRET_KEY(_FILE): the store does "
    "not accept them"
)
RETRY = "retry later; if it persists, read the store's logs"
# What to do next, by S3's error code. HEAD answers carry no body, so their code is the status.
_NEXT_STEP = {
    "NoSuchBucket": "create the bucket, or set RETENTION_S3_BUCKET to the one that exists",
    "NoSuchKey": "list the tenant's prefix to see what is stored under it",
    "404": "list the tenant's prefix to see what is stored under it",
    "AccessDenied": "give the access key read and write on the bucket, or use one that has it",
    "403": "give the access key read and write on the bucket, or use one that has it",
    "InvalidAccessKeyId": _CREDENTIALS,
    "SignatureDoesNotMatch": f"{_CREDENTIALS} (and RETENTION_S3_REGION, if the store has one)",
    "RequestTimeTooSkewed": "set this host's clock right (NTP): S3 refuses requests signed "
    "more than 15 minutes off its own",
    "AuthorizationHeaderMalformed": "set RETENTION_S3_REGION to the region the store expects",
    "EntityTooLarge": "split the archive: a single upload holds at most 5 GB",
    "BadDigest": "upload it again: the data changed on its way to the store",
    "InvalidDigest": "upload it again: the data changed on its way to the store",
    "PreconditionFailed": "an object is already at that key, and what is created there is "
    "never replaced: write under a new key",
    "SlowDown": RETRY,
    "ServiceUnavailable": RETRY,
    "InternalError": RETRY,
}
_UNREACHABLE = (
    "check that RETENTION_S3_ENDPOINT names the store and that it is up (for the sandbox: make "
    "sandbox-up)"
)
_TLS = "set RETENTION_S3_CA_FILE to the CA bundle (PEM) that signed the store's certificate"


@contextmanager
def translated(doing: str) -> Iterator[None]:
    """Runs the block; a boto3 or botocore error inside it becomes a RetentionStoreError."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (ClientError, BotoCoreError, Boto3Error) as error:
        raise store_error(error, doing) from error


def missing_bucket(bucket: str, doing: str) -> RetentionStoreError:
    """The error for a bucket that a HEAD found missing (a HEAD answer names no code)."""
    return RetentionStoreError(
        doing,
        f"NoSuchBucket (HTTP 404): the bucket {bucket!r} does not exist",
        _NEXT_STEP["NoSuchBucket"],
    )


def store_error(error: Exception, doing: str) -> RetentionStoreError:
    """The RetentionStoreError for `error`, which boto3 or botocore raised while `doing`."""
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError, SSLError

    if not isinstance(error, ClientError) and isinstance(error.__context__, ClientError):
        # boto3's upload_file reraises S3's answer to a part as S3UploadFailedError, as text.
        error = error.__context__
    if isinstance(error, ClientError):
        code, says, status = _answer(error.response)
        next_step = _NEXT_STEP.get(code) or (RETRY if status >= 500 else "")
        return RetentionStoreError(doing, says, next_step)
    if isinstance(error, SSLError):
        return RetentionStoreError(doing, str(error), _TLS)
    if isinstance(error, ConnectionError | HTTPClientError):
        return RetentionStoreError(doing, str(error), _UNREACHABLE)
    return RetentionStoreError(doing, str(error))


def _answer(response: Any) -> tuple[str, str, int]:
    """S3's error code, the words to quote, and the HTTP status, from botocore's parsed reply."""
    details = response.get("Error") or {}
    status = int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
    code = str(details.get("Code") or status)
    message = str(details.get("Message") or "").strip().rstrip(".")
    if code.isdigit():
        # A HEAD answer: no body, so botocore's code is the status and its message the reason.
        return code, f"HTTP {status} {message}".strip(), status
    says = f"{code} (HTTP {status})"
    return code, f"{says}: {message}" if message else says, status
