"""The Authentik emulator as a sandbox service."""

from __future__ import annotations

from pathlib import Path

import httpx

from sandbox.authentik.ldap_server import LdapServer
from sandbox.service import PYTHON, Service, source_revision


def authentik_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def token_file(state_dir: Path) -> Path:
    return state_dir / "bootstrap-token"


def authentik_service(state_dir: Path, port: int, ldap: LdapServer) -> Service:
    """The emulator, publishing what its outpost would into `ldap` (started before it)."""

    def ready() -> bool:
        try:
            reply = httpx.get(f"{authentik_url(port)}/api/v3/root/config/", timeout=2)
        except httpx.HTTPError:
            return False
        return reply.status_code == 200

    return Service(
        name="authentik-emulator",
        argv=[
            PYTHON,
            "-m",
            "sandbox.authentik",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--state-dir={state_dir}",
            f"--bootstrap-token-file={token_file(state_dir)}",
            f"--ldap-base-dn={ldap.base_dn}",
            f"--ldap-url={ldap.local_url}",
            f"--ldap-bind-dn={ldap.bind_dn}",
            f"--ldap-bind-password-file={ldap.bind_password_file}",
        ],
        ports=(port,),
        cwd=Path(__file__).resolve().parents[2],
        prepare=lambda: state_dir.mkdir(parents=True, exist_ok=True),
        revision=source_revision(Path(__file__).parent),
        ready=ready,
    )


def seed_parent_group(state_dir: Path, port: int, name: str = "tenants") -> bool:
    """Creates the group every tenant's group sits under, as the runbook assumes it exists.
    Returns whether it had to."""
    token = token_file(state_dir).read_text().strip()
    with httpx.Client(
        base_url=f"{authentik_url(port)}/api/v3",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    ) as client:
        found = client.get("/core/groups/", params={"name": name})
        found.raise_for_status()
        if found.json()["results"]:
            return False
        client.post("/core/groups/", json={"name": name}).raise_for_status()
        return True
