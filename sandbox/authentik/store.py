"""The emulator's state (users, groups, memberships, tokens) and its persistence.

The whole state is one JSON file, rewritten atomically after every mutation, so a process killed at
any moment restarts with either the old or the new state, never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sandbox.state_file import write_json_atomically

STATE_FILE = "authentik-state.json"
FORMAT_VERSION = 1


@dataclass
class User:
    pk: int
    uuid: str
    username: str
    name: str
    email: str = ""
    is_active: bool = True
    last_login: datetime | None = None
    path: str = "users"
    type: str = "internal"
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    uuid: str
    name: str
    is_superuser: bool = False
    parent: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def num_pk(self) -> int:
        # Authentik derives it from the UUID (first five digits of its integer form), not from a
        # counter, so two groups can share one: that is what makes gidNumber collisions possible.
        return int(str(uuid.UUID(self.uuid).int)[:5])


@dataclass
class Token:
    uuid: str
    identifier: str
    key: str
    user: int
    expires: datetime | None
    intent: str = "api"
    description: str = ""
    expiring: bool = True
    managed: str | None = None


@dataclass
class Event:
    """An audit event. `user` is a copy of who acted (pk, username, email), not a foreign key:
    deleting the user leaves the event as it was, as in Authentik."""

    pk: str
    action: str
    user: dict[str, Any]
    client_ip: str | None
    created: datetime
    expires: datetime
    app: str = "authentik.events.signals"
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class Session:
    """An authenticated session of a user (a foreign key with on_delete=CASCADE)."""

    uuid: str
    user: int
    last_ip: str
    last_user_agent: str
    last_used: datetime
    expires: datetime


def _dt_out(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _dt_in(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


class Store:
    """All records, in creation order (which is also what an unordered Postgres scan returns)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Held for a whole request: the emulator serialises requests, as one database would.
        self.lock = threading.RLock()
        self.install_id = str(uuid.uuid4())
        self.next_user_pk = 1
        self.clock_offset = 0.0
        self.users: dict[int, User] = {}
        self.groups: dict[str, Group] = {}
        self.tokens: dict[str, Token] = {}
        # (user pk, group uuid) in insertion order, like the rows of Django's M2M table.
        self.memberships: list[tuple[int, str]] = []
        self.events: dict[str, Event] = {}
        self.sessions: dict[str, Session] = {}

    # persistence

    @classmethod
    def open(cls, state_dir: Path) -> Store:
        state_dir.mkdir(parents=True, exist_ok=True)
        store = cls(state_dir / STATE_FILE)
        if store.path.exists():
            store._load(json.loads(store.path.read_text()))
        return store

    def _load(self, data: dict[str, Any]) -> None:
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: unknown state format {data.get('format')!r}")
        self.install_id = data["install_id"]
        self.next_user_pk = data["next_user_pk"]
        self.clock_offset = data["clock_offset"]
        for raw in data["users"]:
            user = User(**{**raw, "last_login": _dt_in(raw["last_login"])})
            self.users[user.pk] = user
        for raw in data["groups"]:
            group = Group(**raw)
            self.groups[group.uuid] = group
        for raw in data["tokens"]:
            token = Token(**{**raw, "expires": _dt_in(raw["expires"])})
            self.tokens[token.uuid] = token
        self.memberships = [(pk, group) for pk, group in data["memberships"]]
        # Absent from the states written before the emulator kept events and sessions.
        for raw in data.get("events", []):
            event = Event(
                **{**raw, "created": _dt_in(raw["created"]), "expires": _dt_in(raw["expires"])}
            )
            self.events[event.pk] = event
        for raw in data.get("sessions", []):
            times = {k: _dt_in(raw[k]) for k in ("last_used", "expires")}
            session = Session(**{**raw, **times})
            self.sessions[session.uuid] = session

    def _dump(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "install_id": self.install_id,
            "next_user_pk": self.next_user_pk,
            "clock_offset": self.clock_offset,
            "users": [
                {**vars(u), "last_login": _dt_out(u.last_login)} for u in self.users.values()
            ],
            "groups": [dict(vars(g)) for g in self.groups.values()],
            "tokens": [{**vars(t), "expires": _dt_out(t.expires)} for t in self.tokens.values()],
            "memberships": [list(m) for m in self.memberships],
            "events": [
                {**vars(e), "created": _dt_out(e.created), "expires": _dt_out(e.expires)}
                for e in self.events.values()
            ],
            "sessions": [
                {**vars(s), "last_used": _dt_out(s.last_used), "expires": _dt_out(s.expires)}
                for s in self.sessions.values()
            ],
        }

    def save(self) -> None:
        write_json_atomically(self.path, self._dump())

    # time (tests move it forward to expire tokens without waiting)

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.clock_offset)

    # users

    def add_user(self, **fields: Any) -> User:
        user = User(pk=self.next_user_pk, uuid=str(uuid.uuid4()), **fields)
        self.next_user_pk += 1  # a sequence: pks are never reused, even after a delete
        self.users[user.pk] = user
        return user

    def user_uid(self, user: User) -> str:
        # Authentik's uid is sha256("{pk}-{install id}"): stable per installation, opaque outside.
        return hashlib.sha256(f"{user.pk}-{self.install_id}".encode("ascii")).hexdigest()

    def user_by_username(self, username: str) -> User | None:
        return next((u for u in self.users.values() if u.username == username), None)

    def delete_user(self, pk: int) -> None:
        del self.users[pk]
        self.memberships = [m for m in self.memberships if m[0] != pk]
        # Token.user and AuthenticatedSession.user are foreign keys with on_delete=CASCADE.
        self.tokens = {k: t for k, t in self.tokens.items() if t.user != pk}
        self.sessions = {k: s for k, s in self.sessions.items() if s.user != pk}

    # groups

    def add_group(self, **fields: Any) -> Group:
        group = Group(uuid=str(uuid.uuid4()), **fields)
        self.groups[group.uuid] = group
        return group

    def group_by_name(self, name: str) -> Group | None:
        return next((g for g in self.groups.values() if g.name == name), None)

    def delete_group(self, group_uuid: str) -> None:
        del self.groups[group_uuid]
        self.memberships = [m for m in self.memberships if m[1] != group_uuid]
        # Group.parent is a foreign key with on_delete=SET_NULL: children become top-level groups.
        for child in self.groups.values():
            if child.parent == group_uuid:
                child.parent = None

    def ancestors(self, group: Group) -> list[Group]:
        found: list[Group] = []
        parent = group.parent
        while parent is not None and parent in self.groups and parent != group.uuid:
            ancestor = self.groups[parent]
            if any(a.uuid == ancestor.uuid for a in found):  # the API only forbids 1-cycles
                break
            found.append(ancestor)
            parent = ancestor.parent
        return found

    # memberships

    def groups_of(self, user: User) -> list[Group]:
        return [self.groups[g] for pk, g in self.memberships if pk == user.pk]

    def members_of(self, group: Group) -> list[User]:
        return [self.users[pk] for pk, g in self.memberships if g == group.uuid]

    def add_member(self, group: Group, user: User) -> None:
        if (user.pk, group.uuid) not in self.memberships:
            self.memberships.append((user.pk, group.uuid))

    def remove_member(self, group: Group, user: User) -> None:
        self.memberships = [m for m in self.memberships if m != (user.pk, group.uuid)]

    def set_members(self, group: Group, users: list[User]) -> None:
        wanted = {u.pk for u in users}
        self.memberships = [m for m in self.memberships if m[1] != group.uuid or m[0] in wanted]
        for user in users:
            self.add_member(group, user)

    def set_groups(self, user: User, groups: list[Group]) -> None:
        wanted = {g.uuid for g in groups}
        self.memberships = [m for m in self.memberships if m[0] != user.pk or m[1] in wanted]
        for group in groups:
            self.add_member(group, user)

    def all_groups(self, user: User) -> list[Group]:
        """Direct groups and their ancestors, as User.all_groups() in Authentik."""
        found: list[Group] = []
        for group in self.groups_of(user):
            for g in [group, *self.ancestors(group)]:
                if g not in found:
                    found.append(g)
        return found

    def is_superuser(self, user: User) -> bool:
        return any(g.is_superuser for g in self.all_groups(user))

    # what a login leaves: an event and a session

    def record_login(self, user: User, client_ip: str, user_agent: str) -> tuple[Event, Session]:
        now = self.now()
        user.last_login = now
        event = Event(
            pk=str(uuid.uuid4()),
            action="login",
            user={"pk": user.pk, "email": user.email, "username": user.username},
            client_ip=client_ip,
            created=now,
            # Authentik keeps events a year by default (the brand's event retention).
            expires=now + timedelta(days=365),
            context={"auth_method": "password", "http_request": {"user_agent": user_agent}},
        )
        session = Session(
            uuid=str(uuid.uuid4()),
            user=user.pk,
            last_ip=client_ip,
            last_user_agent=user_agent,
            last_used=now,
            expires=now + timedelta(days=1),
        )
        self.events[event.pk] = event
        self.sessions[session.uuid] = session
        return event, session

    # tokens

    def token_by_identifier(self, identifier: str) -> Token | None:
        return next((t for t in self.tokens.values() if t.identifier == identifier), None)

    def add_token(self, **fields: Any) -> Token:
        token = Token(uuid=str(uuid.uuid4()), **fields)
        self.tokens[token.uuid] = token
        return token
