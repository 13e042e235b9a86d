"""How archives are named and marked in the retention store, and what metadata S3 would not give
back as sent."""

from __future__ import annotations

from datetime import date

import pytest

from providers.retention.objects import (
    RETENTION_UNTIL,
    TENANT,
    check_metadata,
    kept_until,
    retained_until,
    retention_metadata,
    tenant_key,
    tenant_prefix,
)


def test_keys_sit_under_the_tenants_slug() -> None:
    assert tenant_prefix("tenant-foo") == "tenant-foo/"
    assert tenant_key("tenant-foo", "slurm", "accounting.tar.gz") == (
        "tenant-foo/slurm/accounting.tar.gz"
    )


@pytest.mark.parametrize(
    ("tenant", "parts"),
    [("", ("a",)), ("tenant/foo", ("a",)), ("tenant-foo", ()), ("tenant-foo", ("", "a"))],
)
def test_a_key_that_would_escape_its_prefix_is_refused(tenant: str, parts: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match=repr(tenant)):
        tenant_key(tenant, *parts)


def test_the_metadata_every_archive_carries_passes_the_check() -> None:
    metadata = retention_metadata("tenant-foo", date(2033, 6, 30))
    assert metadata == {TENANT: "tenant-foo", RETENTION_UNTIL: "2033-06-30"}
    check_metadata(metadata)


@pytest.mark.parametrize(
    ("metadata", "named"),
    [
        ({"Tenant": "tenant-foo"}, "'Tenant'"),
        ({"retention_until": "2033-06-30"}, "'retention_until'"),
        ({"tenant": "tenant-föo"}, "printable ASCII"),
        ({"tenant": "a\nb"}, "printable ASCII"),
        ({"note": "x" * 2100}, "at most 2048"),
    ],
)
def test_metadata_s3_would_change_is_refused(metadata: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        check_metadata(metadata)


def test_a_kept_object_keeps_its_date_until_its_retention_days_change() -> None:
    olds = {"retention_days": 30.0, "retention_until": "2027-01-31"}  # floats, as Pulumi sends
    assert kept_until(olds, 30) == "2027-01-31"
    assert kept_until(olds, 90) == str(retained_until(90))
    assert kept_until({}, 30) == str(retained_until(30))


def test_a_shorter_retention_never_moves_a_kept_objects_date_earlier() -> None:
    kept = {"retention_until": "2033-01-01", "retention_days": 2555}
    assert kept_until(kept, 1) == "2033-01-01"
    assert kept_until(kept, 30) == "2033-01-01"
