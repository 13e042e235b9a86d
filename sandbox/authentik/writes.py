"""Create and update bodies, validated as the Authentik 2024.10 serializers validate them.

Each `*_fields` function describes the writable fields in serializer order (the order DRF reports
errors in); each `write_*` function validates a body, raises the 400 DRF would, and applies it.
"""

from __future__ import annotations

import secrets
import string
from datetime import timedelta
from typing import Any

from sandbox.authentik import fields as f
from sandbox.authentik.errors import field_errors
from sandbox.authentik.store import Group, Store, Token, User

USER_TYPES = ("internal", "external", "service_account", "internal_service_account")
TOKEN_INTENTS = ("verification", "api", "recovery", "app_password")
# default_token_duration: what every API token's `expires` is forced to.
TOKEN_DURATION = timedelta(minutes=30)
TOKEN_EXPIRES_ATTRIBUTE = "goauthentik.io/user/token-expires"


def _unique(name: str, taken: bool) -> str:
    if taken:
        raise f.FieldError(f.UNIQUE)
    return name


def _group_ref(store: Store, value: Any) -> Group:
    group = store.groups.get(f.uuid_pk(value))
    if group is None:
        raise f.does_not_exist(value)
    return group


def _user_ref(store: Store, value: Any) -> User:
    user = store.users.get(f.int_pk(value))
    if user is None:
        raise f.does_not_exist(value)
    return user


def _user_path(value: Any) -> str:
    path = f.string(value)
    if path[:1] == "/" or path[-1:] == "/":
        raise f.FieldError("No leading or trailing slashes allowed.")
    if "" in path.split("/"):
        raise f.FieldError("No empty segments in user path allowed.")
    return path


def _run(body: Any, spec: dict[str, f.Field], *, partial: bool) -> dict[str, Any]:
    try:
        values, errors = f.parse_body(body, spec, partial=partial)
    except f.FieldError as exc:
        raise field_errors({"non_field_errors": exc.messages}) from None
    if errors:
        raise field_errors(errors)
    return values


# users


def _user_fields(store: Store, instance: User | None) -> dict[str, f.Field]:
    def username(value: Any) -> str:
        name = f.string(value, max_length=150)
        other = store.user_by_username(name)
        return _unique(name, other is not None and other is not instance)

    def groups(value: Any) -> list[Group]:
        return f.related_list(value, lambda item: _group_ref(store, item))

    def user_type(value: Any) -> str:
        chosen = f.choice(value, USER_TYPES)
        if instance is None and chosen == "internal_service_account":
            raise f.FieldError("Setting a user to internal service account is not allowed.")
        internal = instance is not None and instance.type == "internal_service_account"
        if internal and chosen != "internal_service_account":
            raise f.FieldError("Can't change internal service account to other user type.")
        return chosen

    return {
        "username": f.Field(username, required=True),
        "name": f.Field(lambda v: f.string(v, allow_blank=True), required=True),
        "is_active": f.Field(f.boolean),
        "last_login": f.Field(f.timestamp, allow_null=True),
        "groups": f.Field(
            lambda v: f.related_list(v, lambda g: _group_ref(store, g)), default=list
        ),
        "email": f.Field(f.email),
        "attributes": f.Field(f.json_dict),
        "path": f.Field(_user_path),
        "type": f.Field(user_type),
    }


def write_user(store: Store, body: Any, instance: User | None, *, partial: bool) -> User:
    values = _run(body, _user_fields(store, instance), partial=partial)
    groups: list[Group] | None = values.pop("groups", None)
    if instance is None:
        instance = store.add_user(**{"username": "", "name": "", **values})
    else:
        for name, value in values.items():
            setattr(instance, name, value)
    if groups is not None:
        store.set_groups(instance, groups)
    return instance


# groups


def _group_fields(store: Store, instance: Group | None) -> dict[str, f.Field]:
    def name(value: Any) -> str:
        text = f.string(value)
        other = store.group_by_name(text)
        return _unique(text, other is not None and other is not instance)

    def parent(value: Any) -> str:
        group = _group_ref(store, value)
        if instance is not None and group is instance:
            raise f.FieldError("Cannot set group as parent of itself.")
        return group.uuid

    def users(value: Any) -> list[User]:
        return f.related_list(value, lambda item: _user_ref(store, item))

    def roles(value: Any) -> list[str]:
        # Roles are not emulated: like a fresh install with none, every reference is unknown.
        def unknown(role: Any) -> str:
            raise f.does_not_exist(f.uuid_pk(role))

        return f.related_list(value, unknown)

    return {
        "name": f.Field(name, required=True),
        "is_superuser": f.Field(f.boolean),
        "parent": f.Field(parent, allow_null=True),
        "users": f.Field(users, default=list),
        "attributes": f.Field(f.json_dict),
        "roles": f.Field(roles),
    }


def write_group(store: Store, body: Any, instance: Group | None, *, partial: bool) -> Group:
    values = _run(body, _group_fields(store, instance), partial=partial)
    users: list[User] | None = values.pop("users", None)
    values.pop("roles", None)
    if instance is None:
        instance = store.add_group(**{"name": "", **values})
    else:
        for name, value in values.items():
            setattr(instance, name, value)
    if users is not None:
        store.set_members(instance, users)
    return instance


# tokens


def _token_fields(store: Store, instance: Token | None) -> dict[str, f.Field]:
    def identifier(value: Any) -> str:
        text = f.slug(value, max_length=255)
        other = store.token_by_identifier(text)
        if other is not None and other is not instance:
            raise f.FieldError("Token with this identifier already exists.")
        return text

    return {
        "managed": f.Field(f.string, allow_null=True),
        "identifier": f.Field(identifier, required=True),
        "intent": f.Field(lambda v: f.choice(v, TOKEN_INTENTS)),
        "user": f.Field(lambda v: _user_ref(store, v).pk),
        "description": f.Field(lambda v: f.string(v, allow_blank=True)),
        "expires": f.Field(f.timestamp, allow_null=True),
        "expiring": f.Field(f.boolean),
    }


def write_token(
    store: Store, body: Any, instance: Token | None, requester: User, *, partial: bool
) -> Token:
    values = _run(body, _token_fields(store, instance), partial=partial)
    # TokenSerializer.validate runs on updates too, partial or not: a PATCH that leaves out `user`
    # or `intent` resets them to the requester and "api", as the real server does.
    values.setdefault("user", requester.pk)
    values.setdefault("intent", "api")
    if values["intent"] not in ("api", "app_password"):
        raise field_errors({"intent": [f"Invalid intent {values['intent']}"]})
    max_expiry = store.now() + TOKEN_DURATION
    if values["intent"] == "api":
        values["expires"] = max_expiry  # API tokens cannot choose their expiry
    elif values.get("expires") is not None and values["expires"] > max_expiry:
        limit = max_expiry.strftime("%Y-%m-%d %H:%M:%S.%f+00:00")
        raise field_errors({"expires": [f"Token expires exceeds maximum lifetime ({limit} UTC)."]})
    if instance is None:
        if not store.is_superuser(requester):
            # perform_create: others only make tokens for themselves, expiring as configured.
            values["user"] = requester.pk
            values["expiring"] = requester.attributes.get(TOKEN_EXPIRES_ATTRIBUTE, True)
        values.setdefault("expires", max_expiry)
        return store.add_token(key=new_token_key(), **{"identifier": "", **values})
    for name, value in values.items():
        setattr(instance, name, value)
    return instance


def new_token_key() -> str:
    """A key like Authentik's default_token_key: 60 letters and digits."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(60))
