"""The endpoints: /api/v3 as Authentik 2024.10 serves it, plus the emulator's own /_emulator."""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.authentik import render
from sandbox.authentik.api import Context, Response, Route, route
from sandbox.authentik.errors import PERMISSION_DENIED, ApiError, detail, not_found
from sandbox.authentik.ldap_numbering import describe_group, describe_user
from sandbox.authentik.listing import (
    FilterErrors,
    boolean,
    by_attributes,
    choices,
    is_int,
    is_uuid,
    order,
    paginate,
    search,
)
from sandbox.authentik.store import Group, Token, User
from sandbox.authentik.writes import USER_TYPES, write_group, write_token, write_user

API = "/api/v3"

# GET /root/config/ with the defaults of a fresh install.
ROOT_CONFIG: dict[str, Any] = {
    "error_reporting": {
        "enabled": False,
        "sentry_dsn": "",
        "environment": "customer",
        "send_pii": False,
        "traces_sample_rate": 0.1,
    },
    "capabilities": ["can_save_media", "can_impersonate"],
    "cache_timeout": 300,
    "cache_timeout_flows": 300,
    "cache_timeout_policies": 300,
    "cache_timeout_reputation": 300,
}


# GET /admin/version/ of the release this emulator follows, offline (no newer release known).
VERSION: dict[str, Any] = {
    "version_current": "2024.10.5",
    "version_latest": "2024.10.5",
    "version_latest_valid": True,
    "build_hash": "",
    "outdated": False,
    "outpost_outdated": False,
}


def _listed(page: list[Any], pagination: dict[str, int]) -> Response:
    return Response(200, {"pagination": pagination, "results": page})


def _require_superuser(ctx: Context) -> None:
    """The emulator has no RBAC: only superusers may create or see users and groups.

    Authentik would filter lists down to the objects a user may view and answer 404 for others,
    which is what everybody else gets here too.
    """
    if not ctx.store.is_superuser(ctx.requester):
        raise detail(403, PERMISSION_DENIED)


def _sees_all(ctx: Context) -> bool:
    return ctx.store.is_superuser(ctx.requester)


def root_config(ctx: Context) -> Response:
    return Response(200, ROOT_CONFIG)


def admin_version(ctx: Context) -> Response:
    """VersionSerializer: Authentik asks for `authentik_rbac.view_system_info`, which only
    superusers hold here (the emulator has no RBAC roles)."""
    _require_superuser(ctx)
    return Response(200, VERSION)


# users


def _user(ctx: Context, pk: str) -> User:
    user = ctx.store.users.get(int(pk)) if is_int(pk) and _sees_all(ctx) else None
    if user is None:
        raise not_found()
    return user


def users_list(ctx: Context) -> Response:
    store, q = ctx.store, ctx.query
    items = list(store.users.values()) if _sees_all(ctx) else []
    errors = FilterErrors()
    for name in ("username", "email", "name", "path"):
        if (value := q.value(name)) is not None:
            items = [u for u in items if getattr(u, name) == value]
    if (prefix := q.value("path_startswith")) is not None:
        items = [u for u in items if u.path.startswith(prefix)]
    if (active := boolean(q.value("is_active"))) is not None:
        items = [u for u in items if u.is_active == active]
    if (superuser := boolean(q.value("is_superuser"))) is not None:
        # Filters on the user's direct groups, unlike the is_superuser field (ancestors too).
        items = [u for u in items if any(g.is_superuser == superuser for g in store.groups_of(u))]
    if (wanted_uuid := q.value("uuid")) is not None:
        if is_uuid(wanted_uuid):
            items = [u for u in items if uuid.UUID(u.uuid) == uuid.UUID(wanted_uuid)]
        else:
            errors.add("uuid", "Enter a valid UUID.")
    types = choices(q, "type", errors, lambda v: v if v in USER_TYPES else None)
    if types is not None:
        items = [u for u in items if u.type in types]
    for name, lookup, valid in (
        ("groups_by_name", store.group_by_name, lambda _: True),
        ("groups_by_pk", lambda v: store.groups.get(str(uuid.UUID(v))), is_uuid),
    ):
        groups = choices(q, name, errors, lookup, is_valid=valid)
        if groups is not None:
            items = [u for u in items if any(g in groups for g in store.groups_of(u))]
    errors.raise_any()
    items = by_attributes(items, q.value("attributes"), lambda u: u.attributes)
    items = search(
        items,
        q.value("search"),
        lambda u: (u.username, u.name, u.email, u.uuid, str(u.is_active).lower()),
    )
    items = order(
        items,
        q.value("ordering"),
        {
            "pk": lambda u: u.pk,
            "username": lambda u: u.username,
            "name": lambda u: u.name,
            "email": lambda u: u.email,
            "is_active": lambda u: u.is_active,
            "last_login": lambda u: u.last_login,
            "path": lambda u: u.path,
            "type": lambda u: u.type,
            "uuid": lambda u: u.uuid,
        },
        ["username"],
    )
    page, pagination = paginate(items, q)
    include = q.flag("include_groups")
    return _listed([render.user(store, u, include_groups=include) for u in page], pagination)


def users_create(ctx: Context) -> Response:
    _require_superuser(ctx)
    user = write_user(ctx.store, ctx.json(), None, partial=False)
    return Response(201, render.user(ctx.store, user))


def users_retrieve(ctx: Context, pk: str) -> Response:
    return Response(200, render.user(ctx.store, _user(ctx, pk)))


def users_update(ctx: Context, pk: str) -> Response:
    user = write_user(ctx.store, ctx.json(), _user(ctx, pk), partial=False)
    return Response(200, render.user(ctx.store, user))


def users_partial_update(ctx: Context, pk: str) -> Response:
    user = write_user(ctx.store, ctx.json(), _user(ctx, pk), partial=True)
    return Response(200, render.user(ctx.store, user))


def users_destroy(ctx: Context, pk: str) -> Response:
    ctx.store.delete_user(_user(ctx, pk).pk)
    return Response(204)


def users_me(ctx: Context) -> Response:
    return Response(200, {"user": render.user_self(ctx.store, ctx.requester)})


# groups


def _group(ctx: Context, pk: str) -> Group:
    group = ctx.store.groups.get(str(uuid.UUID(pk))) if is_uuid(pk) and _sees_all(ctx) else None
    if group is None:
        raise not_found()
    return group


def _group_reply(ctx: Context, group: Group, status: int = 200) -> Response:
    include = ctx.query.flag("include_users")
    return Response(status, render.group(ctx.store, group, include_users=include))


def groups_list(ctx: Context) -> Response:
    store, q = ctx.store, ctx.query
    items = list(store.groups.values()) if _sees_all(ctx) else []
    errors = FilterErrors()
    if (name := q.value("name")) is not None:
        items = [g for g in items if g.name == name]
    if (superuser := boolean(q.value("is_superuser"))) is not None:
        items = [g for g in items if g.is_superuser == superuser]
    for param, lookup, valid in (
        ("members_by_pk", lambda v: store.users.get(int(v)), is_int),
        ("members_by_username", store.user_by_username, lambda _: True),
    ):
        members = choices(q, param, errors, lookup, is_valid=valid)
        if members is not None:
            items = [g for g in items if any(u in members for u in store.members_of(g))]
    errors.raise_any()
    items = by_attributes(items, q.value("attributes"), lambda g: g.attributes)
    items = search(items, q.value("search"), lambda g: (g.name, str(g.is_superuser).lower()))
    items = order(
        items,
        q.value("ordering"),
        {
            "name": lambda g: g.name,
            "is_superuser": lambda g: g.is_superuser,
            "pk": lambda g: g.uuid,
            "num_pk": lambda g: g.num_pk,
        },
        ["name"],
    )
    page, pagination = paginate(items, q)
    include = q.flag("include_users")
    return _listed([render.group(store, g, include_users=include) for g in page], pagination)


def groups_create(ctx: Context) -> Response:
    _require_superuser(ctx)
    return _group_reply(ctx, write_group(ctx.store, ctx.json(), None, partial=False), 201)


def groups_retrieve(ctx: Context, pk: str) -> Response:
    return _group_reply(ctx, _group(ctx, pk))


def groups_update(ctx: Context, pk: str) -> Response:
    return _group_reply(ctx, write_group(ctx.store, ctx.json(), _group(ctx, pk), partial=False))


def groups_partial_update(ctx: Context, pk: str) -> Response:
    return _group_reply(ctx, write_group(ctx.store, ctx.json(), _group(ctx, pk), partial=True))


def groups_destroy(ctx: Context, pk: str) -> Response:
    ctx.store.delete_group(_group(ctx, pk).uuid)
    return Response(204)


def _member(ctx: Context) -> User:
    """add_user / remove_user look the user up by the body's pk; anything else is a 404."""
    body = ctx.json()
    raw = body.get("pk") if isinstance(body, dict) else None
    user = ctx.store.users.get(int(str(raw))) if is_int(str(raw)) else None
    if user is None:
        raise not_found()
    return user


def groups_add_user(ctx: Context, pk: str) -> Response:
    group = _group(ctx, pk)
    ctx.store.add_member(group, _member(ctx))
    return Response(204)


def groups_remove_user(ctx: Context, pk: str) -> Response:
    group = _group(ctx, pk)
    ctx.store.remove_member(group, _member(ctx))
    return Response(204)


# tokens


def _visible_tokens(ctx: Context) -> list[Token]:
    tokens = list(ctx.store.tokens.values())
    return tokens if _sees_all(ctx) else [t for t in tokens if t.user == ctx.requester.pk]


def _token(ctx: Context, identifier: str) -> Token:
    token = next((t for t in _visible_tokens(ctx) if t.identifier == identifier), None)
    if token is None:
        raise not_found()
    return token


def tokens_list(ctx: Context) -> Response:
    store, q = ctx.store, ctx.query
    items = _visible_tokens(ctx)
    for name in ("identifier", "intent", "description", "managed"):
        if (value := q.value(name)) is not None:
            items = [t for t in items if getattr(t, name) == value]
    if (username := q.value("user__username")) is not None:
        items = [t for t in items if store.users[t.user].username == username]
    if (expiring := boolean(q.value("expiring"))) is not None:
        items = [t for t in items if t.expiring == expiring]
    items = search(
        items,
        q.value("search"),
        lambda t: (t.identifier, t.intent, store.users[t.user].username, t.description),
    )
    items = order(
        items,
        q.value("ordering"),
        {
            "identifier": lambda t: t.identifier,
            "expires": lambda t: t.expires,
            "intent": lambda t: t.intent,
            "description": lambda t: t.description,
            "user": lambda t: t.user,
            "expiring": lambda t: t.expiring,
        },
        ["identifier", "expires"],
    )
    page, pagination = paginate(items, q)
    return _listed([render.token(store, t) for t in page], pagination)


def tokens_create(ctx: Context) -> Response:
    token = write_token(ctx.store, ctx.json(), None, ctx.requester, partial=False)
    return Response(201, render.token(ctx.store, token))


def tokens_retrieve(ctx: Context, identifier: str) -> Response:
    return Response(200, render.token(ctx.store, _token(ctx, identifier)))


def tokens_update(ctx: Context, identifier: str) -> Response:
    token = _token(ctx, identifier)
    write_token(ctx.store, ctx.json(), token, ctx.requester, partial=False)
    return Response(200, render.token(ctx.store, token))


def tokens_partial_update(ctx: Context, identifier: str) -> Response:
    token = _token(ctx, identifier)
    write_token(ctx.store, ctx.json(), token, ctx.requester, partial=True)
    return Response(200, render.token(ctx.store, token))


def tokens_destroy(ctx: Context, identifier: str) -> Response:
    del ctx.store.tokens[_token(ctx, identifier).uuid]
    return Response(204)


def tokens_view_key(ctx: Context, identifier: str) -> Response:
    return Response(200, {"key": _token(ctx, identifier).key})


# the emulator's own endpoints: what the LDAP outpost publishes, and a clock tests can move


def ldap_user(ctx: Context, username: str) -> Response:
    user = ctx.store.user_by_username(username)
    if user is None:
        raise not_found()
    return Response(200, describe_user(ctx.store, ctx.ldap, user))


def ldap_group(ctx: Context, name: str) -> Response:
    group = ctx.store.group_by_name(name)
    if group is None:
        raise not_found()
    return Response(200, describe_group(ctx.store, ctx.ldap, group))


def clock_get(ctx: Context) -> Response:
    return Response(200, {"now": render.timestamp(ctx.store.now())})


def clock_advance(ctx: Context) -> Response:
    body = ctx.json()
    seconds = body.get("advance_seconds") if isinstance(body, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise ApiError(400, {"advance_seconds": ["A number of seconds, 0 or more."]})
    ctx.store.clock_offset += float(seconds)
    return clock_get(ctx)


ROUTES: list[Route] = [
    route(f"{API}/root/config/", auth="optional", get=root_config),
    route(f"{API}/admin/version/", get=admin_version),
    route(f"{API}/core/users/", get=users_list, post=users_create),
    route(f"{API}/core/users/me/", get=users_me),
    route(
        f"{API}/core/users/{{pk}}/",
        get=users_retrieve,
        put=users_update,
        patch=users_partial_update,
        delete=users_destroy,
    ),
    route(f"{API}/core/groups/", get=groups_list, post=groups_create),
    route(
        f"{API}/core/groups/{{pk}}/",
        get=groups_retrieve,
        put=groups_update,
        patch=groups_partial_update,
        delete=groups_destroy,
    ),
    route(f"{API}/core/groups/{{pk}}/add_user/", post=groups_add_user),
    route(f"{API}/core/groups/{{pk}}/remove_user/", post=groups_remove_user),
    route(f"{API}/core/tokens/", get=tokens_list, post=tokens_create),
    route(
        f"{API}/core/tokens/{{identifier}}/",
        get=tokens_retrieve,
        put=tokens_update,
        patch=tokens_partial_update,
        delete=tokens_destroy,
    ),
    route(f"{API}/core/tokens/{{identifier}}/view_key/", get=tokens_view_key),
    route("/_emulator/ldap/users/{username}/?", auth="none", get=ldap_user),
    route("/_emulator/ldap/groups/{name}/?", auth="none", get=ldap_group),
    route("/_emulator/clock/?", auth="none", get=clock_get, post=clock_advance),
]
