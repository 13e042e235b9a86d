"""The Weka part of the sandbox: the platform's shared filesystems seeded in Root, and every
filesystem a directory under WEKA_MOUNT_ROOT, where a plain mkdir makes what the API finds."""

from __future__ import annotations

import os
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox.kubernetes.client import tls_context
from sandbox.layout import PLATFORM_FILE, SandboxLayout
from tenant_stack.platform import load_platform

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

ROOT = Path(__file__).resolve().parents[2]
TB = 10**12


@pytest.fixture
def admin() -> Iterator[httpx.Client]:
    """The cluster admin, logged in to the sandbox's emulator as `make -s env` says how."""
    password = Path(os.environ["WEKA_PASSWORD_FILE"]).read_text().strip()
    verify = tls_context(Path(os.environ["WEKA_CA_FILE"]))
    with httpx.Client(base_url=os.environ["WEKA_URL"], verify=verify, timeout=10) as client:
        login = {"username": os.environ["WEKA_USERNAME"], "password": password, "org": "Root"}
        reply = client.post("/login", json=login)
        assert reply.status_code == 200, reply.text
        client.headers["Authorization"] = f"Bearer {reply.json()['data']['access_token']}"
        yield client


def data(reply: httpx.Response) -> Any:
    assert reply.status_code == 200, f"{reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json()["data"]


def shared_filesystems() -> dict[str, int]:
    weka = load_platform(PLATFORM_FILE).weka
    return {weka.shared_home_filesystem: 100 * TB, weka.shared_scratch_filesystem: 400 * TB}


def test_the_shared_filesystems_are_seeded_in_root(admin: httpx.Client) -> None:
    group = load_platform(PLATFORM_FILE).weka.filesystem_group
    for name, capacity in shared_filesystems().items():
        [fs] = data(admin.get("/fileSystems", params={"name": name}))
        assert (fs["total_budget"], fs["group_name"]) == (capacity, group), name


def test_seeding_again_creates_nothing(sandbox: SandboxLayout) -> None:
    assert sandbox.seed_weka() == []


def test_the_shared_filesystems_are_root_owned_directories_under_the_mount_root() -> None:
    mount_root = Path(os.environ["WEKA_MOUNT_ROOT"])
    for name in shared_filesystems():
        mount = (mount_root / "Root" / name).stat()
        assert stat.S_ISDIR(mount.st_mode), name
        assert stat.S_IMODE(mount.st_mode) == 0o755, name
        assert (mount.st_uid, mount.st_gid) == (0, 0), name


def test_a_directory_made_on_the_mount_is_found_by_the_api(admin: httpx.Client) -> None:
    name = next(iter(shared_filesystems()))
    [fs] = data(admin.get("/fileSystems", params={"name": name}))
    directory = f"sbx-{uuid.uuid4().hex[:8]}"
    path = Path(os.environ["WEKA_MOUNT_ROOT"]) / "Root" / name / directory
    resolve = f"/fileSystems/{fs['uid']}/resolvePath"
    path.mkdir()
    try:
        found = data(admin.get(resolve, params={"path": f"/{directory}"}))
        assert found["path"] == f"/{directory}"
    finally:
        path.rmdir()
    gone = admin.get(resolve, params={"path": f"/{directory}"})
    assert (gone.status_code, gone.json()["message"][:15]) == (400, "PATH_NOT_FOUND:")


def test_make_env_exports_the_mount_root(sandbox: SandboxLayout) -> None:
    printed = subprocess.run(
        ["make", "-s", "env"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert f"export WEKA_MOUNT_ROOT='{sandbox.weka_mount_root}'" in printed
    assert "export WEKA_MOUNT_TRANSPORT='local'" in printed
    assert os.environ["WEKA_MOUNT_ROOT"] == str(sandbox.weka_mount_root)
