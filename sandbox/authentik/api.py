"""Routing and authentication: one request in, one DRF-shaped reply out, independent of HTTP."""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from sandbox.authentik.errors import NOT_AUTHENTICATED, TOKEN_INVALID, ApiError, detail, not_found
from sandbox.authentik.ldap_numbering import LdapSettings
from sandbox.authentik.listing import Query
from sandbox.authentik.store import Store, User


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Query
    authorization: str | None
    body: bytes


@dataclass(frozen=True)
class Response:
    status: int
    body: Any = None  # None: no body at all (204)


@dataclass
class Context:
    store: Store
    ldap: LdapSettings
    request: Request
    user: User | None = None

    @property
    def query(self) -> Query:
        return self.request.query

    @property
    def requester(self) -> User:
        """The authenticated user; routes that need one are marked, so it is always set here."""
        assert self.user is not None
        return self.user

    def json(self) -> Any:
        if not self.request.body.strip():
            return {}
        try:
            return json.loads(self.request.body)
        except ValueError as exc:
            raise detail(400, f"JSON parse error - {exc}") from None


Handler = Callable[..., Response]


@dataclass(frozen=True)
class Route:
    pattern: re.Pattern[str]
    handlers: dict[str, Handler]
    # "required": 403 without a valid token; "optional": a token given must be valid (AllowAny
    # views still authenticate); "none": the emulator's own endpoints.
    auth: str = "required"


def route(path: str, auth: str = "required", **handlers: Handler) -> Route:
    """`path` uses {name} for one URL segment; handler keywords are HTTP methods (get=, post=)."""
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path)
    return Route(re.compile(pattern), {k.upper(): v for k, v in handlers.items()}, auth)


def authenticate(store: Store, header: str | None) -> User | None:
    """Authentik's bearer authentication; None when no credentials were sent at all."""
    credentials = (header or "").strip()
    if not credentials or " " not in credentials:
        return None
    scheme, _, key = credentials.partition(" ")
    if scheme.lower() != "bearer":
        raise detail(403, "Unsupported authentication type")
    if not key:
        raise detail(403, "Malformed header")
    now = store.now()
    token = next(
        (
            t
            for t in store.tokens.values()
            if t.key == key
            and t.intent == "api"
            and not (t.expiring and t.expires is not None and t.expires < now)
        ),
        None,
    )
    if token is None:
        raise detail(403, TOKEN_INVALID)
    user = store.users[token.user]
    if not user.is_active:
        raise detail(403, TOKEN_INVALID)
    return user


class Api:
    """Dispatches requests to the routes, one at a time, saving the state after each change."""

    def __init__(
        self,
        store: Store,
        ldap: LdapSettings,
        routes: list[Route],
        changed: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.ldap = ldap
        self.routes = routes
        # Told after each saved change (the LDAP face publishes it).
        self.changed = changed

    def handle(self, request: Request) -> Response:
        with self.store.lock:
            try:
                return self._dispatch(request)
            except ApiError as exc:
                return Response(exc.status, exc.body)
            except Exception:
                # An emulator bug: answer like a server error rather than dropping the connection.
                traceback.print_exc()
                return Response(500, {"detail": "A server error occurred."})

    def _dispatch(self, request: Request) -> Response:
        for candidate in self.routes:
            match = candidate.pattern.fullmatch(request.path)
            if match is None:
                continue
            ctx = Context(self.store, self.ldap, request)
            if candidate.auth != "none":
                ctx.user = authenticate(self.store, request.authorization)
                if ctx.user is None and candidate.auth == "required":
                    raise detail(403, NOT_AUTHENTICATED)
            handler = candidate.handlers.get(request.method)
            if handler is None:
                raise detail(405, f'Method "{request.method}" not allowed.')
            params = {k: unquote(v) for k, v in match.groupdict().items()}
            response = handler(ctx, **params)
            if request.method != "GET":
                self.store.save()
                if self.changed is not None:
                    self.changed()
            return response
        raise not_found()
