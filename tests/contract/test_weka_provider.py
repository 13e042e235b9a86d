"""Contract tests of the Weka providers (providers.weka) against the sandbox's Weka emulator.
The client's retry and token logic on a mock transport is tested in tests/unit/test_weka_client.py.

The providers' methods are called as the engine calls them: inputs through `check`, numbers as
floats (that is how they cross the engine), outputs of one step as the olds of the next. Every
test names what it creates uniquely and removes it again.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pulumi.dynamic import ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.output import UNKNOWN  # an `Unknown`, as check and diff receive them

from providers.errors import WekaError
from providers.weka.client import WekaClient
from providers.weka.csi import csi_secret_data, storage_class_parameters
from providers.weka.filesystem_provider import FilesystemProvider
from providers.weka.org_user_provider import OrgUserProvider
from providers.weka.organization_provider import OrganizationProvider
from providers.weka.quota_provider import DirectoryQuotaProvider
from providers.weka.records import Organization
from providers.weka.settings import Credentials, Settings
from tests.provider_calls import GB, checked, no_changes, wire

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

Cleanup = Callable[[Callable[[], object]], None]


# The sandbox's object store bucket, as Pulumi.prod.yaml's weka.object_store names it.
BUCKET = "retention"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def settings() -> Settings:
    return Settings.from_environment()


@pytest.fixture
def admin(settings: Settings) -> Iterator[WekaClient]:
    with WekaClient.from_settings(settings) as client:
        yield client


@pytest.fixture
def cleanup() -> Iterator[Cleanup]:
    """Register undo steps; they run last-registered first, even when the test failed."""
    steps: list[Callable[[], object]] = []
    yield steps.append
    errors = []
    for step in reversed(steps):
        try:
            step()
        except WekaError as error:
            errors.append(str(error))
    assert errors == []


def live_org(admin: WekaClient, uid: str) -> Organization:
    org = admin.get_organization(uid)
    assert org is not None
    return org


@dataclass(frozen=True)
class Tenant:
    uid: str
    name: str
    admin_username: str
    admin_password: str

    def login(self) -> dict[str, str]:
        return {
            "org": self.name,
            "org_admin_username": self.admin_username,
            "org_admin_password": self.admin_password,
        }

    def client(self, settings: Settings) -> WekaClient:
        creds = Credentials(self.admin_username, self.admin_password, self.name)
        return WekaClient.from_settings(settings, creds)


def make_tenant(cleanup: Cleanup, total_quota: int = 0) -> Tenant:
    provider = OrganizationProvider()
    inputs = checked(provider, {"name": unique("tenant"), "total_quota": total_quota})
    created = provider.create(inputs)
    outs = created.outs or {}
    cleanup(lambda: provider.delete(created.id, outs))
    return Tenant(created.id, outs["name"], outs["admin_username"], outs["admin_password"])


@pytest.fixture
def tenant(cleanup: Cleanup) -> Tenant:
    return make_tenant(cleanup)


def make_fs(cleanup: Cleanup, tenant: Tenant | None, **props: Any) -> tuple[str, dict[str, Any]]:
    """A filesystem in the tenant's organization (Root without one); cleanup bypasses the gate."""
    provider = FilesystemProvider()
    login = tenant.login() if tenant else {}
    news = {"name": unique("fs"), "total_capacity": 100 * GB, **login, **props}
    created = provider.create(checked(provider, news))
    outs = created.outs or {}

    def remove() -> None:
        provider.delete(created.id, {**outs, "allow_delete_without_snapshot": True})

    cleanup(remove)
    return created.id, outs


def mkdir(admin: WekaClient, fs_uid: str, path: str) -> None:
    """The emulator's stand-in for `mkdir -p` through a mount (the REST API has none)."""
    admin.request(
        "POST", f"_emulator/fileSystems/{fs_uid}/directories", doing="mkdir", json={"path": path}
    )


# --- organization ---------------------------------------------------------------------------


def test_organization_create_read_update_delete(admin: WekaClient, settings: Settings) -> None:
    provider = OrganizationProvider()
    name = unique("tenant")
    inputs = checked(provider, {"name": name, "ssd_quota": 1000 * GB, "total_quota": 2000 * GB})
    created = provider.create(inputs)
    outs = created.outs or {}
    try:
        assert outs["admin_username"] == f"{name}-admin"
        password = outs["admin_password"]
        org_admin = Credentials(outs["admin_username"], password, name)
        with WekaClient.from_settings(settings, org_admin) as client:
            assert [u.role for u in client.list_users()] == ["OrgAdmin"]

        read = provider.read(created.id, wire(outs))
        assert read.id == created.id
        assert read.outs == outs
        no_changes(provider, created.id, read.outs, inputs)

        bigger = checked(
            provider, {"name": name, "ssd_quota": 1000 * GB, "total_quota": 3 * 10**12}
        )
        diff = provider.diff(created.id, wire(outs), bigger)
        assert (diff.changes, diff.replaces) == (True, [])
        outs = provider.update(created.id, wire(outs), bigger).outs or {}
        assert outs["admin_password"] == password
        assert live_org(admin, created.id).total_quota == 3 * 10**12

        # Drift: a quota changed behind Pulumi's back shows on read, and update puts it back.
        admin.set_organization_limits(created.id, 1000 * GB, 5 * 10**12)
        drifted = provider.read(created.id, wire(outs)).outs or {}
        assert drifted["total_quota"] == 5 * 10**12
        assert provider.diff(created.id, wire(drifted), bigger).changes is True
        provider.update(created.id, wire(drifted), bigger)
        assert live_org(admin, created.id).total_quota == 3 * 10**12
    finally:
        provider.delete(created.id, wire(outs))
    assert provider.read(created.id, wire(outs)).id == ""
    provider.delete(created.id, wire(outs))  # deleting what is gone is fine


def test_an_organization_left_by_a_lost_create_is_adopted(
    admin: WekaClient, cleanup: Cleanup
) -> None:
    """A run killed after Weka made the organization but before Pulumi recorded it: the next
    create recognizes it by its admin's derived password and takes it over."""
    provider = OrganizationProvider()
    name = unique("tenant")
    lost = provider.create(checked(provider, {"name": name, "total_quota": 2000 * GB}))
    cleanup(lambda: provider.delete(lost.id, lost.outs or {}))
    again = provider.create(checked(provider, {"name": name, "total_quota": 3000 * GB}))
    assert again.id == lost.id
    assert (again.outs or {})["admin_password"] == (lost.outs or {})["admin_password"]
    assert live_org(admin, lost.id).total_quota == 3000 * GB
    assert [o.name for o in admin.list_organizations()].count(name) == 1


def test_someone_elses_organization_is_refused_not_adopted(
    admin: WekaClient, cleanup: Cleanup
) -> None:
    provider = OrganizationProvider()
    name = unique("tenant")
    theirs = admin.create_organization(name, f"{name}-admin", "Their0wnPassword", 0, 0)
    cleanup(lambda: admin.delete_organization(theirs.uid, name))
    with pytest.raises(WekaError, match="exists already") as refused:
        provider.create(checked(provider, {"name": name, "total_quota": 1000 * GB}))
    message = str(refused.value)
    assert "does not take the password this stack derives" in message
    assert f"weka org delete {name}" in message
    assert "Their0wnPassword" not in message
    assert live_org(admin, theirs.uid).total_quota == 0


def test_organization_check_reports_every_bad_input() -> None:
    failures = (
        OrganizationProvider()
        .check({}, {"name": "Not_A_Slug", "ssd_quota": 10.0, "total_quota": 5.0})
        .failures
    )
    assert {f.property for f in failures} == {"name", "ssd_quota"}
    missing = OrganizationProvider().check({}, {"total_quota": "lots"}).failures
    assert {(f.property, f.reason) for f in missing} == {
        ("name", "is required"),
        ("total_quota", "must be int, not str"),
    }


# --- filesystem -----------------------------------------------------------------------------


def test_filesystem_create_read_update_delete(tenant: Tenant, cleanup: Cleanup) -> None:
    provider = FilesystemProvider()
    name = unique("home")
    news = {"name": name, "total_capacity": 100 * GB, **tenant.login()}
    inputs = checked(provider, news)
    assert inputs["ssd_capacity"] == 100 * GB  # no tiering unless asked
    created = provider.create(inputs)
    outs = created.outs or {}
    cleanup(lambda: provider.delete(created.id, {**outs, "allow_delete_without_snapshot": True}))

    read = provider.read(created.id, wire(outs))
    assert (read.id, read.outs) == (created.id, outs)
    no_changes(provider, created.id, read.outs or {}, inputs)

    # Create again, as after a crash that lost the state: the org is ours, so it is adopted.
    assert provider.create(inputs).id == created.id

    grown = checked(provider, {**news, "name": name + "-x", "total_capacity": 200 * GB}, news)
    diff = provider.diff(created.id, wire(outs), grown)
    assert (diff.changes, diff.replaces) == (True, [])
    outs = provider.update(created.id, wire(outs), grown).outs or {}
    live = provider.read(created.id, wire(outs)).outs or {}
    assert (live["name"], live["total_capacity"], live["ssd_capacity"]) == (
        name + "-x",
        200 * GB,
        200 * GB,
    )

    regrouped = checked(provider, {**news, "group_name": "other"}, news)
    diff = provider.diff(created.id, wire(outs), regrouped)
    assert (diff.replaces, diff.delete_before_replace) == (["group_name"], True)

    rollback = {**outs, "allow_delete_without_snapshot": True}
    provider.delete(created.id, wire(rollback))
    assert provider.read(created.id, wire(outs)).id == ""


def test_filesystem_in_root_is_refused_when_it_exists(cleanup: Cleanup) -> None:
    fs_uid, outs = make_fs(cleanup, None)
    assert outs["org"] == "Root"
    provider = FilesystemProvider()
    with pytest.raises(WekaError, match="exists already in the shared Root organization"):
        provider.create(checked(provider, {"name": outs["name"], "total_capacity": 100 * GB}))
    assert provider.read(fs_uid, wire(outs)).id == fs_uid


def test_filesystem_over_the_org_quota_fails_with_the_backend_message(cleanup: Cleanup) -> None:
    tenant = make_tenant(cleanup, total_quota=100 * GB)
    provider = FilesystemProvider()
    news = {"name": unique("big"), "total_capacity": 200 * GB, **tenant.login()}
    with pytest.raises(WekaError) as failed:
        provider.create(checked(provider, news))
    message = str(failed.value)
    assert "POST /api/v2/fileSystems answered 400: Not enough total quota" in message
    assert tenant.admin_password not in message


def test_deleting_a_mounted_filesystem_says_it_is_in_use(
    tenant: Tenant, cleanup: Cleanup, admin: WekaClient
) -> None:
    fs_uid, outs = make_fs(cleanup, tenant, allow_delete_without_snapshot=True)
    mounts = f"_emulator/fileSystems/{fs_uid}/mounts"
    admin.request("PUT", mounts, doing="mount", json={"mounted": True})
    with pytest.raises(WekaError, match="filesystem is in use") as in_use:
        FilesystemProvider().delete(fs_uid, wire(outs))
    assert "unmount" in str(in_use.value)
    admin.request("PUT", mounts, doing="unmount", json={"mounted": False})


def test_delete_gate_needs_an_uploaded_snapshot_still_in_the_bucket(
    tenant: Tenant, cleanup: Cleanup, settings: Settings
) -> None:
    provider = FilesystemProvider()
    fs_uid, outs = make_fs(cleanup, tenant)
    other_uid, _ = make_fs(cleanup, tenant)
    news = {k: outs[k] for k in ("name", "total_capacity", *tenant.login())}
    news["object_store"] = BUCKET

    with pytest.raises(WekaError, match="no uploaded offboarding snapshot"):
        provider.delete(fs_uid, wire(outs))
    assert provider.read(fs_uid, wire(outs)).id == fs_uid

    with tenant.client(settings) as org:

        def upload(of: str) -> str:
            org.attach_object_store(of, BUCKET)
            snap = org.create_snapshot(of, unique("offboard"))
            locator = org.upload_snapshot(snap.uid).locator
            org.wait_uploaded(snap.uid)  # the bucket answers for it once SYNCHRONIZED
            return locator

        for wrong, reason in (
            (upload(other_uid), "holds a snapshot of"),
            ("00000000/d/s/99/spec/none", "does not answer"),
        ):
            recorded = checked(provider, {**news, "retained_locator": wrong}, news)
            with pytest.raises(WekaError, match=reason):
                provider.update(fs_uid, wire(outs), recorded)

        kept = upload(fs_uid)
        recorded = checked(provider, {**news, "retained_locator": kept}, news)
        outs = provider.update(fs_uid, wire(outs), recorded).outs or {}
        provider.delete(fs_uid, wire(outs))
        assert org.get_filesystem(fs_uid) is None
        # The snapshot went with its filesystem; the upload outlives both.
        assert org.locator_info(BUCKET, kept).fs_name == news["name"]

        # Made again with its retained locator (a restore), it is made from the upload.
        restored = provider.create(recorded)
        cleanup(lambda: provider.delete(restored.id, wire(restored.outs or {})))
        assert restored.id != fs_uid
        made = org.get_filesystem(restored.id)
        assert made is not None
        assert made.name == news["name"]
        assert [s.locator for s in org.list_snapshots(news["name"])] == [kept]


# --- directory quota ------------------------------------------------------------------------


def test_directory_quota_lifecycle_and_drift(
    tenant: Tenant, cleanup: Cleanup, admin: WekaClient, settings: Settings
) -> None:
    provider = DirectoryQuotaProvider()
    fs_uid, _ = make_fs(cleanup, tenant)
    news = {
        "filesystem_uid": fs_uid,
        "path": "/home/alice/",
        "hard_limit_bytes": 10 * GB,
        "soft_limit_bytes": 9 * GB,
        "grace_seconds": 3600,
        "owner": tenant.name,
        **tenant.login(),
    }
    inputs = checked(provider, news)
    assert inputs["path"] == "/home/alice"

    with pytest.raises(WekaError, match="directory /home/alice does not exist") as missing:
        provider.create(inputs)
    assert "cannot create directories" in str(missing.value)

    mkdir(admin, fs_uid, "/home/alice")
    created = provider.create(inputs)
    outs = created.outs or {}
    cleanup(lambda: provider.delete(created.id, outs))
    read = provider.read(created.id, wire(outs))
    assert (read.id, read.outs) == (created.id, outs)
    no_changes(provider, created.id, read.outs or {}, inputs)

    # Drift: someone raises the hard limit by hand; read shows it, diff says update, up fixes it.
    with tenant.client(settings) as org:
        org.set_quota(
            fs_uid,
            outs["inode_id"],
            path="/home/alice",
            hard_limit_bytes=50 * GB,
            soft_limit_bytes=9 * GB,
            grace_seconds=3600,
            owner=tenant.name,
        )
        drifted = provider.read(created.id, wire(outs)).outs or {}
        assert drifted["hard_limit_bytes"] == 50 * GB
        diff = provider.diff(created.id, wire(drifted), inputs)
        assert (diff.changes, diff.replaces) == (True, [])
        outs = provider.update(created.id, wire(drifted), inputs).outs or {}
        restored = org.get_quota(fs_uid, outs["inode_id"], "/home/alice")
        assert restored is not None
        assert restored.hard_limit_bytes == 10 * GB

    moved = checked(provider, {**news, "path": "/home/bob"}, news)
    assert provider.diff(created.id, wire(outs), moved).replaces == ["path"]

    provider.delete(created.id, wire(outs))
    assert provider.read(created.id, wire(outs)).id == ""


def test_a_quota_with_another_owner_is_not_taken_over(
    tenant: Tenant, cleanup: Cleanup, admin: WekaClient, settings: Settings
) -> None:
    fs_uid, _ = make_fs(cleanup, tenant)
    mkdir(admin, fs_uid, "/scratch/shared")
    with tenant.client(settings) as org:
        inode = org.resolve_path(fs_uid, "/scratch/shared")
        assert inode is not None
        org.set_quota(
            fs_uid,
            inode,
            path="/scratch/shared",
            hard_limit_bytes=GB,
            soft_limit_bytes=GB,
            grace_seconds=0,
            owner="someone-else",
        )
    provider = DirectoryQuotaProvider()
    news: dict[str, Any] = {"filesystem_uid": fs_uid, "path": "/scratch/shared"}
    news |= {"owner": tenant.name, "hard_limit_bytes": GB, "soft_limit_bytes": GB, **tenant.login()}
    with pytest.raises(WekaError, match="owned by 'someone-else'"):
        provider.create(checked(provider, news))


def test_quota_check_rules() -> None:
    failures = (
        DirectoryQuotaProvider()
        .check(
            {},
            {
                "filesystem_uid": "fs",
                "path": "home/alice",
                "hard_limit_bytes": 1.0,
                "soft_limit_bytes": 2.0,
                "owner": "",
                "org": "tenant-x",
                "org_admin_password": "Secret-Passw0rd",
            },
        )
        .failures
    )
    assert {f.property for f in failures} == {
        "path",
        "soft_limit_bytes",
        "owner",
        "org_admin_username",
    }
    assert all("Secret-Passw0rd" not in f.reason for f in failures)
    # In a preview, values from resources not made yet are unknown: check lets them through.
    unknown = {"filesystem_uid": UNKNOWN, "path": "/x", "hard_limit_bytes": 1.0}
    unknown |= {"soft_limit_bytes": 1.0, "owner": "t", "org": "tenant-x"}
    unknown |= {"org_admin_username": UNKNOWN, "org_admin_password": UNKNOWN}
    assert DirectoryQuotaProvider().check({}, unknown).failures == []
    fs = {"name": "home", "total_capacity": UNKNOWN, "retained_locator": UNKNOWN}
    assert FilesystemProvider().check({}, fs).failures == []
    diff = FilesystemProvider().diff("id", {**fs, "total_capacity": 1.0}, fs)
    assert (diff.changes, diff.replaces) == (True, [])
    # Credentials unknown while their organization updates: no change of the object.
    user = {"username": "csi", "role": "CSI", "org": "tenant-x", "org_admin_username": "a"}
    rotating = {**user, "org_admin_username": UNKNOWN, "org_admin_password": UNKNOWN}
    olds = {**user, "org_admin_password": "p"}
    assert OrgUserProvider().diff("id", olds, rotating).changes is False


# --- organization user ----------------------------------------------------------------------


def test_org_user_create_read_update_delete(tenant: Tenant, settings: Settings) -> None:
    provider = OrgUserProvider()
    news = {"username": "csi", "role": "CSI", **tenant.login()}
    inputs = checked(provider, news)
    created = provider.create(inputs)
    outs = created.outs or {}
    try:
        creds = Credentials("csi", outs["password"], tenant.name)
        with WekaClient.from_settings(settings, creds) as csi:
            me = csi.request("GET", "users/whoami", doing="whoami")
            assert (me["role"], me["org_name"]) == ("CSI", tenant.name)
        read = provider.read(created.id, wire(outs))
        assert (read.id, read.outs) == (created.id, outs)
        no_changes(provider, created.id, read.outs or {}, inputs)

        # Created again after a lost state: adopted in our org, with a new password.
        again = provider.create(inputs)
        assert again.id == created.id
        outs = again.outs or {}
        assert outs["password"] != creds.password

        regular = checked(provider, {**news, "role": "Regular"}, news)
        assert provider.diff(created.id, wire(outs), regular).replaces == []
        outs = provider.update(created.id, wire(outs), regular).outs or {}
        assert (provider.read(created.id, wire(outs)).outs or {})["role"] == "Regular"
        renamed = checked(provider, {**news, "username": "csi2"}, news)
        assert provider.diff(created.id, wire(outs), renamed).replaces == ["username"]
    finally:
        provider.delete(created.id, wire(outs))
    assert provider.read(created.id, wire(outs)).id == ""


# --- not found, credentials, tokens ---------------------------------------------------------


def test_read_of_a_missing_object_returns_an_empty_id(tenant: Tenant, cleanup: Cleanup) -> None:
    missing = str(uuid.uuid4())
    fs_uid, fs_outs = make_fs(cleanup, tenant)
    assert OrganizationProvider().read(missing, {"name": "gone"}).id == ""
    assert FilesystemProvider().read(missing, wire(fs_outs)).id == ""
    quota = {"path": "/gone", **tenant.login()}
    assert DirectoryQuotaProvider().read(f"{fs_uid}:999999999", quota).id == ""
    assert DirectoryQuotaProvider().read(f"{missing}:1", quota).id == ""
    assert OrgUserProvider().read(missing, {"password": "x", **tenant.login()}).id == ""


def test_a_wrong_password_is_a_401_that_does_not_repeat_the_password(
    tenant: Tenant, cleanup: Cleanup, settings: Settings
) -> None:
    wrong = "Wrong-Passw0rd-" + uuid.uuid4().hex
    with (
        pytest.raises(WekaError, match="401: Invalid username or password") as failed,
        WekaClient.from_settings(settings, Credentials(settings.username, wrong)) as client,
    ):
        client.list_organizations()
    assert wrong not in str(failed.value)
    assert "POST /api/v2/login" in str(failed.value)

    fs_uid, outs = make_fs(cleanup, tenant)
    with pytest.raises(WekaError, match="401") as failed:
        FilesystemProvider().read(fs_uid, {**outs, "org_admin_password": wrong})
    assert wrong not in str(failed.value)
    assert tenant.admin_password not in str(failed.value)


class Recording(httpx.BaseTransport):
    """Passes requests on and notes (method, path, status) of each."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.calls.append((request.method, request.url.path, response.status_code))
        return response


def test_an_expired_token_is_refreshed_mid_run(settings: Settings, admin: WekaClient) -> None:
    transport = Recording(httpx.HTTPTransport(verify=settings.tls_verify()))
    creds = Credentials(settings.username, settings.password)
    with WekaClient(settings.url, creds, transport=transport) as client:
        assert client.find_organization("Root") is not None
        admin.request("POST", "_emulator/expire-tokens", doing="expiring tokens")
        assert client.find_organization("Root") is not None
    assert transport.calls == [
        ("POST", "/api/v2/login", 200),
        ("GET", "/api/v2/organizations", 200),
        ("GET", "/api/v2/organizations", 401),
        ("POST", "/api/v2/login/refresh", 200),
        ("GET", "/api/v2/organizations", 200),
    ]


# --- what lands in the state ----------------------------------------------------------------


@pytest.mark.parametrize(
    "provider",
    [OrganizationProvider(), FilesystemProvider(), DirectoryQuotaProvider(), OrgUserProvider()],
    ids=lambda p: type(p).__name__,
)
def test_a_pickled_provider_holds_no_endpoint_or_credential(
    provider: ResourceProvider, settings: Settings
) -> None:
    # After a call, which read the settings: nothing of them may stick to the instance.
    assert provider.read(f"{uuid.uuid4()}:1", {"name": "x", "password": "x"}).id == ""
    pickled = base64.b64decode(serialize_provider(provider))
    for value in (settings.url, settings.username, settings.password, "127.0.0.1"):
        assert value.encode() not in pickled
    assert vars(provider) == {}


# --- the CSI driver's view ------------------------------------------------------------------


def test_csi_secret_data_has_exactly_the_keys_csi_weka_io_reads() -> None:
    data = csi_secret_data(
        "csi", "Csi-Passw0rd", "tenant-foo", ["10.0.0.1:14000", "weka-api"], "https"
    )
    assert data == {
        "username": "csi",
        "password": "Csi-Passw0rd",
        "organization": "tenant-foo",
        "endpoints": "10.0.0.1:14000,weka-api:14000",
        "scheme": "https",
    }
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    with_ca = csi_secret_data("csi", "p", "Root", ["h:14000"], "https", ca_certificate=pem)
    assert set(with_ca) - set(data) == {"caCertificate"}
    assert "token" not in json.dumps(with_ca)
    with pytest.raises(ValueError, match="without scheme"):
        csi_secret_data("csi", "p", "Root", ["https://h:14000"], "https")
    with pytest.raises(ValueError, match="scheme"):
        csi_secret_data("csi", "p", "Root", ["h:14000"], "ftp")


def test_storage_class_parameters_name_the_secret_for_every_csi_call() -> None:
    params = storage_class_parameters("weka-${pvc.namespace}-creds", "tenant-foo-scratch")
    stages = [
        "provisioner",
        "controller-publish",
        "controller-expand",
        "node-stage",
        "node-publish",
    ]
    assert params == {
        "volumeType": "dir/v1",
        "filesystemName": "tenant-foo-scratch",
        "capacityEnforcement": "HARD",
        # The external-provisioner's templates: a claim gets its own namespace's Secret.
        **{f"csi.storage.k8s.io/{s}-secret-name": "weka-${pvc.namespace}-creds" for s in stages},
        **{f"csi.storage.k8s.io/{s}-secret-namespace": "${pvc.namespace}" for s in stages},
    }
    with pytest.raises(ValueError, match="capacity_enforcement"):
        storage_class_parameters("s", "f", capacity_enforcement="hard")
