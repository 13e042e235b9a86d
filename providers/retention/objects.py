"""What the retention store holds, and how offboarding names it.

Archives (a tenant's Slurm accounting, its uploaded snapshots) are stored under the tenant's
slug, `<tenant-slug>/...`, each carrying the user metadata `tenant` and `retention-until` (an
ISO date). A head or a listing then tells whose an object is and until when it must be kept,
with no catalogue kept elsewhere to drift from the store.

User metadata travels as HTTP headers (`x-amz-meta-<name>`), so `check_metadata` holds it to
what survives that trip unchanged: lowercase names (S3 gives them back lowercased) and printable
ASCII values, within S3's 2 KB limit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from providers.errors import BackendError
from providers.weka.settings import UPLOADS_PREFIX

__all__ = [
    "COPIED_PATH",
    "FILES",
    "LEDGER_PREFIX",
    "RETENTION_UNTIL",
    "SHA256",
    "TENANT",
    "ObjectInfo",
    "archive_key",
    "check_metadata",
    "copy_key",
    "kept_under",
    "kept_until",
    "now",
    "refuse_while_retained",
    "retained_until",
    "retention_metadata",
    "tenant_key",
    "tenant_prefix",
    "today",
    "uploaded_snapshot_prefix",
]

TENANT = "tenant"
RETENTION_UNTIL = "retention-until"
# A directory copy's digest (hex sha256 of the object's bytes) and its number of tar members
# (files, directories and links), set once the whole copy is in: a copy without its digest is
# not whole, and no gate takes it for the copy.
SHA256 = "sha256"
FILES = "files"
# The directory a copy is of, inside its filesystem ("/tenant-foo"): a restore makes that one.
COPIED_PATH = "path"
# The day the retention purge runs as, when it is told one (`retention run --now DATE`): it sets
# this for the engine it runs, so that the delete gates below judge expiry by the same day.
TODAY_VARIABLE = "RETENTION_TODAY"
# Where the retention ledger keeps its entries (`providers.retention.ledger`).
LEDGER_PREFIX = "_ledger"
# S3 counts the names and values of all user metadata against this limit.
MAX_METADATA_BYTES = 2048
_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
_VALUE = re.compile(r"[\x20-\x7e]*")


@dataclass(frozen=True)
class ObjectInfo:
    """One stored object. `etag` is without S3's quotes (an MD5 for a single PUT, `<md5>-<n>`
    for a multipart upload). `metadata` is the user metadata, or None where it was not read: a
    listing carries none, `RetentionStore.head` reads it."""

    key: str
    size: int
    etag: str
    last_modified: datetime
    metadata: Mapping[str, str] | None = None


def tenant_prefix(tenant: str) -> str:
    """Where every object of `tenant` lives: `<tenant>/`."""
    if not tenant or "/" in tenant:
        raise ValueError(f"tenant {tenant!r} cannot name a key prefix: give the tenant's slug")
    return f"{tenant}/"


def tenant_key(tenant: str, *parts: str) -> str:
    """The key `<tenant>/<part>/<part>...`, such as tenant_key("tenant-foo", "slurm",
    "accounting.tar.gz")."""
    if not parts or any(not part or part.startswith("/") or part.endswith("/") for part in parts):
        raise ValueError(f"key parts {parts!r} under {tenant!r}: give non-empty names, no edge '/'")
    return tenant_prefix(tenant) + "/".join(parts)


# Where offboarding keeps a tenant's Slurm archives and its directories' copies, under its prefix.
_ARCHIVES, _COPIES, _COPY_SUFFIX = "slurm", "storage", ".tar.gz"


def archive_key(tenant: str, kind: str, extension: str) -> str:
    """The key of the tenant's Slurm archive of `kind`: `<tenant>/slurm/<kind>.<extension>`."""
    return tenant_key(tenant, _ARCHIVES, f"{kind}.{extension}")


def copy_key(tenant: str, filesystem: str) -> str:
    """The key of the copy of the tenant's directory on `filesystem`:
    `<tenant>/storage/<filesystem>.tar.gz`."""
    return tenant_key(tenant, _COPIES, f"{filesystem}{_COPY_SUFFIX}")


def kept_under(tenant: str, key: str) -> tuple[str, str] | None:
    """("archive", kind) or ("copy", filesystem) for a key of `archive_key` or `copy_key`,
    None for any other."""
    prefix = tenant_prefix(tenant)
    if not key.startswith(prefix):
        return None
    folder, _, name = key.removeprefix(prefix).partition("/")
    if folder == _ARCHIVES and "." in name and "/" not in name:
        return "archive", name.split(".", 1)[0]
    if folder == _COPIES and name.endswith(_COPY_SUFFIX) and "/" not in name:
        return "copy", name.removesuffix(_COPY_SUFFIX)
    return None


def retention_metadata(tenant: str, retain_until: date) -> dict[str, str]:
    """The metadata every archive carries."""
    return {TENANT: tenant, RETENTION_UNTIL: retain_until.isoformat()}


def check_metadata(metadata: Mapping[str, str]) -> None:
    """Raises ValueError naming the first entry S3 would not give back as it was sent."""
    for name, value in metadata.items():
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"metadata name {name!r}: use lowercase letters, digits and hyphens "
                "(S3 sends names as HTTP headers and gives them back lowercased)"
            )
        if not _VALUE.fullmatch(value):
            raise ValueError(f"metadata {name!r}: its value must be printable ASCII")
    size = sum(len(name) + len(value) for name, value in metadata.items())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata of {size} bytes: S3 keeps at most {MAX_METADATA_BYTES}")


def uploaded_snapshot_prefix(locator: str) -> str:
    """The prefix of every object of the snapshot uploaded at `locator`, the answer Weka gave to
    the upload: the cluster keeps a snapshot's objects under its locator, in the prefix its
    bucket is configured with."""
    if not locator or ".." in locator.split("/") or locator.startswith("/"):
        raise ValueError(f"{locator!r} is not a snapshot locator")
    return f"{UPLOADS_PREFIX}/{locator}/"


def today() -> date:
    """Today in UTC, or the day RETENTION_TODAY names (an ISO date)."""
    named = os.environ.get(TODAY_VARIABLE, "").strip()
    if not named:
        return datetime.now(UTC).date()
    try:
        return date.fromisoformat(named)
    except ValueError:
        raise ValueError(f"{TODAY_VARIABLE} is {named!r}, not a date (YYYY-MM-DD)") from None


def now() -> datetime:
    """This moment, or the start of the day RETENTION_TODAY names where it is set (as `--now
    DATE` gives): the time a hold or a release is written at. The sandbox's tests move the clock
    so; a hold counts from when it is written whatever its time says."""
    if os.environ.get(TODAY_VARIABLE, "").strip():
        return datetime.combine(today(), time(), UTC)
    return datetime.now(UTC)


def retained_until(days: int) -> date:
    """The last day an object kept from today for `days` days must still exist."""
    return datetime.now(UTC).date() + timedelta(days=days)


def kept_until(olds: Mapping[str, Any], days: int) -> str:
    """The date an object already kept stays kept until: `days` from today when it has none
    recorded, else its recorded `retention_until`, moved later when its `retention_days` grow
    and never earlier. A settings change that shortens retention would otherwise shorten every
    offboarded tenant's archives at their next `up`; it applies to what is kept from then on."""
    until = olds.get("retention_until")
    if not until:
        return str(retained_until(days))
    if int(olds.get("retention_days") or 0) == days:
        return str(until)
    return str(max(retained_until(days), date.fromisoformat(str(until))))


def refuse_while_retained(error: type[BackendError], what: str, until: str | None) -> None:
    """Raises `error` while `what`'s retention (an ISO date, or None: none recorded) runs: only
    the retention purge, after that date, deletes what offboarding keeps."""
    if until and date.fromisoformat(until) >= today():
        raise error(
            f"deleting {what}",
            f"refused: it is retained until {until}",
            "the retention purge deletes it after that date (unless under legal hold)",
        )
