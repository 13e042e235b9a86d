"""Where the retention object store is and how to sign in to it, read from the environment at
call time (`providers.environment` says why):

    RETENTION_S3_ENDPOINT          http(s)://HOST[:PORT] of an S3-compatible service
    RETENTION_S3_BUCKET            the bucket that holds every tenant's archives
    RETENTION_S3_ACCESS_KEY        the access key id; else
    RETENTION_S3_ACCESS_KEY_FILE   a file holding it (what `make -s env` exports)
    RETENTION_S3_SECRET_KEY        the secret access key; else
    RETENTION_S3_SECRET_KEY_FILE   a file holding it (what `make -s env` exports)
    RETENTION_S3_CA_FILE           optional: the CA bundle (PEM) that signed an https endpoint's
                                   certificate, when it is not a public CA's
    RETENTION_S3_REGION            optional: the region requests are signed for (default
                                   us-east-1, which S3-compatible stores take when they have none)
    RETENTION_S3_LEDGER_BUCKET     optional: the bucket of the retention ledger (`ledger`), made
                                   with S3 Object Lock so that no entry can be deleted or
                                   replaced; default: the ledger is kept in RETENTION_S3_BUCKET
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from providers import environment
from providers.errors import RetentionStoreError

__all__ = ["DEFAULT_REGION", "Settings"]

DEFAULT_REGION = "us-east-1"
_DOING = "reading the retention store settings from the environment"
_HOW = 'export it (for the sandbox: eval "$(make -s env)")'
# S3's rules for a bucket name that path-style addressing can carry: 3 to 63 lowercase letters,
# digits, dots and hyphens, starting and ending with a letter or digit.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


@dataclass(frozen=True)
class Settings:
    endpoint: str
    bucket: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    ca_file: Path | None = None
    region: str = DEFAULT_REGION
    ledger_bucket: str | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in `env` (default: this process's environment), or a
        RetentionStoreError that names the variable to set."""
        env = os.environ if env is None else env
        try:
            endpoint = environment.required(env, "RETENTION_S3_ENDPOINT").rstrip("/")
            bucket = environment.required(env, "RETENTION_S3_BUCKET")
            ca_file = environment.ca_file(env, "RETENTION_S3_CA_FILE")
        except ValueError as error:
            raise RetentionStoreError(_DOING, str(error), _HOW) from None
        try:
            access_key = environment.secret(env, "RETENTION_S3_ACCESS_KEY")
            secret_key = environment.secret(env, "RETENTION_S3_SECRET_KEY")
        except ValueError as error:
            how = f"export it, or the _FILE variable naming a file that holds it; {_HOW}"
            raise RetentionStoreError(_DOING, str(error), how) from None
        if not endpoint.startswith(("https://", "http://")):
            raise RetentionStoreError(
                _DOING,
                f"RETENTION_S3_ENDPOINT is {endpoint!r}, not an http(s) URL",
                "set it to the store's base URL, such as https://s3.example.internal",
            )
        ledger_bucket = env.get("RETENTION_S3_LEDGER_BUCKET", "").strip() or None
        for name, value in (
            ("RETENTION_S3_BUCKET", bucket),
            ("RETENTION_S3_LEDGER_BUCKET", ledger_bucket),
        ):
            if value is not None and (not _BUCKET.fullmatch(value) or ".." in value):
                raise RetentionStoreError(
                    _DOING,
                    f"{name} is {value!r}, not an S3 bucket name",
                    "set it to the bucket's name: 3 to 63 lowercase letters, digits, dots and "
                    "hyphens",
                )
        return cls(
            endpoint=endpoint,
            bucket=bucket,
            access_key=access_key,
            secret_key=secret_key,
            ca_file=ca_file,
            region=env.get("RETENTION_S3_REGION", "").strip() or DEFAULT_REGION,
            ledger_bucket=ledger_bucket,
        )

    def of_ledger(self) -> Settings:
        """The same store, its bucket the ledger's."""
        return replace(self, bucket=self.ledger_bucket or self.bucket)
