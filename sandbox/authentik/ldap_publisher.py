"""What the outpost publishes (`sandbox.authentik.ldap_numbering`), written into the LDAP server
(`sandbox.authentik.ldap_server`) after every change the emulator saves, as the outpost would
answer a search made after it.

The server holds what its schema allows: attributes the outpost takes from free-form user and
group attributes (ssh_keys and the like: names LDAP may not even allow) are left out, as are the
object classes slapd cannot hold together with the others (`goauthentik.io/...`, whose names are
no LDAP names, and groupOfNames/groupOfUniqueNames, a second structural class beside posixGroup).
Everything a client of the outpost resolves users and groups by is there: cn, uid, uidNumber,
gidNumber, homeDirectory, member and memberOf, and ak-active.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable

from sandbox.authentik.ldap_numbering import (
    Entry,
    LdapSettings,
    group_entry,
    user_entry,
    virtual_group_entry,
)
from sandbox.authentik.store import Store

Directory = dict[str, Entry]

USER_ATTRIBUTES = (
    "objectClass", "cn", "sn", "uid", "name", "displayName", "mail", "uidNumber", "gidNumber",
    "homeDirectory", "loginShell", "gecos", "memberOf", "ak-active", "ak-superuser",
    "sAMAccountName",
)  # fmt: skip
GROUP_ATTRIBUTES = (
    "objectClass", "cn", "uid", "gidNumber", "member", "ak-superuser", "sAMAccountName",
)  # fmt: skip
USER_CLASSES = ("top", "person", "organizationalPerson", "inetOrgPerson", "posixAccount", "user")
GROUP_CLASSES = ("top", "posixGroup", "group")
_CONTAINERS = ("users", "groups", "virtual-groups")
_UNSAFE = re.compile(r"[\x00\n\r]|^[ :<]| $|[^\x00-\x7f]")


def _held(entry: Entry, attributes: tuple[str, ...], classes: tuple[str, ...]) -> Entry:
    """`entry` as far as the server's schema holds it; no attribute without values."""
    names = {name.lower(): name for name in attributes}
    held: Entry = {}
    for name, values in entry.items():
        known = names.get(name.lower())
        kept = [v for v in values if v != ""]
        if known is not None and kept:
            held[known] = kept
    held["objectClass"] = [c for c in classes if c in entry.get("objectClass", []) or c == "top"]
    return held


def ssha(password: str) -> str:
    """`password` as slapd checks it (a salted SHA-1 userPassword), never in clear."""
    salt = secrets.token_bytes(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def _rdn(dn: str) -> tuple[str, str]:
    name, _, value = dn.split(",", 1)[0].partition("=")
    return name.strip(), value.strip()


def _base_entry(base_dn: str) -> Entry:
    name, value = _rdn(base_dn)
    if name.lower() != "dc":
        raise ValueError(f"base DN {base_dn!r}: the sandbox's LDAP server wants one under dc=")
    return {"objectClass": ["top", "dcObject", "organization"], "dc": [value], "o": [value]}


def directory(
    store: Store, settings: LdapSettings, bind_dn: str, bind_password_hash: str
) -> Directory:
    """Every entry the server should hold, by DN: the base, its three containers, the outpost's
    bind account (with its password as `ssha` gives it), each user, each user's group of one,
    and each group."""
    base = settings.base_dn
    entries: Directory = {base: _base_entry(base)}
    for container in _CONTAINERS:
        entries[f"ou={container},{base}"] = {
            "objectClass": ["top", "organizationalUnit"],
            "ou": [container],
        }
    for user in store.users.values():
        entry = _held(user_entry(store, settings, user), USER_ATTRIBUTES, USER_CLASSES)
        # person needs a surname, which a user without a name would not give.
        entry.setdefault("sn", [user.username])
        entries[settings.user_dn(user.username)] = entry
        virtual = virtual_group_entry(store, settings, user)
        entries[settings.virtual_group_dn(user.username)] = _held(
            virtual, GROUP_ATTRIBUTES, GROUP_CLASSES
        )
    for group in store.groups.values():
        entry = group_entry(store, settings, group)
        entries[settings.group_dn(group.name)] = _held(entry, GROUP_ATTRIBUTES, GROUP_CLASSES)
    # The bind account is an Authentik user (`bind_account`): its entry also carries the
    # password slapd checks, which the outpost checks against Authentik instead.
    bind_name = _rdn(bind_dn)[1]
    bind_entry = entries.setdefault(
        bind_dn, {"objectClass": ["top", "person"], "cn": [bind_name], "sn": [bind_name]}
    )
    bind_entry["userPassword"] = [bind_password_hash]
    return entries


def bind_account(store: Store, settings: LdapSettings, bind_dn: str) -> None:
    """Makes the outpost's bind account, as the platform did, if missing: a service account
    named by `bind_dn`'s cn, which therefore no tenant's spec can take (the product refuses to
    adopt a service account). Its numbers are pinned below the outpost's start numbers, where
    no spec may pin one: numbered by its pk, it could take a number a tenant's user has."""
    name = _rdn(bind_dn)[1]
    if settings.user_dn(name) != bind_dn:
        raise ValueError(f"bind DN {bind_dn!r} is not a user's DN under {settings.base_dn!r}")
    if store.user_by_username(name) is None:
        number = str(min(settings.uid_start_number, settings.gid_start_number) - 1)
        store.add_user(
            username=name,
            name="LDAP outpost bind",
            type="service_account",
            attributes={"uidNumber": number, "gidNumber": number},
        )
        store.save()


def _line(name: str, value: str) -> str:
    if _UNSAFE.search(value):
        return f"{name}:: {base64.b64encode(value.encode()).decode()}"
    return f"{name}: {value}"


def _depth(dn: str) -> int:
    return dn.count(",")


def changes(old: Directory | None, existing: list[str], new: Directory) -> str:
    """LDIF taking the server from `old` (what was last written; None when unknown, and then
    `existing` lists the DNs it holds) to `new`: deletes deepest first, then adds and
    modifications shallowest first. An entry of unknown content is deleted and added again;
    the base and its containers, which never change, are left as they are."""
    if old is None:
        top = min(map(_depth, new))
        containers = {dn for dn in new if _depth(dn) <= top + 1}
        old = {dn: {} for dn in existing if dn not in containers}
        old.update({dn: new[dn] for dn in existing if dn in containers})
        stale = set(old) - containers
    else:
        stale = set()
    records: list[str] = []
    for dn in sorted(set(old) - set(new) | stale, key=lambda dn: (-_depth(dn), dn)):
        records.append(f"{_line('dn', dn)}\nchangetype: delete\n")
    for dn in sorted(new, key=_depth):
        entry = new[dn]
        if dn not in old or dn in stale:
            lines = [_line(name, v) for name, values in entry.items() for v in values]
            records.append("\n".join([_line("dn", dn), "changetype: add", *lines]) + "\n")
            continue
        before = old[dn]
        if before == entry:
            continue
        parts = [_line("dn", dn), "changetype: modify"]
        for name, values in entry.items():
            if before.get(name) != values:
                parts += [f"replace: {name}", *(_line(name, v) for v in values), "-"]
        for name in before.keys() - entry.keys():
            parts += [f"delete: {name}", "-"]
        records.append("\n".join(parts) + "\n")
    return "\n".join(records)


def _run(tool: str, url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool, "-Q", "-Y", "EXTERNAL", "-H", url, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


class Publisher:
    """Writes `compute()` into the server at `url` whenever `changed()` is called, from a thread
    of its own; a write that fails is tried again, from what the server holds, after a pause."""

    def __init__(self, url: str, base_dn: str, compute: Callable[[], Directory]) -> None:
        self.url = url
        self.base_dn = base_dn
        self.compute = compute
        self._wake = threading.Event()
        self._written: Directory | None = None

    def start(self) -> None:
        self._wake.set()
        threading.Thread(target=self._loop, name="ldap-publisher", daemon=True).start()

    def changed(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        pause = 1.0
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._publish():
                pause = 1.0
                continue
            # The server may be starting or restarting: try again, but not in a tight loop.
            self._wake.wait(pause)
            self._wake.set()
            pause = min(pause * 2, 30.0)

    def _existing(self) -> list[str] | None:
        found = _run(
            "ldapsearch", self.url, "-LLL", "-o", "ldif-wrap=no", "-b", self.base_dn, "1.1"
        )
        if found.returncode == 32:  # noSuchObject: an empty server, not even the base
            return []
        if found.returncode != 0:
            self._log(f"reading the LDAP server failed: {found.stderr.strip()}")
            return None
        dns = []
        for line in found.stdout.splitlines():
            if line.startswith("dn:: "):
                dns.append(base64.b64decode(line[5:]).decode())
            elif line.startswith("dn: "):
                dns.append(line[4:])
        return dns

    def _publish(self) -> bool:
        new = self.compute()
        existing: list[str] = []
        if self._written is None:
            found = self._existing()
            if found is None:
                return False
            existing = found
        ldif = changes(self._written, existing, new)
        if not ldif:
            return True
        result = _run("ldapmodify", self.url, "-c", stdin=ldif)
        if result.returncode != 0:
            self._written = None
            self._log(f"writing to the LDAP server failed: {result.stderr.strip()}")
            return False
        self._written = new
        return True

    @staticmethod
    def _log(message: str) -> None:
        print(f"ldap-publisher: {message}", file=sys.stderr, flush=True)
