"""The retention object store of the sandbox: Versity's S3 gateway (versitygw, built by `make
setup`) serving a directory as S3 on 127.0.0.1, where offboarding keeps tenants' archives.

Buckets are directories under `data/` and objects files under them, their metadata in extended
attributes, so what the store holds can be read with `ls` too. The root credentials are made
once, as 0600 files, and handed to the gateway through its environment (`__main__` says why).
"""

from sandbox.retention_store.service import (
    BUCKET,
    LEDGER_BUCKET,
    STATE_BUCKET,
    access_key_file,
    client_environment,
    retention_store_endpoint,
    retention_store_service,
    secret_key_file,
    seed_bucket,
    seed_state_owner,
    state_access_key_file,
    state_backend_environment,
    state_secret_key_file,
)

__all__ = [
    "BUCKET",
    "LEDGER_BUCKET",
    "STATE_BUCKET",
    "access_key_file",
    "client_environment",
    "retention_store_endpoint",
    "retention_store_service",
    "secret_key_file",
    "seed_bucket",
    "seed_state_owner",
    "state_access_key_file",
    "state_backend_environment",
    "state_secret_key_file",
]
