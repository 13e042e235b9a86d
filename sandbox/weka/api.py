"""HTTP routing of `/api/v2`: parse the request, call the cluster, wrap the reply."""

from __future__ import annotations

import json
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from sandbox.weka import views
from sandbox.weka.cluster import Cluster
from sandbox.weka.core import Caller
from sandbox.weka.errors import ApiError
from sandbox.weka.quotas import QuotaLimits
from sandbox.weka.store import Store

BASE = "/api/v2"
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
_UNITS |= {"EB": 10**18, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}
_UNITS |= {"EIB": 2**60}


def parse_capacity(value: object, name: str) -> int:
    """Bytes, as a number or as Weka also takes them, with a unit: "5TB", "1GiB"."""
    if isinstance(value, bool):
        raise ApiError(400, f"{name} must be a capacity, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", value)
        if match and match.group(2).upper() in _UNITS:
            return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    raise ApiError(400, f"{name} must be a capacity in bytes or with a unit, got {value!r}")


@dataclass
class Request:
    caller: Caller | None
    params: dict[str, str]
    query: dict[str, str]
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def me(self) -> Caller:
        assert self.caller is not None, "route declared without authentication"
        return self.caller

    def text(self, key: str, default: str | None = None) -> str:
        value = self.optional_text(key)
        if value is None:
            if default is None:
                raise ApiError(400, f"Missing required field: {key}")
            return default
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.body.get(key)
        if value is not None and not isinstance(value, str):
            raise ApiError(400, f"{key} must be a string")
        return value

    def flag(self, key: str) -> bool | None:
        value = self.body.get(key)
        if value is not None and not isinstance(value, bool):
            raise ApiError(400, f"{key} must be a boolean")
        return value

    def number(self, key: str) -> int | None:
        value = self.body.get(key)
        return None if value is None else parse_capacity(value, key)


Handler = Callable[[Request], Any]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: str  # "none", "user" (any valid token), or "emulator" (Root cluster admin)
    mutates: bool


class WekaApi:
    def __init__(self, store: Store, cluster: Cluster) -> None:
        self.store = store
        self.cluster = cluster
        self.routes: list[Route] = []
        self._add_routes()

    def route(
        self, method: str, path: str, handler: Handler, auth: str = "user", mutates: bool = False
    ) -> None:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path)
        self.routes.append(Route(method, re.compile(f"{BASE}{regex}/?"), handler, auth, mutates))

    def _add_routes(self) -> None:
        c, r = self.cluster, self.route
        r("GET", "/healthcheck", lambda q: "OK", auth="none")
        r("POST", "/login", self.login, auth="none", mutates=True)
        r("POST", "/login/refresh", self.refresh, auth="none", mutates=True)
        r("GET", "/cluster", lambda q: views.cluster_view(c))
        r("GET", "/security/defaultTokensExpiry", self.token_expiry)

        r("GET", "/organizations", lambda q: [views.org_view(c, o) for o in c.list_orgs(q.me)])
        r("POST", "/organizations", self.create_org, mutates=True)
        r("GET", "/organizations/multipleOrgsExist", lambda q: len(c.state.orgs) > 1)
        r("GET", "/organizations/{uid}", lambda q: self._org(c.get_org(q.me, q.params["uid"])))
        r("PUT", "/organizations/{uid}", self.rename_org, mutates=True)
        r("PUT", "/organizations/{uid}/limits", self.set_org_limits, mutates=True)
        r("DELETE", "/organizations/{uid}", self.delete_org, mutates=True)

        r("GET", "/users", lambda q: [views.user_view(c, u) for u in c.list_users(q.me)])
        r("POST", "/users", self.create_user, mutates=True)
        r("GET", "/users/whoami", lambda q: views.whoami_view(q.me))
        r("PUT", "/users/{uid}", self.update_user, mutates=True)
        r("PUT", "/users/{uid}/password", self.set_password, mutates=True)
        r("DELETE", "/users/{uid}/revoke", self.revoke_user, mutates=True)
        r("DELETE", "/users/{uid}", self.delete_user, mutates=True)

        r("GET", "/fileSystems", self.list_fs)
        r("POST", "/fileSystems", self.create_fs, mutates=True)
        r("GET", "/fileSystems/{uid}", lambda q: self._fs(c.find_fs(q.me, q.params["uid"])))
        r("PUT", "/fileSystems/{uid}", self.update_fs, mutates=True)
        r("DELETE", "/fileSystems/{uid}", self.delete_fs, mutates=True)
        r("POST", "/fileSystems/download", self.download_fs, mutates=True)
        r("POST", "/fileSystems/{uid}/objectStoreBuckets", self.attach_obs, mutates=True)
        # The name before 4.x; the 5.1 API still serves it, as deprecated.
        r("POST", "/fileSystems/{uid}/objectStores", self.attach_obs, mutates=True)
        r("GET", "/fileSystems/{uid}/resolvePath", self.resolve_path)
        r("GET", "/fileSystems/{uid}/quota", self.list_quotas)
        r("GET", "/fileSystems/{uid}/quota/{inode}", self.get_quota)
        r("PUT", "/fileSystems/{uid}/quota/{inode}", self.put_quota, mutates=True)
        r("PATCH", "/fileSystems/{uid}/quota/{inode}", self.patch_quota, mutates=True)
        r("DELETE", "/fileSystems/{uid}/quota/{inode}", self.delete_quota, mutates=True)

        r("GET", "/snapshots", self.list_snapshots)
        r("POST", "/snapshots", self.create_snapshot, mutates=True)
        r("GET", "/snapshots/{uid}", self.get_snapshot)
        r("PUT", "/snapshots/{uid}", self.update_snapshot, mutates=True)
        r("DELETE", "/snapshots/{uid}", self.delete_snapshot, mutates=True)
        r("POST", "/snapshots/{uid}/upload", self.upload_snapshot, mutates=True)
        r("POST", "/snapshots/locatorInfo", self.locator_info)

        e = "/_emulator"
        r("POST", f"{e}/fileSystems/{{uid}}/directories", self.mkdir, "emulator", True)
        r("PUT", f"{e}/fileSystems/{{uid}}/usage", self.set_usage, "emulator", True)
        r("PUT", f"{e}/fileSystems/{{uid}}/mounts", self.set_mounts, "emulator", True)
        r("POST", f"{e}/expire-tokens", self.expire_tokens, "emulator", True)
        r("PUT", f"{e}/settle", self.set_settle, "emulator")

    # --- dispatch ------------------------------------------------------------------------

    def dispatch(
        self, method: str, target: str, authorization: str | None, raw_body: bytes
    ) -> tuple[int, Any]:
        """The status and JSON reply for one request."""
        url = urlsplit(target)
        try:
            route, params = self._match(method, url.path)
            with self.store.lock:
                caller = None
                if route.auth != "none":
                    caller = self.cluster.authenticate(authorization)
                    if route.auth == "emulator" and caller.user.role != "ClusterAdmin":
                        raise ApiError(403, "Emulator controls need a Root cluster admin token")
                query = dict(parse_qsl(url.query))
                request = Request(caller, params, query, _json_object(raw_body))
                data = route.handler(request)
                if route.mutates or self.cluster.directories_changed:
                    self.store.save()
                    self.cluster.directories_changed = False
            return 200, {"data": data}
        except ApiError as error:
            return error.status, error.body()
        except Exception as error:  # an emulator bug must still answer like the real API
            traceback.print_exc(file=sys.stderr)
            return 500, {"message": f"Internal error: {error}"}

    def _match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        path_known = False
        for route in self.routes:
            match = route.pattern.fullmatch(path)
            if match is None:
                continue
            path_known = True
            if route.method == method:
                return route, match.groupdict()
        if path_known:
            raise ApiError(405, f"Method {method} is not allowed on {path}")
        raise ApiError(404, f"No such API endpoint: {path}")

    # --- sessions ------------------------------------------------------------------------

    def login(self, q: Request) -> Any:
        return self.cluster.login(q.text("username"), q.text("password"), q.text("org", "Root"))

    def refresh(self, q: Request) -> Any:
        return self.cluster.refresh(q.text("refresh_token"))

    def token_expiry(self, q: Request) -> Any:
        tokens = self.cluster.tokens
        return {
            "access_token_expiry": tokens.access_ttl,
            "refresh_token_expiry": tokens.refresh_ttl,
        }

    # --- organizations -------------------------------------------------------------------

    def _org(self, org: Any) -> Any:
        return views.org_view(self.cluster, org)

    def create_org(self, q: Request) -> Any:
        org = self.cluster.create_org(
            q.me,
            q.text("name"),
            q.text("username"),
            q.text("password"),
            q.number("ssd_quota") or 0,
            q.number("total_quota") or 0,
        )
        return self._org(org)

    def rename_org(self, q: Request) -> Any:
        return self._org(self.cluster.rename_org(q.me, q.params["uid"], q.text("new_name")))

    def set_org_limits(self, q: Request) -> Any:
        uid, ssd, total = q.params["uid"], q.number("ssd_quota"), q.number("total_quota")
        return self._org(self.cluster.set_org_limits(q.me, uid, ssd, total))

    def delete_org(self, q: Request) -> Any:
        self.cluster.delete_org(q.me, q.params["uid"])
        return None

    # --- users ---------------------------------------------------------------------------

    def create_user(self, q: Request) -> Any:
        user = self.cluster.create_user(
            q.me,
            q.text("username"),
            q.text("password"),
            q.text("role"),
            q.number("posix_uid"),
            q.number("posix_gid"),
        )
        return views.user_view(self.cluster, user)

    def update_user(self, q: Request) -> Any:
        """`weka user update`: the role (and posix ids); any other field is not taken, a
        password included (it has a call of its own)."""
        user = self.cluster.update_user(q.me, q.params["uid"], q.optional_text("role"), None)
        return views.user_view(self.cluster, user)

    def set_password(self, q: Request) -> Any:
        """`weka user passwd <password> --username <user>`."""
        user = self.cluster.update_user(q.me, q.params["uid"], None, q.text("password"))
        return views.user_view(self.cluster, user)

    def delete_user(self, q: Request) -> Any:
        self.cluster.delete_user(q.me, q.params["uid"])
        return None

    def revoke_user(self, q: Request) -> Any:
        self.cluster.revoke_user(q.me, q.params["uid"])
        return None

    # --- filesystems ---------------------------------------------------------------------

    def _fs(self, fs: Any) -> Any:
        return views.fs_view(self.cluster, fs)

    def list_fs(self, q: Request) -> Any:
        found = self.cluster.list_fs(q.me, q.query.get("name"), q.query.get("group_name"))
        return [self._fs(fs) for fs in found]

    def create_fs(self, q: Request) -> Any:
        total = q.number("total_capacity")
        if total is None:
            raise ApiError(400, "Missing required field: total_capacity")
        fs = self.cluster.create_fs(
            q.me,
            q.text("name"),
            q.text("group_name"),
            total,
            q.number("ssd_capacity"),
            bool(q.flag("auth_required")),
            bool(q.flag("encrypted")),
            q.optional_text("obs_name"),
        )
        self.cluster.background.start(("fs", fs.uid))
        return self._fs(fs)

    def update_fs(self, q: Request) -> Any:
        fs = self.cluster.update_fs(
            q.me,
            q.params["uid"],
            q.optional_text("new_name"),
            q.number("total_capacity"),
            q.number("ssd_capacity"),
            q.flag("auth_required"),
        )
        return self._fs(fs)

    def delete_fs(self, q: Request) -> Any:
        purge = q.query.get("purge_from_obs", "false").lower()
        if purge not in ("true", "false"):
            raise ApiError(400, "purge_from_obs must be true or false")
        self.cluster.delete_fs(q.me, q.params["uid"], purge_from_obs=purge == "true")
        return None

    def attach_obs(self, q: Request) -> Any:
        mode = q.text("obs_mode", "WRITABLE")
        self.cluster.attach_object_store(q.me, q.params["uid"], q.text("obs_name"), mode)
        return None

    def download_fs(self, q: Request) -> Any:
        total, ssd = q.number("total_capacity"), q.number("ssd_capacity")
        if total is None or ssd is None:
            missing = "total_capacity" if total is None else "ssd_capacity"
            raise ApiError(400, f"Missing required field: {missing}")
        fs = self.cluster.download_fs(
            q.me,
            q.text("name"),
            q.text("group_name"),
            total,
            ssd,
            q.text("object_storage"),
            q.text("locator"),
            q.optional_text("snapshot_name"),
            q.optional_text("access_point"),
            bool(q.flag("auth_required")),
        )
        # The data comes down from the bucket in the background.
        self.cluster.background.start(("fs", fs.uid))
        return self._fs(fs)

    def resolve_path(self, q: Request) -> Any:
        if "path" not in q.query:
            raise ApiError(400, "Missing required query parameter: path")
        path, directory = self.cluster.resolve_path(q.me, q.params["uid"], q.query["path"])
        return views.path_view(path, directory)

    # --- quotas --------------------------------------------------------------------------

    def list_quotas(self, q: Request) -> Any:
        fs, quotas = self.cluster.list_quotas(q.me, q.params["uid"])
        return [views.quota_view(self.cluster, fs, path, quota) for path, quota in quotas]

    def get_quota(self, q: Request) -> Any:
        fs, path, quota = self.cluster.get_quota(q.me, q.params["uid"], q.params["inode"])
        return views.quota_view(self.cluster, fs, path, quota)

    def _set_quota(self, q: Request, patch: bool) -> Any:
        limits = QuotaLimits(
            hard_limit_bytes=q.number("hard_limit_bytes"),
            soft_limit_bytes=q.number("soft_limit_bytes"),
            grace_seconds=q.number("grace_seconds"),
            owner=q.optional_text("owner"),
        )
        uid, inode = q.params["uid"], q.params["inode"]
        fs, path, quota = self.cluster.set_quota(q.me, uid, inode, limits, patch)
        self.cluster.background.start(("quota", fs.uid, inode))
        return views.quota_view(self.cluster, fs, path, quota)

    def put_quota(self, q: Request) -> Any:
        return self._set_quota(q, patch=False)

    def patch_quota(self, q: Request) -> Any:
        return self._set_quota(q, patch=True)

    def delete_quota(self, q: Request) -> Any:
        self.cluster.delete_quota(q.me, q.params["uid"], q.params["inode"])
        return None

    # --- snapshots -----------------------------------------------------------------------

    def list_snapshots(self, q: Request) -> Any:
        found = self.cluster.list_snapshots(
            q.me, q.query.get("filesystem"), q.query.get("name"), q.query.get("access_point")
        )
        return [views.snapshot_view(self.cluster, s) for s in found]

    def create_snapshot(self, q: Request) -> Any:
        snap = self.cluster.create_snapshot(
            q.me,
            q.text("fs_uid"),
            q.text("name"),
            q.optional_text("access_point"),
            bool(q.flag("is_writable")),
        )
        return views.snapshot_view(self.cluster, snap)

    def get_snapshot(self, q: Request) -> Any:
        return views.snapshot_view(self.cluster, self.cluster.find_snapshot(q.me, q.params["uid"]))

    def update_snapshot(self, q: Request) -> Any:
        snap = self.cluster.update_snapshot(
            q.me,
            q.params["uid"],
            q.optional_text("new_name"),
            q.optional_text("access_point"),
            q.flag("is_writable"),
        )
        return views.snapshot_view(self.cluster, snap)

    def delete_snapshot(self, q: Request) -> Any:
        self.cluster.delete_snapshot(q.me, q.params["uid"])
        return None

    def upload_snapshot(self, q: Request) -> Any:
        snap = self.cluster.upload_snapshot(q.me, q.params["uid"], q.text("obs_site", "LOCAL"))
        self.cluster.background.start(("upload", snap.uid))
        return {"locator": snap.locator, "extra": {}}

    def locator_info(self, q: Request) -> Any:
        manifest = self.cluster.locator_info(q.me, q.text("object_storage"), q.text("locator"))
        return views.locator_info_view(manifest)

    # --- emulator controls ---------------------------------------------------------------

    def mkdir(self, q: Request) -> Any:
        path, directory = self.cluster.make_directory(q.params["uid"], q.text("path"))
        return views.path_view(path, directory)

    def set_usage(self, q: Request) -> Any:
        used = q.number("used_bytes")
        if used is None:
            raise ApiError(400, "Missing required field: used_bytes")
        path, directory = self.cluster.set_usage(q.params["uid"], q.text("path"), used)
        return {**views.path_view(path, directory), "used_bytes": directory.used_bytes}

    def set_mounts(self, q: Request) -> Any:
        mounted = q.flag("mounted")
        if mounted is None:
            raise ApiError(400, "Missing required field: mounted")
        fs = self.cluster.set_mounted(q.params["uid"], mounted)
        return {"uid": fs.uid, "mounted": fs.mounted}

    def set_settle(self, q: Request) -> Any:
        """How long background work stays unfinished from now on; answers the old value."""
        seconds = q.body.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            raise ApiError(400, "seconds must be a number of seconds, 0 or more")
        old = self.cluster.background.settle_seconds
        self.cluster.background.settle_seconds = float(seconds)
        return {"seconds": old}

    def expire_tokens(self, q: Request) -> Any:
        self.cluster.tokens.expire_access_tokens()
        return None


def _json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ApiError(400, f"Request body is not valid JSON: {error}") from error
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    return body


class RequestHandler(BaseHTTPRequestHandler):
    """Serves one connection; `api` is set on a subclass made by `handler_for`."""

    api: WekaApi
    protocol_version = "HTTP/1.1"  # keep-alive, as API clients expect
    server_version = "WekaEmulator/4.3"
    timeout = 60  # a stuck client must not pin a thread forever

    def _serve(self) -> None:
        started = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        status, reply = self.api.dispatch(
            self.command, self.path, self.headers.get("Authorization"), raw
        )
        payload = json.dumps(reply).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        elapsed = (time.monotonic() - started) * 1000
        # Only method, path and status: bodies and headers carry passwords and tokens. Written
        # before the body, so a client that has its answer finds the request in the log.
        path = urlsplit(self.path).path
        sys.stderr.write(f"weka {self.command} {path} {status} {elapsed:.1f}ms\n")
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        # Protocol-level errors only (bad request line, timeouts); never request contents.
        sys.stderr.write(f"weka {self.client_address[0]} {format % args}\n")


def handler_for(api: WekaApi) -> type[RequestHandler]:
    return type("BoundRequestHandler", (RequestHandler,), {"api": api})
