"""The Weka emulator as a sandbox service: HTTPS on Weka's port, with a sandbox CA certificate,
its filesystems as directories under a mount root, as on a host that mounts them all, and its
object store bucket in the retention store, where its snapshots are uploaded."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from sandbox.kubernetes.client import tls_context
from sandbox.pki import Pki
from sandbox.service import PYTHON, Service, source_revision
from sandbox.supervisor import SandboxError

PROJECT = Path(__file__).resolve().parents[2]


# How long the sandbox's cluster reports its background work unfinished (a new filesystem not
# ready, a quota ADDING, an upload UPLOADING): long enough that a client which does not wait
# fails (its next request follows at once), and under the client's first pause (0.25 s), so
# that one wait costs the tests one pause.
SETTLE_SECONDS = 0.1


def weka_url(port: int) -> str:
    return f"https://127.0.0.1:{port}/api/v2"


def admin_password_file(state_dir: Path) -> Path:
    return state_dir / "admin-password"


def weka_service(
    state_dir: Path,
    pki: Pki,
    port: int,
    mount_root: Path,
    object_store: Mapping[str, str] | None = None,
) -> Service:
    """`object_store` is the RETENTION_S3_* of the S3 store that holds the cluster's object
    store bucket (endpoint, bucket and the paths of the credential files, never a secret: the
    supervisor records a service's environment); without it the cluster has none."""

    def ready() -> bool:
        try:
            reply = httpx.get(
                f"{weka_url(port)}/healthcheck", verify=tls_context(pki.ca_cert), timeout=2
            )
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    def prepare() -> None:
        pki.ensure()
        state_dir.mkdir(parents=True, exist_ok=True)

    return Service(
        name="weka-emulator",
        argv=[
            PYTHON,
            "-m",
            "sandbox.weka",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--state-dir={state_dir}",
            f"--admin-password-file={admin_password_file(state_dir)}",
            f"--mount-root={mount_root}",
            f"--tls-cert={pki.cert('weka')}",
            f"--tls-key={pki.key('weka')}",
            f"--settle-seconds={SETTLE_SECONDS}",
        ],
        ports=(port,),
        env=dict(object_store or {}),
        cwd=PROJECT,
        prepare=prepare,
        # The emulator's own package, and the client it reaches its object store bucket with.
        revision=source_revision(Path(__file__).parent, PROJECT / "providers" / "retention"),
        ready=ready,
    )


def seed_root_filesystems(
    state_dir: Path, pki: Pki, port: int, group_name: str, capacities: Mapping[str, int]
) -> list[str]:
    """Creates the filesystems of Root named in `capacities` (bytes) that are missing, as the
    cluster admin, and waits until each is ready. Returns the names it created."""
    password = admin_password_file(state_dir).read_text(encoding="utf-8").strip()
    with httpx.Client(
        base_url=weka_url(port), verify=tls_context(pki.ca_cert), timeout=10
    ) as client:
        login = {"username": "admin", "password": password, "org": "Root"}
        tokens = _data(client.post("/login", json=login), "logging in as Root's admin")
        client.headers["Authorization"] = f"Bearer {tokens['access_token']}"
        created = []
        for name, capacity in capacities.items():
            doing = f"seeding the filesystem {name} in Root"
            if _data(client.get("/fileSystems", params={"name": name}), doing):
                continue
            body = {"name": name, "group_name": group_name, "total_capacity": capacity}
            _data(client.post("/fileSystems", json=body), doing)
            created.append(name)
        deadline = time.monotonic() + 30
        while not all(_data(client.get("/fileSystems", params={"name": n}), "")[0]["is_ready"]
                      for n in created):  # fmt: skip
            if time.monotonic() > deadline:
                raise SandboxError(f"weka-emulator: {', '.join(created)} never became ready")
            time.sleep(0.1)
        return created


def _data(reply: httpx.Response, doing: str) -> Any:
    if reply.status_code != 200:
        raise SandboxError(
            f"weka-emulator answered {reply.status_code} {doing} "
            f"({reply.request.method} {reply.request.url.path}): {reply.text}"
        )
    return reply.json()["data"]
