"""A careless or hostile spec reaches only its own tenant: tried on the sandbox through the real
engine with `up --skip-preview` (the program runs, and its refusals are all that stand between
the spec and the backends), and the objects it aimed at read back unchanged."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.retention.ledger import Ledger
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import (
    authentik,
    fresh_ledger,
    kubectl_json,
    pulumi,
    retention_command,
    run_pulumi,
    sacctmgr,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

HAND_MADE = "tenant-qux"


def as_tenant(project: Path, slug: str) -> Path:
    """tenant-bar's spec made into tenant `slug`'s (tenant-bar's file removed, so no rule across
    tenants stands in for the refusal under test)."""
    tenants = project / "tenants"
    spec = yaml.safe_load((tenants / "tenant-bar.yaml").read_text())
    spec["slug"] = slug
    spec["login"]["hostname"] = f"login.{slug}.example.internal"
    (tenants / "tenant-bar.yaml").unlink()
    path = tenants / f"{slug}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def namespace_objects(namespace: str) -> list[dict[str, Any]]:
    """Every object of the kinds a tenant's `up` makes in `namespace`, and the namespace, as
    the API server returns them (resourceVersion included: any write changes it)."""
    kinds = "rolebindings,networkpolicies,secrets,resourcequotas,limitranges"
    found: list[dict[str, Any]] = kubectl_json("get", kinds, "--namespace", namespace)["items"]
    return [kubectl_json("get", "namespace", namespace), *found]


def refused_up(env: dict[str, str], project: Path, slug: str) -> str:
    run_pulumi(env, project, "stack", "init", slug)
    up = pulumi(env, project, "up", "--yes", "--skip-preview", "--stack", slug)
    printed = up.stdout + up.stderr
    assert up.returncode != 0, printed
    assert "Traceback" not in printed
    return printed


def test_a_platform_namespace_is_refused_as_a_slug_and_left_as_it_was(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    project = project_copy(tmp_path / "project")
    spec = as_tenant(project, "auth")
    before = namespace_objects("auth")
    printed = refused_up(pulumi_backend, project, "auth")
    assert (
        f"{spec}: slug: 'auth' would name its namespace, Slurm account and partition, group and "
        "organization 'auth', which is the namespace of Authentik and the LDAP bind Secret "
        "(Pulumi.prod.yaml kubernetes.auth_namespace)"
    ) in printed, printed
    assert namespace_objects("auth") == before
    assert sacctmgr("show", "account", "auth", "format=Account") == []


@pytest.fixture
def hand_made_namespace() -> Iterator[str]:
    subprocess.run(["kubectl", "create", "namespace", HAND_MADE], check=True, capture_output=True)
    yield HAND_MADE
    subprocess.run(["kubectl", "delete", "namespace", HAND_MADE, "--wait=false"], check=False)


def test_an_existing_namespace_without_the_tenants_marks_is_not_taken_over(
    tmp_path: Path, pulumi_backend: dict[str, str], hand_made_namespace: str
) -> None:
    project = project_copy(tmp_path / "project")
    spec = as_tenant(project, hand_made_namespace)
    before = namespace_objects(hand_made_namespace)
    printed = refused_up(pulumi_backend, project, hand_made_namespace)
    assert (
        f"{spec}: slug: namespace {HAND_MADE} already exists and it does not carry this "
        f"tenant's marks (label tenant={HAND_MADE} and annotation "
        "gpu-tenants.example.io/lifecycle-stage)"
    ) in printed, printed
    assert f"`gpu-tenants import {HAND_MADE}`" in printed
    assert namespace_objects(hand_made_namespace) == before
    assert sacctmgr("show", "account", HAND_MADE, "format=Account") == []


def staff_user() -> dict[str, Any]:
    """Authentik's own admin, a staff account no tenant may touch."""
    with authentik() as api:
        [found] = api.get("/core/users/", params={"username": "akadmin"}).json()["results"]
    user: dict[str, Any] = found
    return user


def test_a_number_or_a_user_authentik_holds_for_someone_else_is_refused(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    staff = staff_user()
    # The outpost numbers a user without a uidNumber attribute uid_start_number (2000) + pk.
    number = int(staff["attributes"].get("uidNumber") or 2000 + staff["pk"])
    project = project_copy(tmp_path / "project")
    spec = as_tenant(project, "tenant-quux")
    data = yaml.safe_load(spec.read_text())
    data["users"][0]["uid"] = number
    data["users"][1]["username"] = "akadmin"
    data["identity"]["admins"] = ["akadmin"]
    # The LDAP outpost's bind account, which every login pod binds with.
    data["users"][0]["username"] = "ldap-bind"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    printed = refused_up(pulumi_backend, project, "tenant-quux")
    assert (
        f"{spec}: users.0.username: Authentik user 'ldap-bind' already exists and is not marked "
        "as any tenant's"
    ) in printed, printed
    assert (
        f"{spec}: users.0.uid: {number} is already the number of Authentik user 'akadmin' in the "
        "directory"
    ) in printed, printed
    assert (
        f"{spec}: users.1.username: Authentik user 'akadmin' already exists and is not marked "
        "as any tenant's"
    ) in printed, printed
    assert staff_user() == staff
    names = [ns["metadata"]["name"] for ns in kubectl_json("get", "namespaces")["items"]]
    assert "tenant-quux" not in names  # refused before the first object
    assert sacctmgr("show", "user", "akadmin", "format=User") == []


def test_a_retention_command_for_a_tenant_that_does_not_exist_writes_nothing(
    tmp_path: Path, pulumi_backend: dict[str, str], sandbox: SandboxLayout
) -> None:
    project = project_copy(tmp_path / "project")
    env = {**pulumi_backend, **fresh_ledger(sandbox)}
    hold = ("hold", "tenant-fo", "--by", "Lee Counsel", "--reason", "LIT-77")
    typo = retention_command(env, project, *hold)
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert "'tenant-fo' is no tenant: it has no spec in" in typo.stderr
    assert "(tenants: tenant-bar, tenant-foo); nothing was written" in typo.stderr
    assert "Traceback" not in typo.stderr
    # A calendar or a purge of a typo once reported nothing and passed.
    for action in (("calendar", "tenant-foo", "tenant-fo"), ("run", "tenant-fo", "--dry-run")):
        typo = retention_command(env, project, *action)
        assert typo.returncode == 2, typo.stdout + typo.stderr
        assert "'tenant-fo' is no tenant" in typo.stderr
    with Ledger.open({**os.environ, **env}) as ledger:
        assert ledger.entries("tenant-fo") == []


def test_a_spec_cannot_adopt_what_import_did_not_find(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    """A new spec that says it was imported, and claims to have found Authentik's admin."""
    staff = staff_user()
    project = project_copy(tmp_path / "project")
    spec = as_tenant(project, "tenant-quuz")
    data = yaml.safe_load(spec.read_text())
    data["users"][1]["username"] = "akadmin"
    data["identity"]["admins"] = ["akadmin"]
    data["imported"] = {
        "date": "2026-12-01",
        "adopt": True,
        "found": {"authentik_users": {"akadmin": staff["pk"]}, "kubernetes": []},
    }
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    printed = refused_up(pulumi_backend, project, "tenant-quuz")
    assert (
        f"{spec}: imported.found: differs from what `import` recorded of the tenant in its ledger"
    ) in printed, printed
    assert (
        f"{spec}: users.1.username: Authentik user 'akadmin' is a superuser (through its "
        "groups): never adopted"
    ) in printed, printed
    assert staff_user() == staff
    assert sacctmgr("show", "account", "tenant-quuz", "format=Account") == []
