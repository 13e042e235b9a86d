"""The organization admin's derived password: the mark that lets a lost create be taken over."""

from __future__ import annotations

from providers.weka.organization_provider import org_admin_password


def test_the_password_is_derived_per_org_and_per_cluster_credential() -> None:
    password = org_admin_password("cluster-admin-secret", "tenant-foo")
    assert password == org_admin_password("cluster-admin-secret", "tenant-foo")
    assert password != org_admin_password("cluster-admin-secret", "tenant-bar")
    assert password != org_admin_password("rotated-secret", "tenant-foo")
    # Weka's rule: at least 8 characters with an upper, a lower case letter and a digit.
    assert len(password) == 24
    assert any(c.isupper() for c in password)
    assert any(c.islower() for c in password)
    assert any(c.isdigit() for c in password)
    assert "cluster-admin-secret" not in password
