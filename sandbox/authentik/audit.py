"""Where Authentik keeps a user's last-login addresses: audit events (`/events/events/`, each with
a copy of the acting user and the client's IP) and authenticated sessions
(`/core/authenticated_sessions/`, last IP and user agent), as Authentik 2024.10 serves them to a
superuser, plus the emulator's own `/_emulator/logins`, which records what a login through a flow
would (the emulator serves no flows).
"""

from __future__ import annotations

import ipaddress
import uuid
from typing import Any

from sandbox.authentik import render
from sandbox.authentik.api import Context, Response, Route, route
from sandbox.authentik.errors import PERMISSION_DENIED, ApiError, detail, not_found
from sandbox.authentik.listing import is_uuid, order, paginate
from sandbox.authentik.store import Event, Session

API = "/api/v3"


def _superuser(ctx: Context) -> None:
    if not ctx.store.is_superuser(ctx.requester):
        raise detail(403, PERMISSION_DENIED)


def render_event(event: Event) -> dict[str, Any]:
    """EventSerializer."""
    return {
        "pk": event.pk,
        "user": event.user,
        "action": event.action,
        "app": event.app,
        "context": event.context,
        "client_ip": event.client_ip,
        "created": render.timestamp(event.created),
        "expires": render.timestamp(event.expires),
        "brand": None,
    }


def render_session(session: Session) -> dict[str, Any]:
    """AuthenticatedSessionSerializer. Authentik parses the user agent (ua-parser); the
    emulator answers what ua-parser does for a string it does not know."""
    unknown = {"family": "Other", "major": "", "minor": "", "patch": ""}
    return {
        "uuid": session.uuid,
        "current": False,
        "user_agent": {
            "device": {"brand": "", "family": "Other", "model": ""},
            "os": {**unknown, "patch_minor": ""},
            "user_agent": unknown,
            "string": session.last_user_agent,
        },
        "geo_ip": None,
        "asn": None,
        "user": session.user,
        "last_ip": session.last_ip,
        "last_user_agent": session.last_user_agent,
        "last_used": render.timestamp(session.last_used),
        "expires": render.timestamp(session.expires),
    }


def _event(ctx: Context, event_uuid: str) -> Event:
    _superuser(ctx)
    event = ctx.store.events.get(str(uuid.UUID(event_uuid))) if is_uuid(event_uuid) else None
    if event is None:
        raise not_found()
    return event


def events_list(ctx: Context) -> Response:
    _superuser(ctx)
    q = ctx.query
    items = list(ctx.store.events.values())
    if (username := q.value("username")) is not None:
        items = [e for e in items if e.user.get("username") == username]
    if (action := q.value("action")) is not None:
        items = [e for e in items if e.action == action]
    if (client_ip := q.value("client_ip")) is not None:
        items = [e for e in items if e.client_ip == client_ip]
    items = order(
        items,
        q.value("ordering"),
        {"created": lambda e: e.created, "action": lambda e: e.action},
        ["-created"],
    )
    page, pagination = paginate(items, q)
    return Response(200, {"pagination": pagination, "results": [render_event(e) for e in page]})


def events_retrieve(ctx: Context, event_uuid: str) -> Response:
    return Response(200, render_event(_event(ctx, event_uuid)))


def events_partial_update(ctx: Context, event_uuid: str) -> Response:
    event = _event(ctx, event_uuid)
    body = ctx.json()
    if not isinstance(body, dict):
        raise ApiError(400, {"non_field_errors": ["Invalid data. Expected a dictionary."]})
    errors: dict[str, list[str]] = {}
    for name in ("user", "context"):
        if name in body and not isinstance(body[name], dict):
            errors[name] = ["Value must be valid JSON."]
    if "client_ip" in body and body["client_ip"] is not None:
        try:
            ipaddress.ip_address(str(body["client_ip"]))
        except ValueError:
            errors["client_ip"] = ["Enter a valid IPv4 or IPv6 address."]
    if errors:
        raise ApiError(400, errors)
    if "user" in body:
        event.user = body["user"]
    if "context" in body:
        event.context = body["context"]
    if "client_ip" in body:
        event.client_ip = body["client_ip"]
    return Response(200, render_event(event))


def events_destroy(ctx: Context, event_uuid: str) -> Response:
    del ctx.store.events[_event(ctx, event_uuid).pk]
    return Response(204)


def sessions_list(ctx: Context) -> Response:
    _superuser(ctx)
    q = ctx.query
    items = list(ctx.store.sessions.values())
    if (username := q.value("user__username")) is not None:
        user = ctx.store.user_by_username(username)
        items = [s for s in items if user is not None and s.user == user.pk]
    if (last_ip := q.value("last_ip")) is not None:
        items = [s for s in items if s.last_ip == last_ip]
    page, pagination = paginate(items, q)
    results = [render_session(s) for s in page]
    return Response(200, {"pagination": pagination, "results": results})


def sessions_destroy(ctx: Context, session_uuid: str) -> Response:
    _superuser(ctx)
    key = str(uuid.UUID(session_uuid)) if is_uuid(session_uuid) else ""
    if key not in ctx.store.sessions:
        raise not_found()
    del ctx.store.sessions[key]
    return Response(204)


def logins_create(ctx: Context) -> Response:
    """The emulator's own: `{"username", "client_ip", "user_agent"}` logs the user in, leaving
    the login event and the session a real login leaves."""
    body = ctx.json()
    user = ctx.store.user_by_username(str((body or {}).get("username")))
    if user is None:
        raise not_found()
    event, session = ctx.store.record_login(
        user, str(body.get("client_ip") or "127.0.0.1"), str(body.get("user_agent") or "")
    )
    return Response(201, {"event": render_event(event), "session": render_session(session)})


ROUTES: list[Route] = [
    route(f"{API}/events/events/", get=events_list),
    route(
        f"{API}/events/events/{{event_uuid}}/",
        get=events_retrieve,
        patch=events_partial_update,
        delete=events_destroy,
    ),
    route(f"{API}/core/authenticated_sessions/", get=sessions_list),
    route(f"{API}/core/authenticated_sessions/{{session_uuid}}/", delete=sessions_destroy),
    route("/_emulator/logins/?", auth="none", post=logins_create),
]
