"""The LDIF the emulator writes into its LDAP server (sandbox/authentik/ldap_publisher.py):
applied for real in tests/contract/test_ldap_face.py; here, its order and its encoding."""

from __future__ import annotations

import base64

from sandbox.authentik.ldap_publisher import Directory, changes

BASE = "dc=auth,dc=example,dc=internal"
USERS = f"ou=users,{BASE}"
ALICE = f"cn=alice,{USERS}"
BOB = f"cn=bob,{USERS}"


def _directory(**users: dict[str, list[str]]) -> Directory:
    entries: Directory = {
        BASE: {"objectClass": ["top", "dcObject", "organization"], "dc": ["auth"], "o": ["auth"]},
        USERS: {"objectClass": ["top", "organizationalUnit"], "ou": ["users"]},
    }
    entries.update({f"cn={name},{USERS}": entry for name, entry in users.items()})
    return entries


def _records(ldif: str) -> list[list[str]]:
    return [record.splitlines() for record in ldif.strip().split("\n\n") if record]


def test_from_an_empty_server_the_base_comes_before_what_it_holds() -> None:
    new = _directory(alice={"cn": ["alice"], "uidNumber": ["2001"]})
    records = _records(changes(None, [], new))
    assert [r[0] for r in records] == [f"dn: {BASE}", f"dn: {USERS}", f"dn: {ALICE}"]
    assert all(r[1] == "changetype: add" for r in records)
    assert records[2][2:] == ["cn: alice", "uidNumber: 2001"]


def test_a_known_entry_changes_only_in_what_differs() -> None:
    old = _directory(alice={"cn": ["alice"], "ak-active": ["TRUE"], "memberOf": ["cn=g"]})
    new = _directory(alice={"cn": ["alice"], "ak-active": ["FALSE"]})
    assert _records(changes(old, [], new)) == [
        [f"dn: {ALICE}", "changetype: modify", "replace: ak-active", "ak-active: FALSE", "-",
         "delete: memberOf", "-"],
    ]  # fmt: skip
    assert changes(new, [], new) == ""


def test_a_gone_entry_is_deleted_before_anything_is_added() -> None:
    old = _directory(alice={"cn": ["alice"]})
    new = _directory(bob={"cn": ["bob"]})
    records = _records(changes(old, [], new))
    assert [r[:2] for r in records] == [
        [f"dn: {ALICE}", "changetype: delete"],
        [f"dn: {BOB}", "changetype: add"],
    ]


def test_after_a_restart_what_the_server_holds_is_written_again_but_its_containers() -> None:
    new = _directory(alice={"cn": ["alice"]})
    records = _records(changes(None, [BASE, USERS, ALICE, BOB], new))
    assert [r[:2] for r in records] == [
        [f"dn: {ALICE}", "changetype: delete"],
        [f"dn: {BOB}", "changetype: delete"],
        [f"dn: {ALICE}", "changetype: add"],
    ]


def test_a_value_ldif_cannot_carry_as_text_is_base64() -> None:
    name = "Zoë: ops\n"
    new = _directory(alice={"cn": ["alice"], "displayName": [name, " lead"]})
    lines = _records(changes(None, [], new))[2]
    assert f"displayName:: {base64.b64encode(name.encode()).decode()}" in lines
    assert f"displayName:: {base64.b64encode(b' lead').decode()}" in lines
