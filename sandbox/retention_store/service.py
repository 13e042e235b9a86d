"""The retention object store as a sandbox service: versitygw's posix backend over `data/`, plain
HTTP on loopback, and the bucket offboarding writes to."""

from __future__ import annotations

import secrets
import string
import sys
from pathlib import Path

import httpx

from providers.files import write_atomic
from sandbox.service import Service, built_tool, source_revision
from sandbox.supervisor import SandboxError

BUCKET = "retention"
# The retention ledger's bucket, made with S3 Object Lock: no entry can be deleted or replaced.
LEDGER_BUCKET = "retention-ledger"
# Pulumi's state, for stacks shared between machines (the self-managed S3 backend), apart from
# what offboarding keeps.
STATE_BUCKET = "pulumi-state"
# The profile of the shared credentials file the Pulumi CLI reads the state bucket's keys from.
STATE_PROFILE = "gpu-tenants-state"
# What S3-compatible stores take for a region when they have none; versitygw's default too.
REGION = "us-east-1"
# versitygw serves this without a signature once asked to (--health); the readiness probe's.
HEALTH_PATH = "/health"
_ACCESS_KEY_ALPHABET = string.ascii_uppercase + string.digits


def retention_store_endpoint(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def access_key_file(state_dir: Path) -> Path:
    return state_dir / "access-key"


def secret_key_file(state_dir: Path) -> Path:
    return state_dir / "secret-key"


def client_environment(state_dir: Path, port: int) -> dict[str, str]:
    """What a client of this store reads (`providers.retention.settings`): its endpoint, its
    bucket and the files that hold its credentials, never the credentials themselves."""
    return {
        "RETENTION_S3_ENDPOINT": retention_store_endpoint(port),
        "RETENTION_S3_BUCKET": BUCKET,
        "RETENTION_S3_LEDGER_BUCKET": LEDGER_BUCKET,
        "RETENTION_S3_ACCESS_KEY_FILE": str(access_key_file(state_dir)),
        "RETENTION_S3_SECRET_KEY_FILE": str(secret_key_file(state_dir)),
    }


def state_credentials_file(state_dir: Path) -> Path:
    return state_dir / "aws-credentials"


def state_backend_environment(state_dir: Path, port: int) -> dict[str, str]:
    """What a Pulumi CLI needs to keep stacks in the state bucket: the backend's URL (for
    PULUMI_BACKEND_URL, when a shared backend is wanted) and the shared credentials file that
    holds the bucket's keys under STATE_PROFILE, so that no key is ever in the environment."""
    query = (
        f"endpoint={retention_store_endpoint(port)}&use_path_style=true&region={REGION}"
        f"&profile={STATE_PROFILE}"
    )
    return {
        "GPU_TENANTS_S3_STATE_URL": f"s3://{STATE_BUCKET}?{query}",
        "AWS_SHARED_CREDENTIALS_FILE": str(state_credentials_file(state_dir)),
    }


def data_dir(state_dir: Path) -> Path:
    """The gateway's root: each directory in it a bucket, each file below one an object."""
    return state_dir / "data"


def ensure_credentials(state_dir: Path) -> None:
    """Makes the root access key and secret once, as 0600 files; later starts keep them, so the
    paths `make -s env` exported stay good."""
    state_dir.mkdir(parents=True, exist_ok=True)
    # The shape of an AWS access key id: 20 uppercase letters and digits.
    access_key = "".join(secrets.choice(_ACCESS_KEY_ALPHABET) for _ in range(20))
    made = {
        access_key_file(state_dir): access_key,
        secret_key_file(state_dir): secrets.token_urlsafe(30),
    }
    for path, value in made.items():
        if not path.is_file() or not path.read_text().strip():
            write_atomic(path, value + "\n", new_file_mode=0o600)
        path.chmod(0o600)
    profile = (
        f"[{STATE_PROFILE}]\n"
        f"aws_access_key_id = {access_key_file(state_dir).read_text().strip()}\n"
        f"aws_secret_access_key = {secret_key_file(state_dir).read_text().strip()}\n"
    )
    write_atomic(state_credentials_file(state_dir), profile, new_file_mode=0o600)


def retention_store_service(state_dir: Path, port: int) -> Service:
    def ready() -> bool:
        try:
            reply = httpx.get(f"{retention_store_endpoint(port)}{HEALTH_PATH}", timeout=2)
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    def prepare() -> None:
        ensure_credentials(state_dir)
        data_dir(state_dir).mkdir(parents=True, exist_ok=True)

    return Service(
        name="retention-store",
        argv=[
            sys.executable,
            "-m",
            "sandbox.retention_store",
            f"--access-key-file={access_key_file(state_dir)}",
            f"--secret-key-file={secret_key_file(state_dir)}",
            "--",
            built_tool("versitygw"),
            f"--port=127.0.0.1:{port}",
            f"--region={REGION}",
            f"--health={HEALTH_PATH}",
            # No line per request in the log: uploads of a large snapshot send thousands.
            "--quiet",
            "posix",
            str(data_dir(state_dir)),
        ],
        ports=(port,),
        cwd=Path(__file__).resolve().parents[2],
        prepare=prepare,
        revision=source_revision(Path(__file__).parent),
        ready=ready,
    )


def seed_bucket(
    state_dir: Path, port: int, bucket: str = BUCKET, *, object_lock: bool = False
) -> bool:
    """Creates `bucket` (with S3 Object Lock if asked) if it is missing, as the platform team
    would before offboarding first writes to it. Returns whether it had to."""
    # Imported here: boto3 takes about 0.2 s, and `make -s env` imports this module.
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    s3 = boto3.session.Session().client(
        "s3",
        endpoint_url=retention_store_endpoint(port),
        region_name=REGION,
        aws_access_key_id=access_key_file(state_dir).read_text().strip(),
        aws_secret_access_key=secret_key_file(state_dir).read_text().strip(),
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    try:
        s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=object_lock)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "BucketAlreadyOwnedByYou":
            return False
        raise SandboxError(f"retention-store refused to create bucket {bucket}: {error}") from None
    except BotoCoreError as error:
        raise SandboxError(f"creating the bucket {bucket} in retention-store: {error}") from None
    finally:
        s3.close()
    return True
