"""Records rendered as the Authentik 2024.10 serializers render them, field for field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sandbox.authentik.store import Group, Store, Token, User

# What Authentik answers with avatars set to "none"; the default ("gravatar,initials") would make
# every reply depend on the network or on an SVG renderer, for no value to the clients.
DEFAULT_AVATAR = "/static/dist/assets/images/user_default.png"


def timestamp(value: datetime | None) -> str | None:
    """DRF's DateTimeField output: ISO 8601 in UTC, with Z rather than +00:00."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def user_group(store: Store, group: Group) -> dict[str, Any]:
    """UserGroupSerializer: a user's groups, without their members."""
    parent = store.groups.get(group.parent) if group.parent else None
    return {
        "pk": group.uuid,
        "num_pk": group.num_pk,
        "name": group.name,
        "is_superuser": group.is_superuser,
        "parent": group.parent,
        "parent_name": parent.name if parent else None,
        "attributes": group.attributes,
    }


def user(store: Store, record: User, *, include_groups: bool = True) -> dict[str, Any]:
    """UserSerializer."""
    groups = store.groups_of(record)
    return {
        "pk": record.pk,
        "username": record.username,
        "name": record.name,
        "is_active": record.is_active,
        "last_login": timestamp(record.last_login),
        "is_superuser": store.is_superuser(record),
        "groups": [g.uuid for g in groups],
        "groups_obj": [user_group(store, g) for g in groups] if include_groups else None,
        "email": record.email,
        "avatar": DEFAULT_AVATAR,
        "attributes": record.attributes,
        "uid": store.user_uid(record),
        "path": record.path,
        "type": record.type,
        "uuid": record.uuid,
    }


def group_member(store: Store, record: User) -> dict[str, Any]:
    """GroupMemberSerializer: a group's users, trimmed."""
    return {
        "pk": record.pk,
        "username": record.username,
        "name": record.name,
        "is_active": record.is_active,
        "last_login": timestamp(record.last_login),
        "email": record.email,
        "attributes": record.attributes,
        "uid": store.user_uid(record),
    }


def group(store: Store, record: Group, *, include_users: bool = True) -> dict[str, Any]:
    """GroupSerializer."""
    members = store.members_of(record)
    return {
        **user_group(store, record),
        "users": [u.pk for u in members],
        "users_obj": [group_member(store, u) for u in members] if include_users else None,
        "roles": [],
        "roles_obj": [],
    }


def token(store: Store, record: Token) -> dict[str, Any]:
    """TokenSerializer (the key is only ever shown by view_key)."""
    return {
        "pk": record.uuid,
        "managed": record.managed,
        "identifier": record.identifier,
        "intent": record.intent,
        "user": record.user,
        "user_obj": user(store, store.users[record.user]),
        "description": record.description,
        "expires": timestamp(record.expires),
        "expiring": record.expiring,
    }


def user_self(store: Store, record: User) -> dict[str, Any]:
    """UserSelfSerializer, as `GET /core/users/me/` wraps it."""
    settings = record.attributes.get("settings", {})
    return {
        "pk": record.pk,
        "username": record.username,
        "name": record.name,
        "is_active": record.is_active,
        "is_superuser": store.is_superuser(record),
        "groups": [
            {"name": g.name, "pk": g.uuid}
            for g in sorted(store.all_groups(record), key=lambda g: g.name)
        ],
        "email": record.email,
        "avatar": DEFAULT_AVATAR,
        "uid": store.user_uid(record),
        "settings": settings if isinstance(settings, dict) else {},
        "type": record.type,
        # Permissions come from RBAC roles, which the emulator does not have.
        "system_permissions": [],
    }
