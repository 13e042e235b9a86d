"""The retention store's settings come from RETENTION_S3_*; each error names the variable to set
and never quotes a credential."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.errors import RetentionStoreError
from providers.retention.settings import DEFAULT_REGION, Settings
from sandbox.layout import SandboxLayout
from sandbox.retention_store.service import ensure_credentials

SECRET = "s3cr3t-never-printed"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    access, secret = tmp_path / "access-key", tmp_path / "secret-key"
    access.write_text("AKIDEXAMPLE\n")
    secret.write_text(f"{SECRET}\n")
    return {
        "RETENTION_S3_ENDPOINT": "http://127.0.0.1:29100/",
        "RETENTION_S3_BUCKET": "retention",
        "RETENTION_S3_ACCESS_KEY_FILE": str(access),
        "RETENTION_S3_SECRET_KEY_FILE": str(secret),
    }


def test_what_make_env_exports_is_enough(env: dict[str, str]) -> None:
    settings = Settings.from_environment(env)
    assert settings.endpoint == "http://127.0.0.1:29100"
    assert settings.bucket == "retention"
    assert (settings.access_key, settings.secret_key) == ("AKIDEXAMPLE", SECRET)
    assert settings.ca_file is None
    assert settings.region == DEFAULT_REGION == "us-east-1"


def test_a_variable_wins_over_its_file_and_the_optional_ones_are_read(
    env: dict[str, str], tmp_path: Path
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env |= {
        "RETENTION_S3_ENDPOINT": "https://s3.example.internal",
        "RETENTION_S3_SECRET_KEY": "direct",
        "RETENTION_S3_CA_FILE": str(ca),
        "RETENTION_S3_REGION": "eu-central-1",
    }
    settings = Settings.from_environment(env)
    assert settings.secret_key == "direct"
    assert settings.ca_file == ca
    assert settings.region == "eu-central-1"


@pytest.mark.parametrize(
    ("unset", "named"),
    [
        ("RETENTION_S3_ENDPOINT", "RETENTION_S3_ENDPOINT is not set"),
        ("RETENTION_S3_BUCKET", "RETENTION_S3_BUCKET is not set"),
        (
            "RETENTION_S3_ACCESS_KEY_FILE",
            "neither RETENTION_S3_ACCESS_KEY nor RETENTION_S3_ACCESS_KEY_FILE is set",
        ),
        (
            "RETENTION_S3_SECRET_KEY_FILE",
            "neither RETENTION_S3_SECRET_KEY nor RETENTION_S3_SECRET_KEY_FILE is set",
        ),
    ],
)
def test_a_missing_variable_is_named(env: dict[str, str], unset: str, named: str) -> None:
    del env[unset]
    with pytest.raises(RetentionStoreError, match=named) as caught:
        Settings.from_environment(env)
    assert "reading the retention store settings from the environment" in str(caught.value)
    assert "make -s env" in caught.value.next_step


def test_an_unreadable_credential_file_is_named(env: dict[str, str]) -> None:
    env["RETENTION_S3_SECRET_KEY_FILE"] = "/nonexistent/secret-key"
    with pytest.raises(RetentionStoreError, match="/nonexistent/secret-key cannot be read"):
        Settings.from_environment(env)


@pytest.mark.parametrize(
    ("name", "value", "named"),
    [
        ("RETENTION_S3_ENDPOINT", "127.0.0.1:29100", "not an http"),
        ("RETENTION_S3_BUCKET", "Retention", "not an S3 bucket name"),
        ("RETENTION_S3_BUCKET", "ab", "not an S3 bucket name"),
        ("RETENTION_S3_BUCKET", "a..b", "not an S3 bucket name"),
        ("RETENTION_S3_LEDGER_BUCKET", "Ledger", "not an S3 bucket name"),
        ("RETENTION_S3_CA_FILE", "/nonexistent/ca.pem", "which is not a file"),
    ],
)
def test_a_bad_value_is_named(env: dict[str, str], name: str, value: str, named: str) -> None:
    env[name] = value
    with pytest.raises(RetentionStoreError, match=named) as caught:
        Settings.from_environment(env)
    assert name in str(caught.value)


def test_credentials_are_never_shown(env: dict[str, str]) -> None:
    settings = Settings.from_environment(env)
    assert SECRET not in repr(settings)
    assert "AKIDEXAMPLE" not in repr(settings)
    env["RETENTION_S3_BUCKET"] = "Bad_Bucket"
    with pytest.raises(RetentionStoreError) as caught:
        Settings.from_environment(env)
    assert SECRET not in str(caught.value)


def test_what_the_sandbox_exports_is_what_the_settings_read(tmp_path: Path) -> None:
    layout = SandboxLayout(tmp_path / "sandbox")
    ensure_credentials(layout.retention_store)
    exported = layout.environment()
    settings = Settings.from_environment(exported)
    assert settings.endpoint == f"http://127.0.0.1:{layout.ports.retention_store}"
    assert settings.bucket == "retention"
    # Credentials as 0600 files only, never as values (`make -s env` output is pasted in tickets).
    assert settings.secret_key not in "".join(exported.values())
    assert settings.access_key not in "".join(exported.values())
    assert {name for name in exported if name.startswith("RETENTION_S3_")} == {
        "RETENTION_S3_ENDPOINT",
        "RETENTION_S3_BUCKET",
        "RETENTION_S3_LEDGER_BUCKET",
        "RETENTION_S3_ACCESS_KEY_FILE",
        "RETENTION_S3_SECRET_KEY_FILE",
    }
    assert settings.ledger_bucket == "retention-ledger"
    assert settings.of_ledger().bucket == "retention-ledger"
    for name in ("RETENTION_S3_ACCESS_KEY_FILE", "RETENTION_S3_SECRET_KEY_FILE"):
        assert Path(exported[name]).stat().st_mode & 0o777 == 0o600


def test_the_credentials_are_made_once(tmp_path: Path) -> None:
    ensure_credentials(tmp_path)
    first = [(tmp_path / name).read_text() for name in ("access-key", "secret-key")]
    ensure_credentials(tmp_path)
    assert [(tmp_path / name).read_text() for name in ("access-key", "secret-key")] == first


def test_the_weka_emulator_reaches_its_object_store_with_the_same_settings(
    tmp_path: Path,
) -> None:
    """The Weka emulator's object store bucket is the retention store: its service gets what a
    client reads, as paths of credential files (a service's environment is recorded)."""
    layout = SandboxLayout(tmp_path / "sandbox")
    ensure_credentials(layout.retention_store)
    weka = next(s for s in layout.services() if s.name == "weka-emulator")
    assert dict(weka.env) == {
        k: v for k, v in layout.environment().items() if k.startswith("RETENTION_S3_")
    }
    settings = Settings.from_environment(weka.env)
    assert settings.secret_key not in "".join(weka.env.values())
    assert settings.secret_key not in " ".join(weka.argv)
