"""What the fleet's scale-out runs on in the sandbox: the Temporal dev server, answering its own
CLI, and Pulumi's self-managed S3 backend in the store's state bucket, through the real engine,
with the bucket's keys read from a credentials file, never from the environment."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sandbox.layout import SandboxLayout
from sandbox.retention_store import (
    BUCKET,
    LEDGER_BUCKET,
    STATE_BUCKET,
    access_key_file,
    secret_key_file,
    state_access_key_file,
    state_secret_key_file,
)
from sandbox.retention_store.service import REGION, retention_store_endpoint
from tests.backends import run_pulumi

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def test_the_temporal_dev_server_serves_its_cli() -> None:
    # TEMPORAL_ADDRESS, exported by the sandbox, is where the CLI connects.
    result = subprocess.run(
        ["temporal", "operator", "cluster", "health"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "SERVING"
    listed = subprocess.run(
        ["temporal", "operator", "namespace", "describe", "--namespace", "default", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(listed.stdout)["namespaceInfo"]["name"] == "default"


def test_stacks_live_in_the_state_bucket_with_keys_from_the_credentials_file(
    sandbox: SandboxLayout, tmp_path: Path
) -> None:
    project = tmp_path / "shared-state"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        "name: shared-state\nruntime:\n  name: python\n  options:\n"
        f"    virtualenv: {Path(__file__).resolve().parents[2] / 'venv'}\n"
    )
    (project / "__main__.py").write_text('import pulumi\n\npulumi.export("where", "s3")\n')
    stack = f"t{os.getpid()}"
    env = {
        "PULUMI_BACKEND_URL": os.environ["GPU_TENANTS_S3_STATE_URL"],
        "PULUMI_CONFIG_PASSPHRASE": "test-only-passphrase",
        # Nothing of the store's keys in the environment: the profile in the file is all.
        "AWS_ACCESS_KEY_ID": "",
        "AWS_SECRET_ACCESS_KEY": "",
    }
    credentials = Path(os.environ["AWS_SHARED_CREDENTIALS_FILE"])
    assert credentials.stat().st_mode & 0o777 == 0o600
    run_pulumi(env, project, "stack", "init", stack)
    try:
        run_pulumi(env, project, "up", "--stack", stack, "--yes", "--skip-preview")
        outputs = json.loads(run_pulumi(env, project, "stack", "output", "--stack", stack, "-j"))
        assert outputs == {"where": "s3"}
        s3 = store_client(sandbox, access_key_file, secret_key_file)
        key = f".pulumi/stacks/shared-state/{stack}.json"
        checkpoint = json.loads(s3.get_object(Bucket=STATE_BUCKET, Key=key)["Body"].read())
        resources = checkpoint["checkpoint"]["latest"]["resources"]
        assert [r["type"] for r in resources] == ["pulumi:pulumi:Stack"]
    finally:
        run_pulumi(env, project, "stack", "rm", stack, "--yes", "--force")


def store_client(sandbox: SandboxLayout, access: Any, secret: Any) -> Any:
    """An S3 client of the sandbox's store with the keys in the files `access` and `secret`
    name for its state directory."""
    store = sandbox.retention_store
    return boto3.session.Session().client(
        "s3",
        endpoint_url=retention_store_endpoint(sandbox.ports.retention_store),
        region_name=REGION,
        aws_access_key_id=access(store).read_text().strip(),
        aws_secret_access_key=secret(store).read_text().strip(),
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )


def test_the_state_keys_reach_the_state_bucket_and_no_retention_archive(
    sandbox: SandboxLayout,
) -> None:
    state = store_client(sandbox, state_access_key_file, state_secret_key_file)
    # The credentials file Pulumi reads holds the state bucket owner's keys, not the root's.
    profile = Path(os.environ["AWS_SHARED_CREDENTIALS_FILE"]).read_text()
    assert state_access_key_file(sandbox.retention_store).read_text().strip() in profile
    assert access_key_file(sandbox.retention_store).read_text().strip() not in profile
    key = f"probe-{os.getpid()}"
    state.put_object(Bucket=STATE_BUCKET, Key=key, Body=b"state")
    try:
        assert state.get_object(Bucket=STATE_BUCKET, Key=key)["Body"].read() == b"state"
        assert [b["Name"] for b in state.list_buckets()["Buckets"]] == [STATE_BUCKET]
        for archive in (BUCKET, LEDGER_BUCKET):
            with pytest.raises(ClientError) as refused:
                state.list_objects_v2(Bucket=archive)
            assert refused.value.response["Error"]["Code"] == "AccessDenied"
            with pytest.raises(ClientError) as refused:
                state.put_object(Bucket=archive, Key=key, Body=b"not mine")
            assert refused.value.response["Error"]["Code"] == "AccessDenied"
    finally:
        state.delete_object(Bucket=STATE_BUCKET, Key=key)
