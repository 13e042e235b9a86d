"""The retention object store as a sandbox service: versitygw's posix backend over `data/`, plain
HTTP on loopback, and the bucket offboarding writes to. Its internal IAM (`iam/`) holds one
account besides root: the Pulumi state bucket's owner, so the keys that reach the state never
reach the retention archives (versitygw's `user` role sees only the buckets it owns)."""

from __future__ import annotations

import hashlib
import secrets
import string
from pathlib import Path

import httpx

from providers.files import write_atomic
from sandbox.service import PYTHON, Service, built_tool, source_revision
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


def state_access_key_file(state_dir: Path) -> Path:
    return state_dir / "state-access-key"


def state_secret_key_file(state_dir: Path) -> Path:
    return state_dir / "state-secret-key"


def iam_dir(state_dir: Path) -> Path:
    return state_dir / "iam"


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
    """Makes the root's and the state bucket owner's access keys and secrets once, as 0600
    files; later starts keep them, so the paths `make -s env` exported stay good."""
    state_dir.mkdir(parents=True, exist_ok=True)
    for access, secret in (
        (access_key_file(state_dir), secret_key_file(state_dir)),
        (state_access_key_file(state_dir), state_secret_key_file(state_dir)),
    ):
        # The shape of an AWS access key id: 20 uppercase letters and digits.
        made = {
            access: "".join(secrets.choice(_ACCESS_KEY_ALPHABET) for _ in range(20)),
            secret: secrets.token_urlsafe(30),
        }
        for path, value in made.items():
            if not path.is_file() or not path.read_text().strip():
                write_atomic(path, value + "\n", new_file_mode=0o600)
            path.chmod(0o600)
    profile = (
        f"[{STATE_PROFILE}]\n"
        f"aws_access_key_id = {_read(state_access_key_file(state_dir))}\n"
        f"aws_secret_access_key = {_read(state_secret_key_file(state_dir))}\n"
    )
    write_atomic(state_credentials_file(state_dir), profile, new_file_mode=0o600)


def _read(path: Path) -> str:
    return path.read_text().strip()


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
        iam_dir(state_dir).mkdir(mode=0o700, exist_ok=True)

    return Service(
        name="retention-store",
        argv=[
            PYTHON,
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
            f"--iam-dir={iam_dir(state_dir)}",
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
        aws_access_key_id=_read(access_key_file(state_dir)),
        aws_secret_access_key=_read(secret_key_file(state_dir)),
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    try:
        s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=object_lock)
    except ClientError as error:
        # The state bucket belongs to its own account once seed_state_owner has run.
        if error.response.get("Error", {}).get("Code") in (
            "BucketAlreadyOwnedByYou",
            "BucketAlreadyExists",
        ):
            return False
        raise SandboxError(f"retention-store refused to create bucket {bucket}: {error}") from None
    except BotoCoreError as error:
        raise SandboxError(f"creating the bucket {bucket} in retention-store: {error}") from None
    finally:
        s3.close()
    return True


def seed_state_owner(state_dir: Path, port: int) -> bool:
    """Makes the state bucket's owner, an IAM account of the `user` role with the keys the
    state's credentials file holds, if missing, and hands it the bucket. Returns whether it had
    to make the account."""
    access = _read(state_access_key_file(state_dir))
    account = (
        f"<Account><Access>{access}</Access><Secret>{_read(state_secret_key_file(state_dir))}"
        "</Secret><Role>user</Role></Account>"
    )
    made = _admin(state_dir, port, "/create-user", {}, account.encode(), "XAdminUserExists")
    _admin(state_dir, port, "/change-bucket-owner", {"bucket": STATE_BUCKET, "owner": access})
    return made


def _admin(
    state_dir: Path,
    port: int,
    path: str,
    params: dict[str, str],
    body: bytes = b"",
    fine_if: str = "",
) -> bool:
    """One call of versitygw's admin API (PATCH, signed with the root's keys, as its own admin
    CLI signs it); False when it answers with the error code `fine_if`."""
    # Imported here: boto3 takes about 0.2 s, and `make -s env` imports this module.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = str(httpx.URL(f"{retention_store_endpoint(port)}{path}", params=params))
    request = AWSRequest(
        method="PATCH",
        url=url,
        data=body,
        headers={"X-Amz-Content-Sha256": hashlib.sha256(body).hexdigest()},
    )
    root = Credentials(_read(access_key_file(state_dir)), _read(secret_key_file(state_dir)))
    SigV4Auth(root, "s3", REGION).add_auth(request)
    try:
        reply = httpx.patch(url, content=body, headers=dict(request.headers), timeout=30)
    except httpx.HTTPError as error:
        raise SandboxError(f"retention-store's admin API ({path}): {error}") from None
    if reply.is_success:
        return True
    if fine_if and f"<Code>{fine_if}</Code>" in reply.text:
        return False
    raise SandboxError(f"retention-store's admin API refused {path}: {reply.text}")
