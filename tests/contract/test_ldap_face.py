"""The Authentik emulator's LDAP face: a real slapd (sandbox/authentik/ldap_server.py) that the
emulator writes what its outpost would publish into, read here over ldaps as the outpost's bind
account, with Debian's ldapsearch, as nslcd would."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from providers.authentik.client import AuthentikClient
from sandbox.authentik.ldap_server import LdapServer
from sandbox.pki import Pki
from sandbox.supervisor import Supervisor
from tests.contract.conftest_authentik import Emulator
from tests.isolated import free_port

BASE = "dc=auth,dc=example,dc=internal"
BIND = f"cn=ldap-bind,ou=users,{BASE}"
PUBLISHED_WITHIN = 10.0

Entries = dict[str, dict[str, list[str]]]


@dataclass
class Face:
    server: LdapServer
    emulator: Emulator

    def search(self, query: str, *, dn: str = BIND, password: str | None = None) -> Entries:
        """What `query` finds under the base, read over ldaps as `dn`."""
        found = subprocess.run(
            [
                "ldapsearch", "-LLL", "-o", "ldif-wrap=no", "-H",
                f"ldaps://127.0.0.1:{self.server.port}", "-D", dn,
                "-w", self.server.bind_password() if password is None else password,
                "-b", BASE, query,
            ],
            env={**os.environ, "LDAPTLS_CACERT": str(self.server.pki.ca_cert)},
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        if found.returncode != 0:
            raise LdapRefusedError(found.returncode, found.stderr.strip())
        entries: Entries = {}
        for block in found.stdout.strip().split("\n\n"):
            lines = [line.split(": ", 1) for line in block.splitlines() if ": " in line]
            if lines:
                attributes: dict[str, list[str]] = {}
                for name, value in lines[1:]:
                    attributes.setdefault(name, []).append(value)
                entries[lines[0][1]] = attributes
        return entries

    def until(self, query: str, holds: Any) -> Entries:
        """The first answer to `query` for which `holds(answer)` is true: the emulator publishes
        from a thread of its own, just after its reply."""
        deadline = time.monotonic() + PUBLISHED_WITHIN
        while True:
            found = self.search(query)
            if holds(found) or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


class LdapRefusedError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"ldapsearch exited {code}: {message}")
        self.code = code


@pytest.fixture(scope="module")
def face(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Face]:
    root = tmp_path_factory.mktemp("ldap")
    server = LdapServer(root / "ldap", Pki(root / "pki"), free_port(), BASE, BIND)
    supervisor = Supervisor(root)
    service = server.service(["authentik-ldap-outpost.auth.svc"])
    supervisor.start(service)
    emulator = Emulator(
        root,
        options=(
            f"--ldap-base-dn={BASE}",
            f"--ldap-url={server.local_url}",
            f"--ldap-bind-dn={BIND}",
            f"--ldap-bind-password-file={server.bind_password_file}",
        ),
    )
    emulator.start()
    try:
        yield Face(server, emulator)
    finally:
        emulator.stop()
        supervisor.stop(service)


@pytest.fixture
def api(face: Face) -> Iterator[httpx.Client]:
    with face.emulator.client() as client:
        yield client


def _user(api: httpx.Client, username: str, uid: str) -> int:
    reply = api.post(
        "/core/users/",
        json={
            "username": username,
            "name": f"{username.title()} Example",
            "attributes": {"uidNumber": uid, "gidNumber": uid, "ssh_keys": "ssh-ed25519 AAAA k"},
        },
    )
    reply.raise_for_status()
    return int(reply.json()["pk"])


def _group(api: httpx.Client, name: str, gid: str) -> str:
    reply = api.post("/core/groups/", json={"name": name, "attributes": {"gidNumber": gid}})
    reply.raise_for_status()
    return str(reply.json()["pk"])


def _member(
    face: Face, api: httpx.Client, username: str, uid: str, group_name: str, gid: str
) -> tuple[int, str]:
    """A user in a group, made through the API and waited for until LDAP has the membership;
    the user's pk and the group's."""
    pk = _user(api, username, uid)
    group = _group(api, group_name, gid)
    api.post(f"/core/groups/{group}/add_user/", json={"pk": pk}).raise_for_status()
    group_dn = f"cn={group_name},ou=groups,{BASE}"
    face.until(f"(cn={group_name})", lambda f: "member" in f.get(group_dn, {}))
    return pk, group


def test_a_user_and_a_group_are_published_as_nslcd_reads_them(
    face: Face, api: httpx.Client
) -> None:
    _member(face, api, "ada", "2301", "tenant-ada", "5301")

    group_dn = f"cn=tenant-ada,ou=groups,{BASE}"
    found = face.search("(|(cn=ada)(cn=tenant-ada))")
    user = found[f"cn=ada,ou=users,{BASE}"]
    assert user["uidNumber"] == ["2301"]
    assert user["gidNumber"] == ["2301"]
    assert user["homeDirectory"] == ["/home/ada"]
    assert user["ak-active"] == ["TRUE"]
    assert user["memberOf"] == [f"cn=tenant-ada,ou=groups,{BASE}"]
    assert "posixAccount" in user["objectClass"]
    # The outpost's uid is Authentik's hashed uid, not the username: nslcd maps the name to cn.
    assert user["uid"] != ["ada"]
    assert len(user["uid"][0]) == 64
    # A free-form attribute whose name LDAP does not allow is not held (module docstring).
    assert "ssh_keys" not in user
    assert found[f"cn=ada,ou=virtual-groups,{BASE}"]["gidNumber"] == ["2301"]
    group_entry = found[group_dn]
    assert group_entry["gidNumber"] == ["5301"]
    assert group_entry["member"] == [f"cn=ada,ou=users,{BASE}"]
    assert "posixGroup" in group_entry["objectClass"]


def test_a_disabled_user_still_resolves_and_a_removed_member_leaves_the_group(
    face: Face, api: httpx.Client
) -> None:
    pk, group = _member(face, api, "bea", "2302", "tenant-bea", "5302")
    group_dn = f"cn=tenant-bea,ou=groups,{BASE}"

    api.patch(f"/core/users/{pk}/", json={"is_active": False}).raise_for_status()
    api.post(f"/core/groups/{group}/remove_user/", json={"pk": pk}).raise_for_status()

    found = face.until("(|(cn=bea)(cn=tenant-bea))", lambda f: "member" not in f[group_dn])
    assert found[f"cn=bea,ou=users,{BASE}"]["ak-active"] == ["FALSE"]
    assert found[f"cn=bea,ou=users,{BASE}"]["uidNumber"] == ["2302"]
    assert "member" not in found[group_dn]

    api.delete(f"/core/users/{pk}/").raise_for_status()
    assert face.until("(cn=bea)", lambda f: not f) == {}


def test_only_the_bind_account_reads(face: Face, api: httpx.Client) -> None:
    _user(api, "cid", "2303")
    assert face.until("(cn=cid)", bool)
    with pytest.raises(LdapRefusedError):
        face.search("(cn=cid)", password="not-the-password")
    with pytest.raises(LdapRefusedError):
        face.search("(cn=cid)", dn="", password="")


def test_a_restarted_emulator_puts_back_what_was_changed_behind_its_back(
    face: Face, api: httpx.Client
) -> None:
    _user(api, "dee", "2304")
    assert face.until("(cn=dee)", bool)
    face.emulator.kill()
    subprocess.run(
        ["ldapdelete", "-Q", "-Y", "EXTERNAL", "-H", face.server.local_url,
         f"cn=dee,ou=users,{BASE}"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    subprocess.run(
        ["ldapadd", "-Q", "-Y", "EXTERNAL", "-H", face.server.local_url],
        input=f"dn: cn=stray,ou=groups,{BASE}\nobjectClass: posixGroup\ncn: stray\n"
        "gidNumber: 9999\n",
        text=True, check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    query = "(|(&(objectClass=posixAccount)(cn=dee))(cn=stray))"
    assert face.search(query).keys() == {f"cn=stray,ou=groups,{BASE}"}

    face.emulator.start()

    user_dn = f"cn=dee,ou=users,{BASE}"
    found = face.until(query, lambda f: f.keys() == {user_dn})
    assert found.keys() == {user_dn}
    assert found[user_dn]["uidNumber"] == ["2304"]


def test_the_bind_account_is_an_authentik_service_account_no_tenant_may_adopt(
    face: Face, api: httpx.Client
) -> None:
    """As on the platform, the outpost binds as an Authentik user: a spec naming a user
    `ldap-bind` finds it taken and is refused (a service account is never adopted), rather than
    taking over the account every login pod binds with."""
    (account,) = api.get("/core/users/", params={"username": "ldap-bind"}).json()["results"]
    assert account["type"] == "service_account"
    with AuthentikClient(base_url=face.emulator.url, token=face.emulator.key) as client:
        found = client.find_user("ldap-bind")
    assert found is not None
    assert found.never_adopted(set(), {}) == "is a service account (type service_account)"
    entry = face.search("(cn=ldap-bind)")[BIND]
    assert "posixAccount" in entry["objectClass"]
    # Below the outpost's start numbers, where no spec may pin one.
    assert entry["uidNumber"] == ["1999"]
