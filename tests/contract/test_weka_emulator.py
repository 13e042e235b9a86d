"""Contract tests of the Weka REST API v2 emulator (sandbox.weka), run as a real process.

The module's emulator serves HTTPS with a throwaway self-signed certificate, keeps its
filesystems under a mount root of its own, and has its object store bucket in a retention store
(versitygw) of its own: neither needs nor touches a running sandbox. The restart and upgrade
tests run their own plain-HTTP emulators with the default mount root and no object store. Every
test makes its own organizations and names, so the tests do not depend on one another.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import stat
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers.retention.client import RetentionStore
from providers.weka.settings import UPLOADS_PREFIX
from sandbox.weka.object_store import DEFAULT_NAME as OBS_BUCKET
from sandbox.weka.store import STATE_FILE, STATE_VERSION
from tests.isolated import (
    Emulator,
    Gateway,
    self_signed_certificate,
    start_emulator,
    start_gateway,
    stop_emulator,
    stop_gateway,
)

ADMIN_PASSWORD = "Emulat0r-Admin"
TENANT_PASSWORD = "Tenant-Passw0rd"
TB = 10**12


class Api:
    """A tiny client: `ok` expects 200 and returns `data`, `fails` expects an error message."""

    def __init__(self, emulator: Emulator, token: str | None = None) -> None:
        self.http = httpx.Client(base_url=emulator.base_url, verify=emulator.verify, timeout=10)
        self.token = token

    @classmethod
    def login(cls, emulator: Emulator, username: str, password: str, org: str = "Root") -> Api:
        api = cls(emulator)
        body = {"username": username, "password": password, "org": org}
        api.token = api.ok("POST", "/login", json=body)["access_token"]
        return api

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return self.http.request(method, path.lstrip("/"), headers=headers, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        reply = self.call(method, path, **kwargs)
        assert reply.status_code == 200, f"{method} {path}: {reply.status_code} {reply.text}"
        body = reply.json()
        assert set(body) == {"data"}
        return body["data"]

    def fails(self, method: str, path: str, status: int, **kwargs: Any) -> str:
        reply = self.call(method, path, **kwargs)
        assert reply.status_code == status, f"{method} {path}: {reply.status_code} {reply.text}"
        body = reply.json()
        assert set(body) <= {"message", "data"}
        assert isinstance(body["message"], str)
        assert body["message"]
        return str(body["message"])

    def missing(self, method: str, path: str, what: str, **kwargs: Any) -> str:
        """As the real API answers for an object that is not there (or is another
        organization's): 400 naming the exception class in `data`, or PATH_NOT_FOUND in the
        message for a path."""
        message = self.fails(method, path, 400, **kwargs)
        if what == PATH:
            assert message.startswith("PATH_NOT_FOUND: ")
        else:
            assert self.call(method, path, **kwargs).json()["data"]["exceptionClass"] == what
        return message


FS, SNAP, PATH = (
    "FilesystemDoesNotExistException",
    "SnapshotDoesNotExistException",
    "PATH_NOT_FOUND",
)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = start_gateway(tmp_path_factory.mktemp("retention"))
    try:
        yield running
    finally:
        stop_gateway(running)


@pytest.fixture(scope="module")
def emulator(
    tmp_path_factory: pytest.TempPathFactory, tls_cert: tuple[Path, Path], gateway: Gateway
) -> Iterator[Emulator]:
    workdir = tmp_path_factory.mktemp("weka")
    (workdir / "admin-password").write_text(ADMIN_PASSWORD + "\n")
    # The raw API's rules, its background work done at once (start_emulator's default): how
    # it reports that work unfinished (--settle-seconds) has a test of its own below.
    running = start_emulator(
        workdir,
        tls=tls_cert,
        mount_root=workdir / "mounts",
        object_store=gateway.env(),
    )
    yield running
    stop_emulator(running)


@pytest.fixture
def store(gateway: Gateway) -> Iterator[RetentionStore]:
    """The emulator's object store bucket, read as the retention store it is."""
    with RetentionStore.from_environment(gateway.env()) as retention:
        yield retention


@pytest.fixture
def admin(emulator: Emulator) -> Api:
    return Api.login(emulator, "admin", ADMIN_PASSWORD)


Tenant = Callable[..., tuple[dict[str, Any], Api]]


@pytest.fixture
def tenant(emulator: Emulator, admin: Api) -> Tenant:
    """Make an organization; returns it and a client logged in as its org admin."""

    def make(total_quota: int = 0, ssd_quota: int = 0) -> tuple[dict[str, Any], Api]:
        name = unique("tenant")
        body = {
            "name": name,
            "username": "orgadmin",
            "password": TENANT_PASSWORD,
            "ssd_quota": ssd_quota,
            "total_quota": total_quota,
        }
        org = admin.ok("POST", "/organizations", json=body)
        return org, Api.login(emulator, "orgadmin", TENANT_PASSWORD, org=name)

    return make


def make_fs(api: Api, name: str | None = None, capacity: int | str = TB) -> dict[str, Any]:
    body = {"name": name or unique("fs"), "group_name": "default", "total_capacity": capacity}
    return dict(api.ok("POST", "/fileSystems", json=body))


def mkdir(admin: Api, fs_uid: str, path: str) -> str:
    made = admin.ok("POST", f"/_emulator/fileSystems/{fs_uid}/directories", json={"path": path})
    return str(made["inode_id"])


# --- health, login, tokens -------------------------------------------------------------------


def test_healthcheck_answers_without_a_token(emulator: Emulator) -> None:
    assert Api(emulator).ok("GET", "/healthcheck") == "OK"


def test_login_returns_bearer_tokens_and_whoami_describes_the_user(emulator: Emulator) -> None:
    api = Api(emulator)
    tokens = api.ok("POST", "/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    assert set(tokens) == {"access_token", "token_type", "expires_in", "refresh_token"}
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 300
    assert tokens["access_token"] != tokens["refresh_token"]
    api.token = tokens["access_token"]
    me = api.ok("GET", "/users/whoami")
    assert me["username"] == "admin"
    assert me["role"] == "ClusterAdmin"
    assert (me["org_id"], me["org_name"]) == (0, "Root")
    expiry = api.ok("GET", "/security/defaultTokensExpiry")
    assert expiry["access_token_expiry"] == 300
    assert expiry["refresh_token_expiry"] >= 24 * 3600


def test_wrong_credentials_are_401(emulator: Emulator) -> None:
    api = Api(emulator)
    wrong = {"username": "admin", "password": "Not-the-Passw0rd"}
    assert "Invalid username or password" in api.fails("POST", "/login", 401, json=wrong)
    nobody = {"username": "nobody", "password": ADMIN_PASSWORD}
    api.fails("POST", "/login", 401, json=nobody)
    other_org = {"username": "admin", "password": ADMIN_PASSWORD, "org": "no-such-org"}
    api.fails("POST", "/login", 401, json=other_org)
    assert "password" in api.fails("POST", "/login", 400, json={"username": "admin"})


def test_missing_or_unknown_access_token_is_401(emulator: Emulator) -> None:
    assert "missing" in Api(emulator).fails("GET", "/fileSystems", 401)
    assert "invalid" in Api(emulator, token="forged").fails("GET", "/fileSystems", 401)


def test_expired_access_token_is_401_and_refresh_gives_a_working_one(
    emulator: Emulator, admin: Api
) -> None:
    api = Api(emulator)
    tokens = api.ok("POST", "/login", json={"username": "admin", "password": ADMIN_PASSWORD})
    api.token = tokens["access_token"]
    api.ok("GET", "/users/whoami")
    admin.ok("POST", "/_emulator/expire-tokens")
    assert "expired" in api.fails("GET", "/users/whoami", 401)
    refreshed = api.ok("POST", "/login/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert refreshed["token_type"] == "Bearer"
    assert refreshed["expires_in"] == 300
    assert refreshed["access_token"] != tokens["access_token"]
    api.token = refreshed["access_token"]
    assert api.ok("GET", "/users/whoami")["username"] == "admin"
    bogus = {"refresh_token": "bogus"}
    assert "refresh token" in Api(emulator).fails("POST", "/login/refresh", 401, json=bogus)
    # An access token is not a refresh token.
    wrong_kind = {"refresh_token": refreshed["access_token"]}
    Api(emulator).fails("POST", "/login/refresh", 401, json=wrong_kind)


def test_emulator_controls_need_a_root_cluster_admin(emulator: Emulator, tenant: Tenant) -> None:
    _, org_admin = tenant()
    org_admin.fails("POST", "/_emulator/expire-tokens", 403)
    Api(emulator).fails("POST", "/_emulator/expire-tokens", 401)


# --- organizations ---------------------------------------------------------------------------


def test_organization_lifecycle(admin: Api) -> None:
    name = unique("org")
    body = {
        "name": name,
        "username": "boss",
        "password": TENANT_PASSWORD,
        "ssd_quota": "5TB",
        "total_quota": 10 * TB,
    }
    org = admin.ok("POST", "/organizations", json=body)
    assert org["name"] == name
    assert isinstance(org["id"], int)
    assert org["id"] > 0
    assert (org["ssd_quota"], org["total_quota"]) == (5 * TB, 10 * TB)
    assert (org["ssd_allocated"], org["total_allocated"]) == (0, 0)
    uid = org["uid"]

    assert "already exists" in admin.fails("POST", "/organizations", 409, json=body)
    listed = admin.ok("GET", "/organizations")
    assert {"Root", name} <= {o["name"] for o in listed}
    assert admin.ok("GET", f"/organizations/{uid}") == org
    assert admin.ok("GET", "/organizations/multipleOrgsExist") is True

    renamed = admin.ok("PUT", f"/organizations/{uid}", json={"new_name": name + "-x"})
    assert renamed["name"] == name + "-x"
    admin.fails("PUT", f"/organizations/{uid}", 409, json={"new_name": "Root"})

    limits = admin.ok("PUT", f"/organizations/{uid}/limits", json={"total_quota": 20 * TB})
    assert (limits["ssd_quota"], limits["total_quota"]) == (5 * TB, 20 * TB)
    root_uid = next(o["uid"] for o in listed if o["name"] == "Root")
    assert "Root" in admin.fails("PUT", f"/organizations/{root_uid}/limits", 400, json=limits)
    admin.fails("DELETE", f"/organizations/{root_uid}", 400)

    admin.ok("DELETE", f"/organizations/{uid}")
    admin.fails("GET", f"/organizations/{uid}", 404)
    admin.fails("DELETE", f"/organizations/{uid}", 404)
    admin.fails("PUT", f"/organizations/{uuid.uuid4()}/limits", 404, json={"total_quota": 1})


def test_organization_admin_password_must_be_strong(admin: Api) -> None:
    body = {"name": unique("org"), "username": "boss", "password": "weak"}
    assert "at least 8 characters" in admin.fails("POST", "/organizations", 400, json=body)


def test_only_the_cluster_admin_manages_organizations(admin: Api, tenant: Tenant) -> None:
    org, org_admin = tenant()
    other, _ = tenant()
    body = {"name": unique("org"), "username": "x", "password": TENANT_PASSWORD}
    org_admin.fails("POST", "/organizations", 403, json=body)
    assert [o["uid"] for o in org_admin.ok("GET", "/organizations")] == [org["uid"]]
    org_admin.ok("GET", f"/organizations/{org['uid']}")
    org_admin.fails("GET", f"/organizations/{other['uid']}", 403)
    org_admin.fails("PUT", f"/organizations/{org['uid']}/limits", 403, json={"total_quota": 1})
    org_admin.fails("DELETE", f"/organizations/{other['uid']}", 403)


def test_deleting_an_organization_with_filesystems_fails(
    emulator: Emulator, admin: Api, tenant: Tenant
) -> None:
    org, org_admin = tenant()
    fs = make_fs(org_admin, name="home")
    assert "home" in admin.fails("DELETE", f"/organizations/{org['uid']}", 400)
    org_admin.ok("DELETE", f"/fileSystems/{fs['uid']}")
    admin.ok("DELETE", f"/organizations/{org['uid']}")
    # Its users and their sessions go with it.
    org_admin.fails("GET", "/users/whoami", 401)
    login = {"username": "orgadmin", "password": TENANT_PASSWORD, "org": org["name"]}
    Api(emulator).fails("POST", "/login", 401, json=login)


def test_organization_limits_cannot_drop_below_allocation(admin: Api, tenant: Tenant) -> None:
    org, org_admin = tenant(total_quota=10 * TB)
    make_fs(org_admin, capacity=4 * TB)
    assert admin.ok("GET", f"/organizations/{org['uid']}")["total_allocated"] == 4 * TB
    limits = {"total_quota": 3 * TB}
    admin.fails("PUT", f"/organizations/{org['uid']}/limits", 400, json=limits)
    admin.ok("PUT", f"/organizations/{org['uid']}/limits", json={"total_quota": 4 * TB})


# --- filesystems -----------------------------------------------------------------------------


def test_filesystem_lifecycle(tenant: Tenant) -> None:
    _, api = tenant()
    body = {
        "name": "scratch",
        "group_name": "default",
        "total_capacity": 2 * TB,
        "ssd_capacity": TB,
        "auth_required": True,
        "encrypted": True,
    }
    fs = api.ok("POST", "/fileSystems", json=body)
    assert fs["name"] == "scratch"
    assert fs["group_name"] == "default"
    assert (fs["total_budget"], fs["ssd_budget"]) == (2 * TB, TB)
    assert (fs["used_total"], fs["available_total"]) == (0, 2 * TB)
    assert (fs["is_ready"], fs["is_removing"], fs["status"]) == (True, False, "READY")
    assert (fs["auth_required"], fs["is_encrypted"]) == (True, True)
    uuid.UUID(fs["uid"])

    assert api.ok("GET", f"/fileSystems/{fs['uid']}") == fs
    assert api.ok("GET", "/fileSystems", params={"name": "scratch"}) == [fs]
    assert api.ok("GET", "/fileSystems", params={"name": "nope"}) == []
    assert "already exists" in api.fails("POST", "/fileSystems", 409, json=body)

    update = {"new_name": "scratch2", "total_capacity": "3TB", "auth_required": False}
    grown = api.ok("PUT", f"/fileSystems/{fs['uid']}", json=update)
    assert (grown["name"], grown["total_budget"], grown["ssd_budget"]) == ("scratch2", 3 * TB, TB)
    assert grown["auth_required"] is False

    api.ok("DELETE", f"/fileSystems/{fs['uid']}")
    api.missing("GET", f"/fileSystems/{fs['uid']}", FS)
    api.missing("DELETE", f"/fileSystems/{fs['uid']}", FS)
    api.missing("PUT", f"/fileSystems/{fs['uid']}", FS, json={"total_capacity": TB})


def test_filesystem_create_validates_its_fields(tenant: Tenant) -> None:
    _, api = tenant()
    assert "group_name" in api.fails(
        "POST", "/fileSystems", 400, json={"name": "a", "total_capacity": TB}
    )
    assert "total_capacity" in api.fails(
        "POST", "/fileSystems", 400, json={"name": "a", "group_name": "g"}
    )
    bad_unit = {"name": "a", "group_name": "g", "total_capacity": "5 parsecs"}
    api.fails("POST", "/fileSystems", 400, json=bad_unit)
    too_much_ssd = {"name": "a", "group_name": "g", "total_capacity": TB, "ssd_capacity": 2 * TB}
    api.fails("POST", "/fileSystems", 400, json=too_much_ssd)


def test_organizations_cannot_see_each_others_filesystems(admin: Api, tenant: Tenant) -> None:
    _, api_a = tenant()
    _, api_b = tenant()
    fs_a = make_fs(api_a, name="shared-name")
    fs_b = make_fs(api_b, name="shared-name")  # names are per organization
    assert [f["uid"] for f in api_a.ok("GET", "/fileSystems")] == [fs_a["uid"]]
    assert [f["uid"] for f in api_b.ok("GET", "/fileSystems")] == [fs_b["uid"]]
    api_b.missing("GET", f"/fileSystems/{fs_a['uid']}", FS)
    api_b.missing("PUT", f"/fileSystems/{fs_a['uid']}", FS, json={"total_capacity": 2 * TB})
    api_b.missing("DELETE", f"/fileSystems/{fs_a['uid']}", FS)
    api_b.missing("GET", f"/fileSystems/{fs_a['uid']}/resolvePath", FS, params={"path": "/"})
    api_b.missing("POST", "/snapshots", FS, json={"fs_uid": fs_a["uid"], "name": "steal"})
    # The cluster admin lives in Root and does not see tenant filesystems either.
    assert fs_a["uid"] not in {f["uid"] for f in admin.ok("GET", "/fileSystems")}
    admin.missing("GET", f"/fileSystems/{fs_a['uid']}", FS)


def test_filesystems_cannot_exceed_the_organization_quota(tenant: Tenant) -> None:
    _, api = tenant(total_quota=10 * TB, ssd_quota=8 * TB)
    fs = make_fs(api, capacity=6 * TB)
    body = {"name": unique("fs"), "group_name": "default", "total_capacity": 5 * TB}
    message = api.fails("POST", "/fileSystems", 400, json=body)
    assert "quota" in message
    assert str(4 * TB) in message
    api.fails("PUT", f"/fileSystems/{fs['uid']}", 400, json={"total_capacity": 11 * TB})
    ssd_heavy = {"name": unique("fs"), "group_name": "d", "total_capacity": 3 * TB}
    assert "SSD quota" in api.fails("POST", "/fileSystems", 400, json=ssd_heavy)
    make_fs(api, capacity=2 * TB)  # 8 TB total, 8 TB SSD: exactly at both quotas


def test_filesystems_cannot_exceed_the_cluster_capacity(admin: Api) -> None:
    body = {"name": unique("fs"), "group_name": "default", "total_capacity": "3PB"}
    assert "free capacity" in admin.fails("POST", "/fileSystems", 400, json=body)
    before = admin.ok("GET", "/cluster")["capacity"]["unprovisioned_bytes"]
    fs = make_fs(admin, capacity=TB)
    after = admin.ok("GET", "/cluster")["capacity"]["unprovisioned_bytes"]
    assert before - after == TB
    admin.ok("DELETE", f"/fileSystems/{fs['uid']}")


def test_filesystem_cannot_shrink_below_its_usage(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api, capacity=TB)
    mkdir(admin, fs["uid"], "/data")
    usage = {"path": "/data", "used_bytes": 600 * 10**9}
    admin.ok("PUT", f"/_emulator/fileSystems/{fs['uid']}/usage", json=usage)
    assert api.ok("GET", f"/fileSystems/{fs['uid']}")["used_total"] == 600 * 10**9
    api.fails("PUT", f"/fileSystems/{fs['uid']}", 400, json={"total_capacity": 500 * 10**9})
    # Writing past the filesystem's size fails like ENOSPC.
    usage = {"path": "/data", "used_bytes": 2 * TB}
    assert "No space" in admin.fails(
        "PUT", f"/_emulator/fileSystems/{fs['uid']}/usage", 507, json=usage
    )


def test_deleting_a_mounted_filesystem_fails(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api)
    mounts = f"/_emulator/fileSystems/{fs['uid']}/mounts"
    assert admin.ok("PUT", mounts, json={"mounted": True})["mounted"] is True
    assert "filesystem is in use" in api.fails("DELETE", f"/fileSystems/{fs['uid']}", 400)
    admin.ok("PUT", mounts, json={"mounted": False})
    api.ok("DELETE", f"/fileSystems/{fs['uid']}")


# --- directories and quotas ------------------------------------------------------------------


def test_resolve_path_finds_existing_directories_only(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api)
    resolve = f"/fileSystems/{fs['uid']}/resolvePath"
    root = api.ok("GET", resolve, params={"path": "/"})
    assert root["path"] == "/"
    assert root["inode_id"].isdigit()
    message = api.missing("GET", resolve, PATH, params={"path": "/home/alice"})
    assert "PATH_NOT_FOUND" in message
    inode = mkdir(admin, fs["uid"], "/home/alice")
    found = api.ok("GET", resolve, params={"path": "/home/alice/"})
    assert found == {"inode_id": inode, "path": "/home/alice"}
    assert api.ok("GET", resolve, params={"path": "/home"})["inode_id"] not in {
        inode,
        root["inode_id"],
    }
    api.fails("GET", resolve, 400)
    api.fails("GET", resolve, 400, params={"path": "relative"})


def test_quota_set_get_patch_list_and_delete(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api)
    inode = mkdir(admin, fs["uid"], "/home/alice")
    mkdir(admin, fs["uid"], "/home/alice/projects")
    quota_url = f"/fileSystems/{fs['uid']}/quota/{inode}"
    limits = {"hard_limit_bytes": 100 * 10**9, "soft_limit_bytes": 90 * 10**9, "grace_seconds": 0}
    quota = api.ok("PUT", quota_url, json={**limits, "owner": "alice"})
    assert quota["status"] == "ACTIVE"
    assert quota["inode_id"] == int(inode)
    assert quota["path"] == "/home/alice"
    assert quota["owner"] == "alice"
    assert quota["total_bytes"] == 0
    assert {k: quota[k] for k in limits} == limits
    assert api.ok("GET", quota_url) == quota

    # Usage anywhere under the directory counts.
    usage = {"path": "/home/alice/projects", "used_bytes": 40 * 10**9}
    admin.ok("PUT", f"/_emulator/fileSystems/{fs['uid']}/usage", json=usage)
    assert api.ok("GET", quota_url)["total_bytes"] == 40 * 10**9

    patched = api.ok("PATCH", quota_url, json={"soft_limit_bytes": 80 * 10**9})
    assert (patched["soft_limit_bytes"], patched["hard_limit_bytes"]) == (80 * 10**9, 100 * 10**9)
    assert patched["owner"] == "alice"
    assert api.ok("GET", f"/fileSystems/{fs['uid']}/quota") == [patched]

    soft_over_hard = {"hard_limit_bytes": 10, "soft_limit_bytes": 20, "grace_seconds": 0}
    api.fails("PUT", quota_url, 400, json=soft_over_hard)

    api.ok("DELETE", quota_url)
    assert "Directory has no quota" in api.fails("GET", quota_url, 500)
    api.fails("PATCH", quota_url, 500, json={"soft_limit_bytes": 1})
    api.fails("DELETE", quota_url, 500)
    assert api.ok("GET", f"/fileSystems/{fs['uid']}/quota") == []
    api.fails("PUT", f"/fileSystems/{fs['uid']}/quota/999999999", 404, json=limits)
    api.missing("GET", f"/fileSystems/{uuid.uuid4()}/quota", FS)


def test_hard_quota_refuses_writes_beyond_it(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api)
    inode = mkdir(admin, fs["uid"], "/scratch/team")
    limits = {"hard_limit_bytes": 1000, "soft_limit_bytes": 1000, "grace_seconds": 0}
    api.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{inode}", json=limits)
    usage_url = f"/_emulator/fileSystems/{fs['uid']}/usage"
    admin.ok("PUT", usage_url, json={"path": "/scratch/team", "used_bytes": 1000})
    over = {"path": "/scratch/team", "used_bytes": 1001}
    assert "Disk quota exceeded" in admin.fails("PUT", usage_url, 507, json=over)
    # Writes outside the directory are not limited by its quota.
    mkdir(admin, fs["uid"], "/scratch/other")
    admin.ok("PUT", usage_url, json={"path": "/scratch/other", "used_bytes": 5000})
    quota = api.ok("GET", f"/fileSystems/{fs['uid']}/quota/{inode}")
    assert quota["total_bytes"] == 1000


def test_soft_quota_blocks_growth_only_after_its_grace_period(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api)
    graced = mkdir(admin, fs["uid"], "/graced")
    advisory = mkdir(admin, fs["uid"], "/advisory")
    soft = {"hard_limit_bytes": 0, "soft_limit_bytes": 100}
    api.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{graced}", json={**soft, "grace_seconds": 1})
    api.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{advisory}", json={**soft, "grace_seconds": 0})
    usage_url = f"/_emulator/fileSystems/{fs['uid']}/usage"
    for path in ("/graced", "/advisory"):
        admin.ok("PUT", usage_url, json={"path": path, "used_bytes": 150})
    time.sleep(1.1)
    admin.fails("PUT", usage_url, 507, json={"path": "/graced", "used_bytes": 160})
    admin.ok("PUT", usage_url, json={"path": "/graced", "used_bytes": 120})  # freeing is fine
    admin.ok("PUT", usage_url, json={"path": "/advisory", "used_bytes": 500})  # no grace: advisory


# --- directories on the mount ----------------------------------------------------------------

QUOTA = {"hard_limit_bytes": 10**9, "soft_limit_bytes": 10**9, "grace_seconds": 0}


def resolve(api: Api, fs_uid: str, path: str) -> str:
    found = api.ok("GET", f"/fileSystems/{fs_uid}/resolvePath", params={"path": path})
    return str(found["inode_id"])


def test_a_new_filesystem_is_an_empty_directory_of_its_organization(
    emulator: Emulator, tenant: Tenant
) -> None:
    org, api = tenant()
    make_fs(api, name="home")
    mount = emulator.mount(org["name"], "home")
    assert list(mount.iterdir()) == []
    assert stat.S_IMODE(mount.stat().st_mode) == 0o755


def test_a_directory_made_on_the_mount_is_found_and_keeps_its_inode(
    emulator: Emulator, tenant: Tenant
) -> None:
    org, api = tenant()
    fs = make_fs(api)
    mount = emulator.mount(org["name"], fs["name"])
    url = f"/fileSystems/{fs['uid']}/resolvePath"
    assert "PATH_NOT_FOUND" in api.missing("GET", url, PATH, params={"path": "/alice"})
    (mount / "alice").mkdir()
    alice = api.ok("GET", url, params={"path": "/alice/"})
    assert alice["path"] == "/alice"
    assert resolve(api, fs["uid"], "/alice") == alice["inode_id"]
    os.makedirs(mount / "team" / "data")
    ids = {resolve(api, fs["uid"], p) for p in ("/", "/alice", "/team/data", "/team")}
    assert len(ids) == 4
    (mount / "notes.txt").write_text("not a directory")
    api.missing("GET", url, PATH, params={"path": "/notes.txt"})
    api.missing("GET", url, PATH, params={"path": "/notes.txt/sub"})


def test_paths_cannot_lead_out_of_the_filesystem(
    emulator: Emulator, admin: Api, tenant: Tenant, tmp_path: Path
) -> None:
    org, api = tenant()
    fs, other = make_fs(api), make_fs(api)
    mount = emulator.mount(org["name"], fs["name"])
    url = f"/fileSystems/{fs['uid']}/resolvePath"
    assert "'..'" in api.fails("GET", url, 400, params={"path": f"/../{other['name']}"})
    api.fails("GET", url, 400, params={"path": "/a/.."})
    (mount / "sibling").symlink_to(emulator.mount(org["name"], other["name"]))
    (mount / "elsewhere").symlink_to(tmp_path)
    assert "outside" in api.fails("GET", url, 400, params={"path": "/sibling"})
    api.fails("GET", url, 400, params={"path": "/elsewhere"})
    mkdir_url = f"/_emulator/fileSystems/{fs['uid']}/directories"
    admin.fails("POST", mkdir_url, 400, json={"path": "/elsewhere/made"})
    admin.fails("POST", mkdir_url, 400, json={"path": "/../made"})
    assert list(tmp_path.iterdir()) == []
    # A link that stays inside leads to the directory it names, under that directory's path.
    (mount / "real").mkdir()
    (mount / "alias").symlink_to("real")
    assert api.ok("GET", url, params={"path": "/alias"}) == api.ok(
        "GET", url, params={"path": "/real"}
    )


def test_renames_move_the_tree_and_keep_inodes_and_quotas(
    emulator: Emulator, admin: Api, tenant: Tenant
) -> None:
    org, api = tenant()
    fs = make_fs(api, name="home")
    inode = mkdir(admin, fs["uid"], "/alice")
    quota = api.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{inode}", json=QUOTA)

    api.ok("PUT", f"/fileSystems/{fs['uid']}", json={"new_name": "home2"})
    assert not emulator.mount(org["name"], "home").exists()
    assert (emulator.mount(org["name"], "home2") / "alice").is_dir()
    assert resolve(api, fs["uid"], "/alice") == inode

    new_name = f"{org['name']}-renamed"
    admin.ok("PUT", f"/organizations/{org['uid']}", json={"new_name": new_name})
    assert not (emulator.mount_root / org["name"]).exists()
    assert (emulator.mount(new_name, "home2") / "alice").is_dir()
    assert resolve(api, fs["uid"], "/alice") == inode
    assert api.ok("GET", f"/fileSystems/{fs['uid']}/quota/{inode}") == quota


def test_deleting_removes_the_tree(emulator: Emulator, admin: Api, tenant: Tenant) -> None:
    org, api = tenant()
    fs = make_fs(api)
    mount = emulator.mount(org["name"], fs["name"])
    os.makedirs(mount / "alice" / "deep")
    (mount / "alice" / "deep" / "data").write_text("gone with the filesystem")
    api.ok("DELETE", f"/fileSystems/{fs['uid']}")
    assert not mount.exists()
    admin.ok("DELETE", f"/organizations/{org['uid']}")
    assert not (emulator.mount_root / org["name"]).exists()


def test_a_directory_removed_on_the_mount_takes_its_quota_and_data(
    emulator: Emulator, admin: Api, tenant: Tenant
) -> None:
    org, api = tenant()
    fs = make_fs(api)
    mount = emulator.mount(org["name"], fs["name"])
    alice, bob = mkdir(admin, fs["uid"], "/alice"), mkdir(admin, fs["uid"], "/bob")
    for inode in (alice, bob):
        api.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{inode}", json=QUOTA)
    usage_url = f"/_emulator/fileSystems/{fs['uid']}/usage"
    admin.ok("PUT", usage_url, json={"path": "/alice", "used_bytes": 1000})

    (mount / "alice").rmdir()
    listed = api.ok("GET", f"/fileSystems/{fs['uid']}/quota")
    assert [q["path"] for q in listed] == ["/bob"]
    assert "Inode" in api.fails("GET", f"/fileSystems/{fs['uid']}/quota/{alice}", 404)
    api.fails("PUT", f"/fileSystems/{fs['uid']}/quota/{alice}", 404, json=QUOTA)
    assert api.ok("GET", f"/fileSystems/{fs['uid']}")["used_total"] == 0
    admin.missing("PUT", usage_url, PATH, json={"path": "/alice", "used_bytes": 1})

    (mount / "alice").mkdir()
    again = resolve(api, fs["uid"], "/alice")
    assert again != alice
    assert "no quota" in api.fails("GET", f"/fileSystems/{fs['uid']}/quota/{again}", 500)


def test_the_emulator_mkdir_makes_a_real_directory(
    emulator: Emulator, admin: Api, tenant: Tenant
) -> None:
    org, api = tenant()
    fs = make_fs(api)
    mount = emulator.mount(org["name"], fs["name"])
    inode = mkdir(admin, fs["uid"], "/home/alice")
    assert (mount / "home" / "alice").is_dir()
    assert resolve(api, fs["uid"], "/home/alice") == inode
    assert mkdir(admin, fs["uid"], "/home/alice") == inode  # mkdir -p: already there is fine
    (mount / "home" / "file").write_text("in the way")
    mkdir_url = f"/_emulator/fileSystems/{fs['uid']}/directories"
    assert "in the way" in admin.fails("POST", mkdir_url, 400, json={"path": "/home/file/x"})


def test_names_that_are_not_one_directory_are_refused(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    body = {"name": "a/b", "group_name": "default", "total_capacity": TB}
    assert "'a/b'" in api.fails("POST", "/fileSystems", 400, json=body)
    fs = make_fs(api)
    api.fails("PUT", f"/fileSystems/{fs['uid']}", 400, json={"new_name": ".."})
    org = {"name": "x/y", "username": "boss", "password": TENANT_PASSWORD}
    admin.fails("POST", "/organizations", 400, json=org)


# --- snapshots -------------------------------------------------------------------------------


def test_snapshot_lifecycle(tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api, name="home")
    body = {"fs_uid": fs["uid"], "name": "daily", "access_point": "daily-ap", "is_writable": False}
    snap = api.ok("POST", "/snapshots", json=body)
    assert snap["name"] == "daily"
    assert snap["accessPoint"] == "daily-ap"
    assert (snap["filesystem"], snap["filesystemUid"]) == ("home", fs["uid"])
    assert (snap["isWritable"], snap["isRemoving"], snap["locator"]) == (False, False, "")
    assert snap["creationTime"].endswith("Z")
    assert "access_point" not in snap  # camelCase, unlike every other object

    assert "already exists" in api.fails("POST", "/snapshots", 409, json=body)
    default_ap = api.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "other"})
    assert default_ap["accessPoint"].startswith("@GMT-")

    assert api.ok("GET", f"/snapshots/{snap['uid']}") == snap
    listed = api.ok("GET", "/snapshots", params={"filesystem": "home", "name": "daily"})
    assert listed == [snap]
    assert len(api.ok("GET", "/snapshots", params={"filesystem": "home"})) == 2
    assert api.ok("GET", "/snapshots", params={"filesystem": "elsewhere"}) == []

    upload = f"/snapshots/{snap['uid']}/upload"
    assert "not tiered" in api.fails("POST", upload, 400, json={"obs_site": "LOCAL"})
    attach = {"obs_name": OBS_BUCKET}
    assert api.ok("POST", f"/fileSystems/{fs['uid']}/objectStoreBuckets", json=attach) is None
    api.fails("POST", upload, 400, json={"obs_site": "MARS"})
    uploaded = api.ok("POST", upload, json={"obs_site": "LOCAL"})
    assert set(uploaded) == {"locator", "extra"}
    assert re.fullmatch(r"[0-9a-f]{8}/d/s/\d+/spec/[0-9a-f-]+", uploaded["locator"])
    again = api.ok("GET", f"/snapshots/{snap['uid']}")
    assert (again["locator"], again["stowStatus"]) == (uploaded["locator"], "SYNCHRONIZED")
    assert again["localStowInfo"] == {
        "locator": uploaded["locator"],
        "stowStatus": "SYNCHRONIZED",
        "stowProgress": "100%",
    }
    snap = again

    update = {"new_name": "weekly", "access_point": "weekly-ap", "is_writable": True}
    updated = api.ok("PUT", f"/snapshots/{snap['uid']}", json=update)
    assert (updated["name"], updated["accessPoint"], updated["isWritable"]) == (
        "weekly",
        "weekly-ap",
        True,
    )
    api.fails("PUT", f"/snapshots/{snap['uid']}", 409, json={"new_name": "other"})

    api.ok("DELETE", f"/snapshots/{snap['uid']}")
    api.missing("GET", f"/snapshots/{snap['uid']}", SNAP)
    api.missing("DELETE", f"/snapshots/{snap['uid']}", SNAP)
    api.missing("POST", "/snapshots", FS, json={"fs_uid": str(uuid.uuid4()), "name": "x"})


def test_a_snapshot_is_a_point_in_time_copy_with_owners_and_modes(
    emulator: Emulator, tenant: Tenant
) -> None:
    org, api = tenant()
    fs = make_fs(api, name="home")
    mount = emulator.mount(org["name"], "home")
    alice = mount / "alice"
    alice.mkdir()
    os.chown(alice, 2001, 4001)
    os.chmod(alice, 0o2750)
    (alice / "notes").write_text("before")
    os.chown(alice / "notes", 2001, 4001)
    os.chmod(alice / "notes", 0o640)
    (alice / "link").symlink_to("notes")
    body = {"fs_uid": fs["uid"], "name": "before", "access_point": "before-ap"}
    api.ok("POST", "/snapshots", json=body)

    (alice / "notes").write_text("after")
    (alice / "new").write_text("made after the snapshot")
    copy = mount / ".snapshots" / "before-ap"
    assert (copy / "alice" / "notes").read_text() == "before"
    assert not (copy / "alice" / "new").exists()
    assert os.readlink(copy / "alice" / "link") == "notes"
    for path, mode in ((copy / "alice", 0o2750), (copy / "alice" / "notes", 0o640)):
        info = path.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (2001, 4001, mode)
    # A later snapshot does not copy the earlier ones into itself.
    api.ok("POST", "/snapshots", json={**body, "name": "after", "access_point": "after-ap"})
    later = mount / ".snapshots" / "after-ap"
    assert (later / "alice" / "new").exists()
    assert not (later / ".snapshots").exists()

    snap = api.ok("GET", "/snapshots", params={"filesystem": "home", "name": "before"})[0]
    api.ok("PUT", f"/snapshots/{snap['uid']}", json={"access_point": "renamed-ap"})
    assert (mount / ".snapshots" / "renamed-ap" / "alice" / "notes").read_text() == "before"
    assert not copy.exists()
    api.ok("DELETE", f"/snapshots/{snap['uid']}")
    assert not (mount / ".snapshots" / "renamed-ap").exists()
    bad = {"fs_uid": fs["uid"], "name": "bad", "access_point": "a/b"}
    assert "'a/b'" in api.fails("POST", "/snapshots", 400, json=bad)


def test_deleting_a_filesystem_deletes_its_snapshots(
    emulator: Emulator, admin: Api, tenant: Tenant
) -> None:
    """A snapshot lives inside its filesystem (docs.weka.io, Snapshots): it takes no space of
    its own in the cluster and does not outlive the filesystem."""
    org, api = tenant()
    other_org_snapshots = tenant()[1].ok("GET", "/snapshots")
    fs = make_fs(api, name="home", capacity=TB)
    kept = make_fs(api, name="scratch", capacity=TB)
    mkdir(admin, fs["uid"], "/data")
    usage = {"path": "/data", "used_bytes": 10**9}
    admin.ok("PUT", f"/_emulator/fileSystems/{fs['uid']}/usage", json=usage)
    snap = api.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "offboard"})
    other = api.ok("POST", "/snapshots", json={"fs_uid": kept["uid"], "name": "offboard"})

    before = admin.ok("GET", "/cluster")["capacity"]["unprovisioned_bytes"]
    api.ok("DELETE", f"/fileSystems/{fs['uid']}")
    after = admin.ok("GET", "/cluster")["capacity"]["unprovisioned_bytes"]
    assert after - before == TB  # all of it: nothing stays behind in the cluster

    api.missing("GET", f"/snapshots/{snap['uid']}", SNAP)
    assert api.ok("GET", "/snapshots", params={"filesystem": "home"}) == []
    assert api.ok("GET", "/snapshots") == [other]
    assert not emulator.mount(org["name"], "home").exists()
    assert other_org_snapshots == []


def test_snapshots_follow_a_renamed_filesystem(tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api, name="home")
    snap = api.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "daily"})
    api.ok("PUT", f"/fileSystems/{fs['uid']}", json={"new_name": "home2"})
    listed = api.ok("GET", "/snapshots", params={"filesystem": "home2"})
    assert [(s["uid"], s["filesystem"]) for s in listed] == [(snap["uid"], "home2")]


# --- Snap-To-Object ------------------------------------------------------------------------


def attach(api: Api, fs_uid: str, **body: str) -> None:
    api.ok(
        "POST", f"/fileSystems/{fs_uid}/objectStoreBuckets", json={"obs_name": OBS_BUCKET, **body}
    )


def tenant_files(mount: Path) -> None:
    """alice's home as a tenant leaves it: her own uid and the tenant's gid, setgid."""
    alice = mount / "alice"
    alice.mkdir()
    (alice / "notes").write_text("before")
    (alice / "link").symlink_to("notes")
    for path in (alice, alice / "notes"):
        os.chown(path, 2001, 4001)
    os.chmod(alice, 0o2750)
    os.chmod(alice / "notes", 0o640)


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


def test_an_upload_writes_the_snapshot_into_the_object_store(
    emulator: Emulator, admin: Api, tenant: Tenant, store: RetentionStore
) -> None:
    org, api = tenant()
    fs = make_fs(api, name="home")
    mount = emulator.mount(org["name"], "home")
    tenant_files(mount)
    mkdir(admin, fs["uid"], "/alice")
    usage = {"path": "/alice", "used_bytes": 5000}
    admin.ok("PUT", f"/_emulator/fileSystems/{fs['uid']}/usage", json=usage)
    body = {"fs_uid": fs["uid"], "name": "offboard", "access_point": "offboard-ap"}
    snap = api.ok("POST", "/snapshots", json=body)
    (mount / "alice" / "notes").write_text("after")  # after the snapshot: not uploaded
    attach(api, fs["uid"])
    listed = api.ok("GET", f"/fileSystems/{fs['uid']}")["obs_buckets"]
    assert [(b["name"], b["mode"], b["state"]) for b in listed] == [
        (OBS_BUCKET, "WRITABLE", "ACTIVE")
    ]

    locator = api.ok("POST", f"/snapshots/{snap['uid']}/upload", json={})["locator"]
    # Under the bucket's prefix and the locator: the tar stream in blobs, then the spec.
    prefix = f"{UPLOADS_PREFIX}/{locator}/"
    assert [o.key for o in store.list(prefix)] == [prefix + "blobs/000000", prefix + "spec"]
    manifest = json.loads(store.get(prefix + "spec"))
    assert (manifest["fs_name"], manifest["snapshot_name"], manifest["access_point"]) == (
        "home",
        "offboard",
        "offboard-ap",
    )
    assert manifest["guid"] == admin.ok("GET", "/cluster")["guid"]
    assert manifest["usage"] == {"/alice": 5000}
    with tarfile.open(fileobj=io.BytesIO(store.get(prefix + "blobs/000000"))) as tar:
        notes = tar.getmember("./alice/notes")
        assert (notes.uid, notes.gid, notes.mode) == (2001, 4001, 0o640)
        assert (tar.getmember("./alice").mode, tar.getmember("./alice/link").linkname) == (
            0o2750,
            "notes",
        )
        extracted = tar.extractfile(notes)
        assert extracted is not None
        assert extracted.read() == b"before"
        assert not [m.name for m in tar.getmembers() if ".snapshots" in m.name]

    info = {"object_storage": OBS_BUCKET, "locator": locator}
    assert api.ok("POST", "/snapshots/locatorInfo", json=info) == {
        "fs_name": "home",
        "guid": manifest["guid"],
        "snapshot_name": "offboard",
        "snap_view_id": snap["id"],
        "access_point": "offboard-ap",
        "fs_ssd_capacity": TB,
        "is_encrypted": False,
    }
    upload = f"/snapshots/{snap['uid']}/upload"
    assert locator in api.fails("POST", upload, 409, json={"obs_site": "LOCAL"})


def test_an_uploaded_snapshot_outlives_its_filesystem_and_a_new_one_is_made_from_it(
    emulator: Emulator, admin: Api, tenant: Tenant, store: RetentionStore
) -> None:
    org, api = tenant()
    fs = make_fs(api, name="home")
    tenant_files(emulator.mount(org["name"], "home"))
    mkdir(admin, fs["uid"], "/alice")
    admin.ok(
        "PUT", f"/_emulator/fileSystems/{fs['uid']}/usage", json={"path": "/alice", "used_bytes": 7}
    )
    attach(api, fs["uid"])
    body = {"fs_uid": fs["uid"], "name": "offboard", "access_point": "offboard-ap"}
    snap = api.ok("POST", "/snapshots", json=body)
    locator = api.ok("POST", f"/snapshots/{snap['uid']}/upload", json={})["locator"]

    api.ok("DELETE", f"/fileSystems/{fs['uid']}")
    api.missing("GET", f"/snapshots/{snap['uid']}", SNAP)
    assert store.head(f"{UPLOADS_PREFIX}/{locator}/blobs/000000") is not None
    assert store.head(f"{UPLOADS_PREFIX}/{locator}/spec") is not None

    download = {
        "name": "home-restored",
        "group_name": "default",
        "total_capacity": TB,
        "ssd_capacity": TB,
        "object_storage": OBS_BUCKET,
        "locator": locator,
    }
    restored = api.ok("POST", "/fileSystems/download", json=download)
    assert (restored["name"], restored["total_budget"], restored["used_total"]) == (
        "home-restored",
        TB,
        7,
    )
    assert [(b["name"], b["mode"]) for b in restored["obs_buckets"]] == [(OBS_BUCKET, "WRITABLE")]
    alice = emulator.mount(org["name"], "home-restored") / "alice"
    assert (alice / "notes").read_text() == "before"
    assert os.readlink(alice / "link") == "notes"
    assert owner_and_mode(alice) == (2001, 4001, 0o2750)
    assert owner_and_mode(alice / "notes") == (2001, 4001, 0o640)
    # It holds the uploaded snapshot itself, already uploaded.
    kept = api.ok("GET", "/snapshots", params={"filesystem": "home-restored"})
    assert [(s["name"], s["accessPoint"], s["locator"]) for s in kept] == [
        ("offboard", "offboard-ap", locator)
    ]
    copy = emulator.mount(org["name"], "home-restored") / ".snapshots" / "offboard-ap"
    assert (copy / "alice" / "notes").read_text() == "before"

    assert "already exists" in api.fails("POST", "/fileSystems/download", 409, json=download)
    elsewhere = {**download, "name": "other", "snapshot_name": "s2", "access_point": "s2-ap"}
    other = api.ok("POST", "/fileSystems/download", json=elsewhere)
    assert [
        s["accessPoint"] for s in api.ok("GET", "/snapshots", params={"filesystem": "other"})
    ] == ["s2-ap"]
    missing = {**download, "name": "x", "locator": locator.rsplit("/", 1)[0] + "/0000-0000"}
    assert "not found" in api.fails("POST", "/fileSystems/download", 400, json=missing)
    assert not emulator.mount(org["name"], "x").exists()
    unknown = {**download, "name": "x", "object_storage": "nowhere"}
    assert "nowhere not found" in api.fails("POST", "/fileSystems/download", 400, json=unknown)
    escaping = {**download, "name": "x", "locator": "../../etc"}
    assert "Invalid locator" in api.fails("POST", "/fileSystems/download", 400, json=escaping)
    too_small = {**download, "name": "x", "total_capacity": 6, "ssd_capacity": 6}
    assert "holds 7 bytes" in api.fails("POST", "/fileSystems/download", 400, json=too_small)
    api.ok("DELETE", f"/fileSystems/{other['uid']}")


def test_what_an_upload_needs(admin: Api, tenant: Tenant) -> None:
    _, api = tenant()
    fs = make_fs(api)
    buckets = f"/fileSystems/{fs['uid']}/objectStoreBuckets"
    assert "not found" in api.fails("POST", buckets, 400, json={"obs_name": "nowhere"})
    assert "obs_mode" in api.fails(
        "POST", buckets, 400, json={"obs_name": OBS_BUCKET, "obs_mode": "X"}
    )
    attach(api, fs["uid"], obs_mode="READ_ONLY")
    assert "already attached" in api.fails("POST", buckets, 409, json={"obs_name": OBS_BUCKET})
    snap = api.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "s"})
    upload = f"/snapshots/{snap['uid']}/upload"
    assert "READ_ONLY" in api.fails("POST", upload, 400, json={})

    # Attached at create, under the deprecated path too; writable snapshots stay home.
    tiered = make_fs(api, name=unique("tiered"))
    api.ok("POST", f"/fileSystems/{tiered['uid']}/objectStores", json={"obs_name": OBS_BUCKET})
    body = {"name": unique("fs"), "group_name": "default", "total_capacity": TB}
    created = api.ok("POST", "/fileSystems", json={**body, "obs_name": OBS_BUCKET})
    assert [b["mode"] for b in created["obs_buckets"]] == ["WRITABLE"]
    unknown = {**body, "name": unique("fs"), "obs_name": "x"}
    assert "not found" in api.fails("POST", "/fileSystems", 400, json=unknown)
    writable = {"fs_uid": created["uid"], "name": "w", "is_writable": True}
    snap = api.ok("POST", "/snapshots", json=writable)
    upload = f"/snapshots/{snap['uid']}/upload"
    assert "read-only" in api.fails("POST", upload, 400, json={})
    assert "REMOTE" in api.fails("POST", upload, 400, json={"obs_site": "REMOTE"})
    # Another organization sees neither the snapshot nor the filesystem.
    _, other = tenant()
    other.missing("POST", upload, SNAP, json={})
    buckets = f"/fileSystems/{created['uid']}/objectStoreBuckets"
    other.missing("POST", buckets, FS, json={"obs_name": OBS_BUCKET})


def test_purge_from_obs_removes_what_was_uploaded(
    admin: Api, tenant: Tenant, store: RetentionStore
) -> None:
    _, api = tenant()
    fs = make_fs(api)
    attach(api, fs["uid"])
    snap = api.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "s"})
    locator = api.ok("POST", f"/snapshots/{snap['uid']}/upload", json={})["locator"]
    assert len(store.list(f"{UPLOADS_PREFIX}/{locator}/")) == 2
    api.fails("DELETE", f"/fileSystems/{fs['uid']}", 400, params={"purge_from_obs": "maybe"})
    api.ok("DELETE", f"/fileSystems/{fs['uid']}", params={"purge_from_obs": "true"})
    assert store.list(f"{UPLOADS_PREFIX}/{locator}/") == []
    info = {"object_storage": OBS_BUCKET, "locator": locator}
    assert "not found" in api.fails("POST", "/snapshots/locatorInfo", 400, json=info)


def test_without_its_object_store_a_cluster_attaches_and_uploads_nothing(
    tmp_path: Path, gateway: Gateway
) -> None:
    emulator = start_emulator(tmp_path, object_store=gateway.env())
    try:
        admin = Api.login(emulator, "admin", emulator.password_file.read_text().strip())
        tiered = make_fs(admin)
        attach(admin, tiered["uid"])
        snap = admin.ok("POST", "/snapshots", json={"fs_uid": tiered["uid"], "name": "s"})
    finally:
        stop_emulator(emulator)
    # Started again without RETENTION_S3_*: the attachment shows, down, and nothing goes up.
    emulator = start_emulator(tmp_path, port=emulator.port)
    try:
        admin.http = httpx.Client(base_url=emulator.base_url, timeout=10)
        shown = admin.ok("GET", f"/fileSystems/{tiered['uid']}")["obs_buckets"]
        assert [(b["name"], b["status"]) for b in shown] == [(OBS_BUCKET, "DOWN")]
        upload = f"/snapshots/{snap['uid']}/upload"
        assert "the cluster has no object store" in admin.fails("POST", upload, 400)
        fs = make_fs(admin)
        message = admin.fails(
            "POST", f"/fileSystems/{fs['uid']}/objectStoreBuckets", 400, json={"obs_name": "any"}
        )
        assert "the cluster has no object store" in message
    finally:
        stop_emulator(emulator)


# --- users -----------------------------------------------------------------------------------


def test_org_users_roles_and_permissions(emulator: Emulator, tenant: Tenant) -> None:
    org, org_admin = tenant()
    csi = org_admin.ok(
        "POST", "/users", json={"username": "csi", "password": TENANT_PASSWORD, "role": "CSI"}
    )
    assert (csi["username"], csi["role"], csi["org_id"]) == ("csi", "CSI", org["id"])
    duplicate = {"username": "csi", "password": TENANT_PASSWORD, "role": "Regular"}
    assert "already exists" in org_admin.fails("POST", "/users", 409, json=duplicate)
    assert {u["username"] for u in org_admin.ok("GET", "/users")} == {"orgadmin", "csi"}

    csi_api = Api.login(emulator, "csi", TENANT_PASSWORD, org=org["name"])
    me = csi_api.ok("GET", "/users/whoami")
    assert (me["role"], me["org_name"], me["org_id"]) == ("CSI", org["name"], org["id"])
    fs = make_fs(csi_api)  # the CSI role manages storage...
    csi_api.fails("POST", "/users", 403, json={**duplicate, "username": "x"})  # ...not users
    csi_api.fails("GET", "/users", 403)

    reader = {"username": "reader", "password": TENANT_PASSWORD, "role": "regular"}
    assert org_admin.ok("POST", "/users", json=reader)["role"] == "Regular"
    reader_api = Api.login(emulator, "reader", TENANT_PASSWORD, org=org["name"])
    assert [f["uid"] for f in reader_api.ok("GET", "/fileSystems")] == [fs["uid"]]
    reader_api.fails("DELETE", f"/fileSystems/{fs['uid']}", 403)

    bad_role = {"username": "y", "password": TENANT_PASSWORD, "role": "Wizard"}
    org_admin.fails("POST", "/users", 400, json=bad_role)
    cluster_admin = {"username": "y", "password": TENANT_PASSWORD, "role": "ClusterAdmin"}
    assert "Root" in org_admin.fails("POST", "/users", 400, json=cluster_admin)
    weak = {"username": "y", "password": "short", "role": "Regular"}
    org_admin.fails("POST", "/users", 400, json=weak)


def test_user_update_and_delete(emulator: Emulator, tenant: Tenant) -> None:
    org, org_admin = tenant()
    body = {"username": "bob", "password": TENANT_PASSWORD, "role": "ReadOnly"}
    bob = org_admin.ok("POST", "/users", json=body)
    promoted = org_admin.ok("PUT", f"/users/{bob['uid']}", json={"role": "OrgAdmin"})
    assert promoted["role"] == "OrgAdmin"
    new_password = "Another-Passw0rd"
    org_admin.ok("PUT", f"/users/{bob['uid']}/password", json={"password": new_password})
    # `weka user update` takes the role and posix ids: a password there is not taken.
    org_admin.ok("PUT", f"/users/{bob['uid']}", json={"password": new_password + "2"})
    login = {"username": "bob", "password": new_password + "2", "org": org["name"]}
    Api(emulator).fails("POST", "/login", 401, json=login)
    bob_api = Api.login(emulator, "bob", new_password, org=org["name"])
    org_admin.ok("DELETE", f"/users/{bob['uid']}/revoke")
    bob_api.fails("GET", "/users/whoami", 401)
    bob_api = Api.login(emulator, "bob", new_password, org=org["name"])

    me = org_admin.ok("GET", "/users/whoami")
    assert "themselves" in org_admin.fails("DELETE", f"/users/{me['uid']}", 400)
    org_admin.fails("PUT", f"/users/{me['uid']}", 400, json={"role": "Regular"})

    org_admin.ok("DELETE", f"/users/{bob['uid']}")
    bob_api.fails("GET", "/users/whoami", 401)  # a deleted user's sessions end
    org_admin.fails("DELETE", f"/users/{bob['uid']}", 404)
    org_admin.fails("PUT", f"/users/{bob['uid']}", 404, json={"role": "Regular"})


def test_users_are_scoped_to_their_organization(admin: Api, tenant: Tenant) -> None:
    _, org_admin = tenant()
    root_users = admin.ok("GET", "/users")
    assert all(u["org_id"] == 0 for u in root_users)
    admin_uid = next(u["uid"] for u in root_users if u["username"] == "admin")
    org_admin.fails("DELETE", f"/users/{admin_uid}", 404)


# --- protocol --------------------------------------------------------------------------------


def test_unknown_endpoints_methods_and_bodies(admin: Api) -> None:
    admin.fails("GET", "/noSuchThing", 404)
    admin.fails("PATCH", "/fileSystems", 405)
    reply = admin.call("POST", "/fileSystems", content=b"{not json")
    assert reply.status_code == 400
    assert "JSON" in reply.json()["message"]
    admin.fails("POST", "/fileSystems", 400, json=["a", "list"])


# --- persistence -----------------------------------------------------------------------------


def test_state_survives_kill_9_and_restart(tmp_path: Path) -> None:
    emulator = start_emulator(tmp_path)  # plain HTTP, and no password file yet
    try:
        assert stat.S_IMODE(emulator.password_file.stat().st_mode) == 0o600
        password = emulator.password_file.read_text().strip()
        admin = Api.login(emulator, "admin", password)
        org_body = {"name": "acme", "username": "boss", "password": TENANT_PASSWORD}
        org = admin.ok("POST", "/organizations", json=org_body)
        boss = Api.login(emulator, "boss", TENANT_PASSWORD, org="acme")
        fs = make_fs(boss, name="home", capacity="5TB")
        inode = mkdir(admin, fs["uid"], "/home/alice")
        assert (emulator.state_dir / "mounts" / "acme" / "home" / "home" / "alice").is_dir()
        limits = {"hard_limit_bytes": 10**9, "soft_limit_bytes": 10**9, "grace_seconds": 0}
        quota = boss.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{inode}", json=limits)
        snap = boss.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "s1"})
        state_file = emulator.state_dir / STATE_FILE
        assert stat.S_IMODE(state_file.stat().st_mode) == 0o600

        os.kill(emulator.process.pid, signal.SIGKILL)
        emulator.process.wait()
        emulator = start_emulator(tmp_path, port=emulator.port)

        # Tokens persist, so sessions survive a restart within their lifetime.
        boss.http = httpx.Client(base_url=emulator.base_url, timeout=10)
        admin.http = httpx.Client(base_url=emulator.base_url, timeout=10)
        assert admin.ok("GET", f"/organizations/{org['uid']}")["name"] == "acme"
        assert boss.ok("GET", f"/fileSystems/{fs['uid']}")["name"] == "home"
        assert boss.ok("GET", f"/fileSystems/{fs['uid']}/quota/{inode}") == quota
        assert boss.ok("GET", f"/snapshots/{snap['uid']}") == snap
        resolved = boss.ok(
            "GET", f"/fileSystems/{fs['uid']}/resolvePath", params={"path": "/home/alice"}
        )
        assert resolved["inode_id"] == inode
        Api.login(emulator, "admin", password)  # the password file is not regenerated
        assert emulator.password_file.read_text().strip() == password
    finally:
        stop_emulator(emulator)

    log = emulator.log.read_text()
    assert "weka POST /api/v2/login 200" in log
    for secret in (password, TENANT_PASSWORD, str(boss.token), str(admin.token)):
        assert secret not in log
    for path in tmp_path.rglob("*.json"):
        assert TENANT_PASSWORD not in path.read_text()
        assert str(boss.token) not in path.read_text()


def test_a_state_file_from_before_the_mounts_gets_its_directories_on_disk(tmp_path: Path) -> None:
    """Version 1 kept directories in the state only: the first start makes each of them real."""
    emulator = start_emulator(tmp_path)
    try:
        admin = Api.login(emulator, "admin", emulator.password_file.read_text().strip())
        fs = make_fs(admin, name="cluster-home")
        inode = mkdir(admin, fs["uid"], "/home/alice")
        quota = admin.ok("PUT", f"/fileSystems/{fs['uid']}/quota/{inode}", json=QUOTA)
    finally:
        stop_emulator(emulator)
    state_file = emulator.state_dir / STATE_FILE
    state = json.loads(state_file.read_text())
    state["version"] = 1
    state_file.write_text(json.dumps(state))
    shutil.rmtree(emulator.mount_root)

    emulator = start_emulator(tmp_path, port=emulator.port)
    try:
        assert (emulator.mount("Root", "cluster-home") / "home" / "alice").is_dir()
        admin.http = httpx.Client(base_url=emulator.base_url, timeout=10)
        assert resolve(admin, fs["uid"], "/home/alice") == inode
        assert admin.ok("GET", f"/fileSystems/{fs['uid']}/quota/{inode}") == quota
        assert json.loads(state_file.read_text())["version"] == STATE_VERSION
    finally:
        stop_emulator(emulator)


def test_snapshots_of_deleted_filesystems_from_an_older_state_are_dropped(
    tmp_path: Path,
) -> None:
    """Versions 1 and 2 kept a snapshot after its filesystem was deleted; none can exist now."""
    emulator = start_emulator(tmp_path)
    try:
        admin = Api.login(emulator, "admin", emulator.password_file.read_text().strip())
        fs = make_fs(admin, name="kept")
        snap = admin.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "s1"})
    finally:
        stop_emulator(emulator)
    state_file = emulator.state_dir / STATE_FILE
    state = json.loads(state_file.read_text())
    orphan = {
        **state["snapshots"][snap["uid"]],
        "uid": "orphan",
        "fs_uid": "gone",
        "fs_name": "gone",
        "name": "o",
    }
    state["snapshots"]["orphan"] = orphan
    state["version"] = 2
    state_file.write_text(json.dumps(state))

    emulator = start_emulator(tmp_path, port=emulator.port)
    try:
        admin.http = httpx.Client(base_url=emulator.base_url, timeout=10)
        assert [s["uid"] for s in admin.ok("GET", "/snapshots")] == [snap["uid"]]
        assert json.loads(state_file.read_text())["version"] == STATE_VERSION
        assert "dropped snapshots of deleted filesystems: gone/o" in emulator.log.read_text()
    finally:
        stop_emulator(emulator)


def test_background_work_is_unfinished_for_a_while_as_on_a_real_cluster(
    tmp_path: Path, gateway: Gateway
) -> None:
    """A filesystem is not usable until `is_ready`, a quota is ADDING before ACTIVE, an upload
    UPLOADING before SYNCHRONIZED, and the bucket does not answer for it until then."""
    emulator = start_emulator(tmp_path, object_store=gateway.env(), settle_seconds=1.5)
    try:
        admin = Api.login(emulator, "admin", emulator.password_file.read_text().strip())
        fs = make_fs(admin)
        assert (fs["is_ready"], fs["is_creating"], fs["status"]) == (False, True, "CREATING")
        resolve = f"/fileSystems/{fs['uid']}/resolvePath"
        assert "not ready yet" in admin.fails("GET", resolve, 400, params={"path": "/"})
        until_ready(admin, f"/fileSystems/{fs['uid']}", lambda f: f["is_ready"])
        inode = mkdir(admin, fs["uid"], "/alice")
        quota = f"/fileSystems/{fs['uid']}/quota/{inode}"
        assert admin.ok("PUT", quota, json=QUOTA)["status"] == "ADDING"
        until_ready(admin, quota, lambda q: q["status"] == "ACTIVE")
        attach(admin, fs["uid"])
        snap = admin.ok("POST", "/snapshots", json={"fs_uid": fs["uid"], "name": "s"})
        locator = admin.ok("POST", f"/snapshots/{snap['uid']}/upload", json={})["locator"]
        uploading = admin.ok("GET", f"/snapshots/{snap['uid']}")
        assert (uploading["locator"], uploading["stowStatus"]) == (locator, "UPLOADING")
        info = {"object_storage": OBS_BUCKET, "locator": locator}
        assert "not synchronized" in admin.fails("POST", "/snapshots/locatorInfo", 400, json=info)
        until_ready(admin, f"/snapshots/{snap['uid']}", lambda s: s["stowStatus"] == "SYNCHRONIZED")
        assert admin.ok("POST", "/snapshots/locatorInfo", json=info)["fs_name"] == fs["name"]
    finally:
        stop_emulator(emulator)


def until_ready(api: Api, path: str, done: Callable[[dict[str, Any]], bool]) -> None:
    """Polls `path` until `done`, as a client does; the emulator settles within seconds."""
    deadline = time.monotonic() + 10
    while not done(api.ok("GET", path)):
        assert time.monotonic() < deadline, f"{path} never finished"
        time.sleep(0.1)
