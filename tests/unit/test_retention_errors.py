"""S3's failures become RetentionStoreErrors that name the object, quote S3's own code and
message, and say what to do next; and importing the client costs no boto3."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    ParamValidationError,
    SSLError,
)

from providers.errors import BackendError, RetentionStoreError
from providers.retention.s3_errors import missing_bucket, store_error, translated
from tests.conftest import ROOT

DOING = "storing s3://retention/tenant-foo/a at http://127.0.0.1:29100"


def client_error(code: str, message: str, status: int, **extra: Any) -> ClientError:
    body = {"Error": {"Code": code, "Message": message, **extra}}
    return ClientError({**body, "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


def test_s3s_code_and_message_are_quoted_with_the_next_step() -> None:
    answer = client_error("NoSuchBucket", "The specified bucket does not exist.", 404)
    error = store_error(answer, DOING)
    assert isinstance(error, BackendError)
    assert str(error) == (
        f"{DOING} failed: NoSuchBucket (HTTP 404): The specified bucket does not exist; "
        "create the bucket, or set RETENTION_S3_BUCKET to the one that exists"
    )


def test_a_refused_signature_quotes_no_more_than_code_and_message() -> None:
    error = store_error(
        client_error(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
            403,
            StringToSign="AWS4-HMAC-SHA256\n20261130T225419Z",
            AWSAccessKeyId="AKIDEXAMPLE",
        ),
        DOING,
    )
    assert "StringToSign" not in str(error)
    assert "AWS4-HMAC-SHA256" not in str(error)
    assert "AKIDEXAMPLE" not in str(error)
    assert "RETENTION_S3_SECRET_KEY" in error.next_step


def test_a_head_answer_has_no_body_and_is_read_by_its_status() -> None:
    error = store_error(client_error("404", "Not Found", 404), DOING)
    assert error.backend_says == "HTTP 404 Not Found"
    assert "list the tenant's prefix" in error.next_step


def test_an_unknown_5xx_is_worth_a_retry_and_an_unknown_4xx_says_only_s3s_words() -> None:
    assert "retry later" in store_error(client_error("Weird", "boom", 502), DOING).next_step
    assert store_error(client_error("Weird", "no", 409), DOING).next_step == ""


def test_a_failed_managed_upload_is_read_from_the_answer_under_it() -> None:
    def upload() -> None:
        try:
            raise client_error("AccessDenied", "Access Denied.", 403)
        except ClientError as answer:
            # What boto3's upload_file does: S3's answer becomes text, and the context.
            raise S3UploadFailedError(f"Failed to upload f to retention/k: {answer}")  # noqa: B904

    with pytest.raises(S3UploadFailedError) as caught:
        upload()
    assert store_error(caught.value, DOING).backend_says == "AccessDenied (HTTP 403): Access Denied"


def test_no_answer_at_all_points_at_the_endpoint_or_the_ca() -> None:
    unreachable = store_error(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), DOING)
    assert "http://127.0.0.1:1" in unreachable.backend_says
    assert "RETENTION_S3_ENDPOINT" in unreachable.next_step
    tls = store_error(SSLError(endpoint_url="https://s3", error="certificate verify failed"), DOING)
    assert "RETENTION_S3_CA_FILE" in tls.next_step


def test_translated_raises_the_backend_error_and_keeps_the_cause() -> None:
    cause = ParamValidationError(report="Invalid bucket name")
    with pytest.raises(RetentionStoreError, match="Invalid bucket") as caught, translated(DOING):
        raise cause
    assert caught.value.__cause__ is cause


def test_translated_lets_other_errors_through() -> None:
    with pytest.raises(KeyError), translated(DOING):
        raise KeyError("not the store's")


def test_a_missing_bucket_found_by_head_is_named() -> None:
    error = missing_bucket("retention", DOING)
    assert "NoSuchBucket" in error.backend_says
    assert "'retention'" in error.backend_says


def test_importing_the_client_imports_no_boto3() -> None:
    # boto3 takes about 0.2 s to import; the store imports it only when one is made.
    probe = "import sys, providers.retention.client; print(sorted(m for m in sys.modules " + (
        "if m.split('.')[0] in ('boto3', 'botocore', 'pulumi', 'pydantic')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
