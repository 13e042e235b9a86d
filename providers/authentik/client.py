"""A small client of the Authentik REST API v3 (2024.10 and later) over httpx, free of Pulumi.

Every reply other than 2xx becomes an AuthentikError carrying the method, the path, the status and
Authentik's own JSON body, never the token. Requests are sent again under the backend clients' one
policy (`providers.http_retry`): any request after a connection that never opened or a 429 or
503, only idempotent ones (GET, HEAD, PUT, DELETE) after a 5xx or a lost reply (a POST or PATCH
is never resent blindly: the providers' create adopts by ownership mark on the next run), never
after other 4xx;
waits start at 0.5 s and double up to 8 s, AUTHENTIK_MAX_ATTEMPTS tries in all.

Groups come in two shapes: up to 2025.10 a group has one `parent` (and `parent_name`), from 2025.12
a list of `parents` (and `parents_obj`). Both are read into the same `Group`; writes use the shape
of the groups the server has answered with (the older one until it has answered any).
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import httpx

from providers.authentik.settings import DEFAULT_MAX_ATTEMPTS, Settings
from providers.call_log import httpx_hooks
from providers.errors import AuthentikError
from providers.http_retry import NoResponseError, RetryPolicy, send

__all__ = ["API_PREFIX", "AuthentikClient", "Group", "Member", "User"]

API_PREFIX = "/api/v3"
_T = TypeVar("_T")

_BODY_LIMIT = 2000  # characters of a reply quoted in an error; an HTML error page can be huge

_NEXT_STEP = {
    400: "Authentik refused the request as invalid: fix the fields it names",
    401: "the API token was refused: check AUTHENTIK_TOKEN or AUTHENTIK_TOKEN_FILE",
    403: "the API token is invalid, expired or not a superuser's: check AUTHENTIK_TOKEN or "
    "AUTHENTIK_TOKEN_FILE",
    404: "the object is gone: run `pulumi refresh` so the state forgets it",
    429: "Authentik kept rate-limiting; retry later",
}


_SERVICE_ACCOUNTS = ("service_account", "internal_service_account")


@dataclass(frozen=True)
class Member:
    """A user as a group lists its members."""

    pk: int
    username: str
    is_active: bool


@dataclass(frozen=True)
class Group:
    pk: str  # a UUID
    num_pk: int
    name: str
    parents: tuple[str, ...]  # UUIDs: at most one up to 2025.10
    parent_names: tuple[str, ...] | None  # None when the reply did not name them
    attributes: dict[str, Any]
    members: tuple[Member, ...] | None  # None unless asked for (include_users)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Group:
        if "parents" in data:
            parents = tuple(str(p) for p in data.get("parents") or ())
            objs = data.get("parents_obj")
            names = None if objs is None else tuple(str(o["name"]) for o in objs)
        else:
            parent = data.get("parent")
            parents = () if parent is None else (str(parent),)
            name = data.get("parent_name")
            names = None if parents and name is None else tuple([str(name)] if parents else [])
        users = data.get("users_obj")
        return cls(
            pk=str(data["pk"]),
            num_pk=int(data["num_pk"]),
            name=str(data["name"]),
            parents=parents,
            parent_names=names,
            attributes=dict(data.get("attributes") or {}),
            members=None
            if users is None
            else tuple(
                Member(int(u["pk"]), str(u["username"]), bool(u.get("is_active", True)))
                for u in users
            ),
        )


@dataclass(frozen=True)
class User:
    pk: int
    uuid: str
    username: str
    name: str
    email: str
    is_active: bool
    attributes: dict[str, Any]
    groups: tuple[str, ...]  # UUIDs of the groups the user is directly in
    groups_obj: tuple[Group, ...] | None  # the same groups, when the reply included them
    is_superuser: bool = False  # through any of its groups (Authentik's own reckoning)
    type: str = "internal"  # internal, external, service_account, internal_service_account

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> User:
        objs = data.get("groups_obj")
        return cls(
            pk=int(data["pk"]),
            uuid=str(data["uuid"]),
            username=str(data["username"]),
            name=str(data.get("name") or ""),
            email=str(data.get("email") or ""),
            is_active=bool(data.get("is_active", True)),
            attributes=dict(data.get("attributes") or {}),
            groups=tuple(str(g) for g in data.get("groups") or ()),
            groups_obj=None if objs is None else tuple(Group.from_api(g) for g in objs),
            is_superuser=bool(data.get("is_superuser", False)),
            type=str(data.get("type") or "internal"),
        )

    def never_adopted(self, own_groups: Collection[str], names: Mapping[str, str]) -> str:
        """Why this user may never become a tenant's, even when `import` recorded it: a
        superuser, a service account, a member of a group but the tenant's (`own_groups`, by
        primary key; `names` names the others where known). "" when it may."""
        if self.is_superuser:
            return "is a superuser (through its groups)"
        if self.type in _SERVICE_ACCOUNTS:
            return f"is a service account (type {self.type})"
        outside = sorted(names.get(pk, pk) for pk in self.groups if pk not in own_groups)
        if outside:
            return f"is in groups outside the tenant's: {', '.join(outside)}"
        return ""


class AuthentikClient:
    """One Authentik server; use as a context manager, or call `close()`."""

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        verify: ssl.SSLContext | bool = True,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + API_PREFIX,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            verify=verify,
            transport=transport,
            timeout=timeout,
            event_hooks=httpx_hooks("authentik"),
        )
        self._retry = RetryPolicy.exponential(max_attempts, backoff, max_backoff)
        self._sleep = sleep
        self._parents_list: bool | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> AuthentikClient:
        verify: ssl.SSLContext | bool = True
        if settings.ca_file is not None:
            verify = ssl.create_default_context(cafile=str(settings.ca_file))
        return cls(
            base_url=settings.url,
            token=settings.token,
            verify=verify,
            max_attempts=settings.max_attempts,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AuthentikClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # the token itself

    def version(self) -> str:
        """The server's release (`GET /admin/version/`'s `version_current`), which Authentik shows
        to a user with the `view_system_info` permission (every superuser has it)."""
        body = self._request("GET", "/admin/version/", doing="reading the Authentik version")
        return _parsed(lambda data: str(data["version_current"]), body, "version")

    def me(self) -> Mapping[str, Any]:
        """The token's own user as `GET /core/users/me/` renders it (`is_superuser`,
        `system_permissions`, ...): what the token may do, read without writing anything."""
        body = self._request("GET", "/core/users/me/", doing="reading the API token's own user")
        user: Mapping[str, Any] = _parsed(lambda data: data["user"], body, "user")
        return user

    # groups

    def find_group(self, name: str) -> Group | None:
        found = self._list(
            "/core/groups/",
            {"name": name, "include_users": "false"},
            doing=f"looking up Authentik group {name!r}",
        )
        return next((g for g in map(self._group, found) if g.name == name), None)

    def get_group(self, pk: str, *, include_users: bool = False) -> Group | None:
        data = self._request(
            "GET",
            f"/core/groups/{pk}/",
            doing=f"reading Authentik group {pk}",
            params={"include_users": str(include_users).lower()},
            missing_ok=True,
        )
        return None if data is None else self._group(data)

    def create_group(
        self, *, name: str, parent: str | None, attributes: Mapping[str, Any]
    ) -> Group:
        body = {"name": name, "attributes": dict(attributes), **self._parent_body(parent)}
        return self._group(
            self._request(
                "POST",
                "/core/groups/",
                doing=f"creating Authentik group {name!r}",
                params={"include_users": "false"},
                body=body,
            )
        )

    def patch_group(
        self,
        group: Group,
        *,
        parent: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> Group:
        """Changes only what is given; `users` is never sent, so memberships stay."""
        body: dict[str, Any] = {}
        if parent is not None:
            body.update(self._parent_body(parent))
        if attributes is not None:
            body["attributes"] = dict(attributes)
        return self._group(
            self._request(
                "PATCH",
                f"/core/groups/{group.pk}/",
                doing=f"updating Authentik group {group.name!r}",
                params={"include_users": "false"},
                body=body,
            )
        )

    def delete_group(self, group: Group) -> None:
        self._request(
            "DELETE",
            f"/core/groups/{group.pk}/",
            doing=f"deleting Authentik group {group.name!r}",
            missing_ok=True,
        )

    def add_user(self, group: Group, user: User) -> None:
        self._request(
            "POST",
            f"/core/groups/{group.pk}/add_user/",
            doing=f"adding user {user.username!r} to Authentik group {group.name!r}",
            body={"pk": user.pk},
        )

    def remove_user(self, group: Group, user: User) -> None:
        self._request(
            "POST",
            f"/core/groups/{group.pk}/remove_user/",
            doing=f"removing user {user.username!r} from Authentik group {group.name!r}",
            body={"pk": user.pk},
        )

    # users

    def find_user(self, username: str) -> User | None:
        found = self._list(
            "/core/users/",
            {"username": username, "include_groups": "true"},
            doing=f"looking up Authentik user {username!r}",
        )
        return next((u for u in map(self._user, found) if u.username == username), None)

    def users(self) -> list[User]:
        """Every user Authentik has, active or not."""
        return [self._user(u) for u in self._list("/core/users/", {}, doing="listing users")]

    def groups(self) -> list[Group]:
        """Every group Authentik has, without their members."""
        found = self._list("/core/groups/", {"include_users": "false"}, doing="listing groups")
        return [self._group(g) for g in found]

    def get_user(self, pk: int) -> User | None:
        data = self._request(
            "GET",
            f"/core/users/{pk}/",
            doing=f"reading Authentik user {pk}",
            params={"include_groups": "true"},
            missing_ok=True,
        )
        return None if data is None else self._user(data)

    def create_user(
        self,
        *,
        username: str,
        name: str,
        email: str,
        groups: Sequence[str],
        attributes: Mapping[str, Any],
        is_active: bool = True,
    ) -> User:
        body = {
            "username": username,
            "name": name,
            "email": email,
            "is_active": is_active,
            "groups": list(groups),
            "attributes": dict(attributes),
        }
        return self._user(
            self._request(
                "POST",
                "/core/users/",
                doing=f"creating Authentik user {username!r}",
                body=body,
            )
        )

    def patch_user(
        self,
        user: User,
        *,
        name: str | None = None,
        email: str | None = None,
        is_active: bool | None = None,
        groups: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> User:
        """Changes only what is given. `groups`, when given, is the user's whole membership: a
        group left out is left by the user."""
        body: dict[str, Any] = {
            key: value
            for key, value in (("name", name), ("email", email), ("is_active", is_active))
            if value is not None
        }
        if groups is not None:
            body["groups"] = list(groups)
        if attributes is not None:
            body["attributes"] = dict(attributes)
        return self._user(
            self._request(
                "PATCH",
                f"/core/users/{user.pk}/",
                doing=f"updating Authentik user {user.username!r}",
                body=body,
            )
        )

    def delete_user(self, user: User) -> None:
        """A hard delete: offboarding only disables users; this is for the purge after retention
        (and for tests cleaning up)."""
        self._request(
            "DELETE",
            f"/core/users/{user.pk}/",
            doing=f"deleting Authentik user {user.username!r}",
            missing_ok=True,
        )

    # what Authentik keeps of a user's logins: audit events and sessions

    def redact_events(self, user: User) -> int:
        """Every audit event of `user` keeps its action and time, and loses the user's email,
        the client's address and what the event's context says of where it came from. Returns
        how many events were changed."""
        doing = f"redacting the audit events of Authentik user {user.username!r}"
        changed = 0
        for event in self._list("/events/events/", {"username": user.username}, doing=doing):
            context = {k: v for k, v in (event.get("context") or {}).items() if k not in _LOCATING}
            acting = {**(event.get("user") or {}), "email": ""}
            if (acting, context, event.get("client_ip")) == (
                event.get("user"),
                event.get("context"),
                None,
            ):
                continue
            body = {"user": acting, "context": context, "client_ip": None}
            self._request("PATCH", f"/events/events/{event['pk']}/", doing=doing, body=body)
            changed += 1
        return changed

    def end_sessions(self, user: User) -> int:
        """Deletes every authenticated session of `user` (each holds its last IP and user
        agent). Returns how many there were."""
        doing = f"ending the sessions of Authentik user {user.username!r}"
        found = self._list(
            "/core/authenticated_sessions/", {"user__username": user.username}, doing=doing
        )
        for session in found:
            path = f"/core/authenticated_sessions/{session['uuid']}/"
            self._request("DELETE", path, doing=doing, missing_ok=True)
        return len(found)

    # plumbing

    def _group(self, data: Any) -> Group:
        if isinstance(data, Mapping):
            self._parents_list = "parents" in data
        return _parsed(Group.from_api, data, "group")

    def _user(self, data: Any) -> User:
        return _parsed(User.from_api, data, "user")

    def _parent_body(self, parent: str | None) -> dict[str, Any]:
        if self._parents_list:
            return {"parents": [] if parent is None else [parent]}
        return {"parent": parent}

    def _list(self, path: str, params: Mapping[str, str], *, doing: str) -> list[Any]:
        """Every page's results; Authentik's `pagination.next` is 0 on the last page."""
        results: list[Any] = []
        page = 1
        while True:
            body = self._request("GET", path, doing=doing, params={**params, "page": str(page)})
            if not isinstance(body, Mapping) or not isinstance(body.get("results"), list):
                raise AuthentikError(
                    f"{doing} (GET {API_PREFIX}{path})",
                    f"the reply is not a paginated list: {_quote(body)}",
                    "check that AUTHENTIK_URL points at Authentik",
                )
            results.extend(body["results"])
            pagination = body.get("pagination")
            following = int(pagination.get("next") or 0) if isinstance(pagination, dict) else 0
            if following <= page:
                return results
            page = following

    def _request(
        self,
        method: str,
        path: str,
        *,
        doing: str,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        missing_ok: bool = False,
    ) -> Any:
        """The reply's JSON (None for an empty body, or for 404 when `missing_ok`)."""
        where = f"{doing} ({method} {API_PREFIX}{path})"
        try:
            reply = send(
                self._http,
                method,
                path,
                policy=self._retry,
                params=params,
                json=body,
                sleep=self._sleep,
            )
        except NoResponseError as failed:
            # A POST or PATCH whose reply was lost is not sent again (it may have been acted on):
            # the providers' create adopts what it made, by its ownership mark, on the next run.
            attempts, exc = failed.attempts, failed.error
            raise AuthentikError(
                where,
                f"connection to {self._origin()} failed after {attempts} "
                f"attempt{'s' if attempts > 1 else ''} ({type(exc).__name__}: {exc})",
                "check AUTHENTIK_URL and that Authentik is up",
            ) from None
        response = reply.response
        if missing_ok and response.status_code == 404:
            return None
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError:
            status = response.status_code
            tried = f" after {reply.attempts} attempts" if reply.attempts > 1 else ""
            raise AuthentikError(
                where,
                f"HTTP {status}{tried}: {_quote(_body(response))}",
                _NEXT_STEP.get(
                    status,
                    "Authentik failed; check its logs and retry"
                    if status >= 500
                    else "check the request against the Authentik API",
                ),
                refused=status in (401, 403),
            ) from None
        return _body(response) if response.content else None

    def _origin(self) -> str:
        # Scheme, host and port only: a URL's user:password part must not reach a message.
        url = self._http.base_url
        port = f":{url.port}" if url.port else ""
        return f"{url.scheme}://{url.host}{port}"


# What an event's context holds of where a request came from (GeoIP and ASN lookups, the
# request with its user agent): redacted with the client's address.
_LOCATING = ("geo", "asn", "http_request")


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _quote(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, sort_keys=True)
    return text if len(text) <= _BODY_LIMIT else text[:_BODY_LIMIT] + "..."


def _parsed(parse: Callable[[Mapping[str, Any]], _T], data: Any, what: str) -> _T:
    try:
        if not isinstance(data, Mapping):
            raise TypeError(type(data).__name__)
        return parse(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise AuthentikError(
            f"reading an Authentik {what}",
            f"the reply does not have the shape of one ({type(exc).__name__}: {exc}): "
            f"{_quote(data)}",
            "check that AUTHENTIK_URL points at Authentik 2024.10 or later",
        ) from None
