"""A small client of the Weka REST API v2 (Weka 4.3), with no Pulumi in it.

Every reply is `{"data": ...}` and every error `{"message": ...}`. Access tokens last five
minutes: the session (`session.WekaAuth`) logs in on first use and, when the cluster answers
401, refreshes the token (or logs in again) and sends the request once more; replies are read
into the records of `records`. Objects are scoped to the organization of the token: a client
logged in to Root as a ClusterAdmin manages organizations, one logged in to a tenant's
organization as its OrgAdmin manages that organization's filesystems, quotas and users.
Failures become `WekaError`s that name the call, its status and the backend's own message, and
never a password or a token.

A snapshot lives in its filesystem and is deleted with it. What outlives a filesystem is a
snapshot uploaded (Snap-To-Object) to an object store bucket attached to it: the upload gives a
locator, by which the bucket's copy is read (`locator_info`) and a new filesystem made from it
(`create_filesystem_from_locator`), on this cluster or any other the bucket is attached to.

Requests are sent again under the backend clients' one policy (`providers.http_retry`): any
request after a connection that never opened or a 429 or 503, only idempotent ones (GET, HEAD,
PUT, DELETE) after another 5xx or a lost reply (a repeated POST would meet its own object as a
409; the providers' create adopts by ownership mark on the next run instead), never after other
4xx. The cluster's 500 "Directory has no quota" is an answer, not a failure. Waits: RETRY_DELAYS.

"Not there" comes in three shapes, all read as absent where the caller allows it: 404, a 400
naming `FilesystemDoesNotExistException` or `SnapshotDoesNotExistException` (or `PATH_NOT_FOUND`
for a path), and that 500. The cluster also finishes work after it has answered: a new
filesystem is usable once `is_ready`, a quota once `ACTIVE`, an upload once `SYNCHRONIZED`; the
client waits for each (`_until`), bounded, and names the object when it gives up.
docs/backends.md lists every call with the reference it was checked against.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, TypeVar

import httpx

from providers.call_log import httpx_hooks
from providers.errors import WekaError
from providers.http_retry import NoResponseError, RetryPolicy, send
from providers.progress import EVERY as PROGRESS_EVERY
from providers.weka.records import (
    Capacity,
    FileSystem,
    LocatorInfo,
    Organization,
    Quota,
    Snapshot,
    SnapshotUpload,
    User,
)
from providers.weka.session import WekaAuth, shared_auth
from providers.weka.settings import Credentials, Settings

__all__ = ["WekaClient"]

# Waits between attempts: four tries in about 3.5 s, short enough for a `pulumi up` to stay
# responsive, long enough to ride out a management-process failover. A numeric Retry-After on a
# retried answer replaces the wait, up to the policy's cap (http_retry.RetryPolicy).
RETRY_DELAYS = (0.5, 1.0, 2.0)
# The real cluster answers 500 for a directory without a quota, with this phrase at the start of
# a longer message (csi-wekafs looks for it in the message).
_NO_QUOTA = "Directory has no quota"
# What a 400 names when the object asked for is not there (csi-wekafs: filesystem.go,
# snapshot.go, resolvepath.go): the class in the reply's data, or the code in its message.
_MISSING = ("FilesystemDoesNotExistException", "SnapshotDoesNotExistException", "PATH_NOT_FOUND")
# How long the cluster's background work may take before the client gives up: a filesystem
# becoming ready, a quota becoming ACTIVE, an upload SYNCHRONIZED; polled ever less often.
READY_TIMEOUT = 300.0
UPLOAD_TIMEOUT = 600.0
_POLL_FIRST, _POLL_MOST = 0.25, 2.0

_T = TypeVar("_T")


class WekaClient:
    """One user's session with the cluster. Use it as a context manager, one per operation."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        verify: ssl.SSLContext | bool = True,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry_delays: Sequence[float] = RETRY_DELAYS,
        sleep: Callable[[float], None] = time.sleep,
        shared_login: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.org = credentials.org
        self._progress = progress
        self._auth = (shared_auth if shared_login else WekaAuth)(base_url, credentials)
        self._retry = RetryPolicy(tuple(retry_delays))
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            auth=self._auth,
            verify=verify,
            transport=transport,
            timeout=timeout,
            event_hooks=httpx_hooks("weka"),
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        credentials: Credentials | None = None,
        shared_login: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> WekaClient:
        """A client of the cluster in `settings`, as its cluster admin unless `credentials`
        (an organization's admin) are given; with `shared_login`, in the process's one session
        for those credentials (`shared_auth`). `progress` is told, every PROGRESS_EVERY
        seconds of a wait for the cluster's background work, what it waits for and in what state."""
        return cls(
            settings.url,
            credentials or Credentials(settings.username, settings.password),
            verify=settings.tls_verify(),
            shared_login=shared_login,
            progress=progress,
        )

    def __enter__(self) -> WekaClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        doing: str,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        absent_ok: bool = False,
        next_step: str = "",
    ) -> Any:
        """The `data` of the reply to `method path` (relative to the API base). With
        `absent_ok`, None when the object is missing: 404, or 500 "Directory has no quota".
        Otherwise a failure raises WekaError(doing, <call, status, backend message>, next_step
        or a step that fits the status)."""
        response = self._send(method, path, json, params, doing)
        # After a failed login the response is the login's: never mistake it for an answer.
        answered = response.request.url.path == self._http.base_url.join(path).path
        if response.is_success and answered:
            return self._unwrap(response, doing)
        message = self._auth.redact(_message(response))
        if absent_ok and answered and _absent(response):
            return None
        call = f"{response.request.method} {response.request.url.path}"
        status = response.status_code
        raise WekaError(
            doing,
            f"{call} answered {status}: {message}",
            next_step or _next_step(status),
            refused=status in (401, 403),
        )

    def _send(
        self,
        method: str,
        path: str,
        json: Any,
        params: Mapping[str, str] | None,
        doing: str,
    ) -> httpx.Response:
        try:
            return send(
                self._http,
                method,
                path,
                policy=self._retry,
                params=params,
                json=json,
                final=_no_quota,
                sleep=self._sleep,
            ).response
        except NoResponseError as failed:
            error = failed.error
            raise WekaError(
                doing,
                f"{method} {self._http.base_url.join(path).path} reached no answer: "
                f"{type(error).__name__}: {self._auth.redact(str(error))}",
                "check WEKA_URL and that the cluster's management API is up",
            ) from error

    def _unwrap(self, response: httpx.Response, doing: str) -> Any:
        try:
            return response.json()["data"]
        except (ValueError, KeyError, TypeError) as error:
            raise WekaError(
                doing,
                f"{response.request.method} {response.request.url.path} answered "
                f'{response.status_code} without Weka\'s {{"data": ...}} envelope',
                "check that WEKA_URL points at the Weka API (https://HOST:14000/api/v2)",
            ) from error

    def _parse(self, parse: Callable[[Any], _T], data: Any, doing: str) -> _T:
        try:
            return parse(data)
        except (KeyError, TypeError, ValueError) as error:
            raise WekaError(
                doing, f"the reply lacks or garbles the field {error}", "report it: API mismatch"
            ) from error

    # --- organizations (cluster admin) --------------------------------------------------------

    def logs_in(self) -> bool:
        """Whether this client's credentials are accepted (a login, then `GET users/whoami`)."""
        doing = f"logging in to Weka organization {self.org!r}"
        response = self._send("GET", "users/whoami", None, None, doing)
        if response.is_success:
            return True
        if response.status_code == 401 and response.request.url.path.endswith("/login"):
            return False
        call = f"{response.request.method} {response.request.url.path}"
        message = self._auth.redact(_message(response))
        raise WekaError(
            doing,
            f"{call} answered {response.status_code}: {message}",
            _next_step(response.status_code),
            refused=response.status_code in (401, 403),
        )

    def capacity(self) -> Capacity:
        """The cluster's capacity (`GET /cluster`, as csi-wekafs reads it before it provisions)."""
        doing = "reading the Weka cluster's capacity"
        return self._parse(Capacity.from_json, self.request("GET", "cluster", doing=doing), doing)

    def list_organizations(self) -> list[Organization]:
        doing = "listing Weka organizations"
        data = self.request("GET", "organizations", doing=doing)
        return [self._parse(Organization.from_json, item, doing) for item in data]

    def find_organization(self, name: str) -> Organization | None:
        return next((o for o in self.list_organizations() if o.name == name), None)

    def get_organization(self, uid: str) -> Organization | None:
        doing = f"reading Weka organization {uid}"
        data = self.request("GET", f"organizations/{uid}", doing=doing, absent_ok=True)
        return None if data is None else self._parse(Organization.from_json, data, doing)

    def create_organization(
        self, name: str, admin_username: str, admin_password: str, ssd_quota: int, total_quota: int
    ) -> Organization:
        doing = f"creating Weka organization {name!r}"
        body = {
            "name": name,
            "username": admin_username,
            "password": admin_password,
            "ssd_quota": ssd_quota,
            "total_quota": total_quota,
        }
        data = self.request("POST", "organizations", doing=doing, json=body)
        return self._parse(Organization.from_json, data, doing)

    def rename_organization(self, uid: str, name: str) -> Organization:
        doing = f"renaming Weka organization {uid} to {name!r}"
        data = self.request("PUT", f"organizations/{uid}", doing=doing, json={"new_name": name})
        return self._parse(Organization.from_json, data, doing)

    def set_organization_limits(self, uid: str, ssd_quota: int, total_quota: int) -> Organization:
        doing = f"setting the quotas of Weka organization {uid}"
        body = {"ssd_quota": ssd_quota, "total_quota": total_quota}
        data = self.request("PUT", f"organizations/{uid}/limits", doing=doing, json=body)
        return self._parse(Organization.from_json, data, doing)

    def delete_organization(self, uid: str, name: str) -> None:
        doing = f"deleting Weka organization {name!r} ({uid})"
        self.request(
            "DELETE",
            f"organizations/{uid}",
            doing=doing,
            absent_ok=True,
            next_step="delete its filesystems first (each is gated on a verified snapshot)",
        )

    # --- users of the client's organization ---------------------------------------------------

    def list_users(self) -> list[User]:
        doing = f"listing the users of Weka organization {self.org!r}"
        data = self.request("GET", "users", doing=doing)
        return [self._parse(User.from_json, item, doing) for item in data]

    def create_user(self, username: str, password: str, role: str) -> User:
        doing = f"creating Weka user {username!r} in organization {self.org!r}"
        body = {"username": username, "password": password, "role": role}
        data = self.request("POST", "users", doing=doing, json=body)
        return self._parse(User.from_json, data, doing)

    def update_user(self, uid: str, username: str, *, role: str) -> User:
        """`weka user update`: the role (and, for S3 users, posix ids); never the password."""
        doing = f"updating Weka user {username!r} in organization {self.org!r}"
        data = self.request("PUT", f"users/{uid}", doing=doing, json={"role": role})
        return self._parse(User.from_json, data, doing)

    def set_password(self, uid: str, username: str, password: str) -> None:
        """`weka user passwd <password> --username <username>`, as an admin of the user's
        organization; the user's sessions must log in again."""
        doing = f"setting the password of Weka user {username!r} in organization {self.org!r}"
        self.request("PUT", f"users/{uid}/password", doing=doing, json={"password": password})

    def delete_user(self, uid: str, username: str) -> None:
        doing = f"deleting Weka user {username!r} from organization {self.org!r}"
        self.request("DELETE", f"users/{uid}", doing=doing, absent_ok=True)

    # --- filesystems of the client's organization ---------------------------------------------

    def find_filesystem(self, name: str) -> FileSystem | None:
        doing = f"looking up Weka filesystem {name!r} in organization {self.org!r}"
        data = self.request("GET", "fileSystems", doing=doing, params={"name": name})
        found = [self._parse(FileSystem.from_json, item, doing) for item in data]
        return next((fs for fs in found if fs.name == name), None)

    def get_filesystem(self, uid: str) -> FileSystem | None:
        doing = f"reading Weka filesystem {uid} in organization {self.org!r}"
        data = self.request("GET", f"fileSystems/{uid}", doing=doing, absent_ok=True)
        return None if data is None else self._parse(FileSystem.from_json, data, doing)

    def create_filesystem(
        self, name: str, group_name: str, total_capacity: int, ssd_capacity: int
    ) -> FileSystem:
        doing = f"creating Weka filesystem {name!r} in organization {self.org!r}"
        body = {
            "name": name,
            "group_name": group_name,
            "total_capacity": total_capacity,
            "ssd_capacity": ssd_capacity,
        }
        data = self.request(
            "POST",
            "fileSystems",
            doing=doing,
            json=body,
            next_step="lower the capacity or raise the organization's quota, as the message says",
        )
        return self.wait_ready(self._parse(FileSystem.from_json, data, doing))

    def wait_ready(self, fs: FileSystem, timeout: float = READY_TIMEOUT) -> FileSystem:
        """The filesystem once the cluster reports it `is_ready` (it makes it in the background
        after answering); a WekaError naming it when it is being removed or not ready in time."""
        doing = f"waiting for Weka filesystem {fs.name!r} ({fs.uid}) to be ready"
        last = fs

        def ready() -> FileSystem | None:
            nonlocal last
            if last.is_ready:
                return last
            now = self.get_filesystem(fs.uid)
            if now is None or now.is_removing:
                raise WekaError(doing, "it is gone or being removed", _next_step(404))
            last = now
            return now if now.is_ready else None

        return self._until(doing, ready, timeout, lambda: f"{last.status or 'not ready'}")

    def _until(
        self,
        doing: str,
        check: Callable[[], _T | None],
        timeout: float,
        state: Callable[[], str],
    ) -> _T:
        """What `check` gives once it gives something, asked ever less often up to `timeout`
        seconds, telling `progress` how it goes every PROGRESS_EVERY seconds of pauses; then a
        WekaError that says how long it waited and in what state."""
        deadline, pause = time.monotonic() + timeout, _POLL_FIRST
        paused, told = 0.0, 0
        while (found := check()) is None:
            if time.monotonic() + pause > deadline:
                raise WekaError(
                    doing,
                    f"still {state()} after {timeout:.0f}s",
                    "the cluster goes on with it: check `weka status` and the cluster's events "
                    "(`weka events`), then run `pulumi up` again",
                )
            if self._progress is not None and paused >= (told + 1) * PROGRESS_EVERY:
                told = int(paused // PROGRESS_EVERY)
                self._progress(f"{doing}: still {state()} after {paused:.0f}s")
            self._sleep(pause)
            paused += pause
            pause = min(pause * 2, _POLL_MOST)
        return found

    def update_filesystem(
        self, uid: str, name: str, total_capacity: int, ssd_capacity: int
    ) -> FileSystem:
        doing = f"updating Weka filesystem {name!r} ({uid}) in organization {self.org!r}"
        body = {"new_name": name, "total_capacity": total_capacity, "ssd_capacity": ssd_capacity}
        data = self.request("PUT", f"fileSystems/{uid}", doing=doing, json=body)
        return self._parse(FileSystem.from_json, data, doing)

    def delete_filesystem(self, uid: str, name: str) -> None:
        """Deletes the filesystem and its snapshots. What was uploaded from it stays in the
        object store: this never asks for `purge_from_obs`."""
        doing = f"deleting Weka filesystem {name!r} ({uid}) in organization {self.org!r}"
        try:
            self.request("DELETE", f"fileSystems/{uid}", doing=doing, absent_ok=True)
        except WekaError as error:
            if "in use" not in error.backend_says:
                raise
            raise WekaError(
                error.doing,
                error.backend_says,
                "a client still mounts it, often a stale wekafs mount on a node that left the "
                "cluster: find the holder, unmount it, and run the destroy again",
            ) from error

    # --- directories and quotas ---------------------------------------------------------------

    def resolve_path(self, fs_uid: str, path: str) -> str | None:
        """The inode id of the directory at `path`, or None when no such directory exists."""
        doing = f"resolving {path} in Weka filesystem {fs_uid}"
        data = self.request(
            "GET",
            f"fileSystems/{fs_uid}/resolvePath",
            doing=doing,
            params={"path": path},
            absent_ok=True,
        )
        return None if data is None else str(self._parse(lambda d: d["inode_id"], data, doing))

    def get_quota(self, fs_uid: str, inode_id: str, path: str) -> Quota | None:
        """The quota of the directory `path` (its inode `inode_id`), or None when it has none."""
        doing = f"reading the quota of {path} (inode {inode_id}) in Weka filesystem {fs_uid}"
        data = self.request(
            "GET", f"fileSystems/{fs_uid}/quota/{inode_id}", doing=doing, absent_ok=True
        )
        return None if data is None else self._quota(data, path, doing)

    def _quota(self, data: Any, path: str, doing: str) -> Quota:
        quota = self._parse(Quota.from_json, data, doing)
        return replace(quota, path=quota.path or path)

    def set_quota(
        self,
        fs_uid: str,
        inode_id: str,
        *,
        path: str,
        hard_limit_bytes: int,
        soft_limit_bytes: int,
        grace_seconds: int,
        owner: str,
    ) -> Quota:
        """Create or replace the quota (PUT sets every field; a missing limit would mean 0)."""
        doing = f"setting the quota of {path} in Weka filesystem {fs_uid}"
        body = {
            "hard_limit_bytes": hard_limit_bytes,
            "soft_limit_bytes": soft_limit_bytes,
            "grace_seconds": grace_seconds,
            "owner": owner,
        }
        data = self.request("PUT", f"fileSystems/{fs_uid}/quota/{inode_id}", doing=doing, json=body)
        quota = self._quota(data, path, doing)
        waiting = f"waiting for the quota of {path} in Weka filesystem {fs_uid} to be ACTIVE"

        def active() -> Quota | None:
            nonlocal quota
            if quota.status == "ACTIVE":
                return quota
            if quota.status == "ERROR":
                raise WekaError(waiting, "the cluster reports it ERROR", _next_step(500))
            quota = self.get_quota(fs_uid, inode_id, path) or quota
            return None

        return self._until(waiting, active, READY_TIMEOUT, lambda: quota.status)

    def delete_quota(self, fs_uid: str, inode_id: str, path: str) -> None:
        doing = f"removing the quota of {path} in Weka filesystem {fs_uid}"
        self.request(
            "DELETE", f"fileSystems/{fs_uid}/quota/{inode_id}", doing=doing, absent_ok=True
        )

    # --- object stores ------------------------------------------------------------------------

    def attach_object_store(
        self, fs_uid: str, obs_name: str, *, mode: str = "WRITABLE"
    ) -> FileSystem:
        """Attaches the object store bucket `obs_name` to the filesystem (`weka fs tier s3
        attach`), unless it is attached already, and returns the filesystem as the cluster
        then reports it. WRITABLE makes it tiered, so its snapshots can be uploaded."""
        doing = (
            f"attaching object store bucket {obs_name!r} to Weka filesystem {fs_uid} in "
            f"organization {self.org!r}"
        )
        fs = self.get_filesystem(fs_uid)
        if fs is None:
            raise WekaError(doing, f"filesystem {fs_uid} does not exist", _next_step(404))
        if any(bucket.name == obs_name for bucket in fs.object_stores):
            return fs
        self.request(
            "POST",
            f"fileSystems/{fs_uid}/objectStoreBuckets",
            doing=doing,
            json={"obs_name": obs_name, "obs_mode": mode},
            next_step="name an object store bucket the cluster has (`weka fs tier s3` lists "
            "them); a filesystem takes one local bucket",
        )
        attached = self.get_filesystem(fs_uid)
        if attached is None:
            raise WekaError(doing, f"filesystem {fs_uid} is gone", _next_step(404))
        return attached

    # --- snapshots ----------------------------------------------------------------------------

    def get_snapshot(self, uid: str) -> Snapshot | None:
        doing = f"reading Weka snapshot {uid} in organization {self.org!r}"
        data = self.request("GET", f"snapshots/{uid}", doing=doing, absent_ok=True)
        return None if data is None else self._parse(Snapshot.from_json, data, doing)

    def list_snapshots(self, fs_name: str) -> list[Snapshot]:
        """The snapshots of the filesystem named `fs_name`, in the client's organization."""
        doing = f"listing the snapshots of Weka filesystem {fs_name!r} in organization {self.org!r}"
        data = self.request("GET", "snapshots", doing=doing, params={"filesystem": fs_name})
        found = [self._parse(Snapshot.from_json, item, doing) for item in data]
        # Filtered here too, as csi-wekafs does: a cluster that ignores the query lists them all.
        return [snap for snap in found if snap.filesystem == fs_name]

    def find_snapshot(self, fs_name: str, name: str) -> Snapshot | None:
        return next((s for s in self.list_snapshots(fs_name) if s.name == name), None)

    def create_snapshot(
        self,
        fs_uid: str,
        name: str,
        *,
        access_point: str | None = None,
        writable: bool = False,
    ) -> Snapshot:
        """A snapshot of the filesystem as it is now, read-only unless `writable` (only a
        read-only one can be uploaded). Without `access_point` the cluster names its directory
        after the time (`@GMT-...`)."""
        doing = (
            f"creating Weka snapshot {name!r} of filesystem {fs_uid} in organization {self.org!r}"
        )
        body: dict[str, Any] = {"fs_uid": fs_uid, "name": name, "is_writable": writable}
        if access_point:
            body["access_point"] = access_point
        data = self.request(
            "POST",
            "snapshots",
            doing=doing,
            json=body,
            next_step="a snapshot of that name or access point exists in the filesystem: "
            "find_snapshot reads it, or choose another name",
        )
        return self._parse(Snapshot.from_json, data, doing)

    def delete_snapshot(self, uid: str, name: str) -> None:
        """Deletes the snapshot from its filesystem; an uploaded copy stays in the object store."""
        doing = f"deleting Weka snapshot {name!r} ({uid}) in organization {self.org!r}"
        self.request("DELETE", f"snapshots/{uid}", doing=doing, absent_ok=True)

    def upload_snapshot(self, uid: str, *, obs_site: str = "LOCAL") -> SnapshotUpload:
        """Uploads the snapshot to its filesystem's object store bucket (Snap-To-Object) and
        returns its locator. A real cluster answers at once and uploads in the background:
        `get_snapshot(uid).uploaded` says when the upload is complete. A snapshot that has a
        locator already is not uploaded again (a rerun after a lost answer): its locator is
        returned."""
        snap = self.get_snapshot(uid)
        if snap is None:
            doing = f"uploading Weka snapshot {uid} in organization {self.org!r}"
            raise WekaError(doing, f"snapshot {uid} does not exist", _next_step(404))
        if snap.locator:
            return SnapshotUpload(uid, snap.locator)
        doing = (
            f"uploading Weka snapshot {snap.name!r} ({uid}) of filesystem {snap.filesystem!r} "
            f"in organization {self.org!r} to its {obs_site} object store bucket"
        )
        data = self.request(
            "POST",
            f"snapshots/{uid}/upload",
            doing=doing,
            json={"obs_site": obs_site},
            next_step="attach a WRITABLE object store bucket to the filesystem first "
            "(attach_object_store), and upload a read-only snapshot",
        )
        locator = self._parse(lambda d: str(d["locator"]), data, doing)
        if not locator:
            raise WekaError(
                doing, "the upload answered without a locator", "report it: API mismatch"
            )
        return SnapshotUpload(uid, locator)

    def wait_uploaded(self, uid: str, timeout: float = UPLOAD_TIMEOUT) -> Snapshot:
        """The snapshot once its upload is SYNCHRONIZED (the cluster uploads in the
        background after answering)."""
        doing = f"waiting for the upload of Weka snapshot {uid} in organization {self.org!r}"
        last = ""

        def synchronized() -> Snapshot | None:
            nonlocal last
            snap = self.get_snapshot(uid)
            if snap is None:
                raise WekaError(doing, "the snapshot is gone", _next_step(404))
            last = snap.stow_status or "not started"
            return snap if snap.uploaded else None

        return self._until(doing, synchronized, timeout, lambda: last)

    # --- restoring from an object store -------------------------------------------------------

    def locator_info(self, obs_name: str, locator: str) -> LocatorInfo:
        """What the bucket `obs_name` holds at `locator`, read from the bucket: proof that an
        upload is there, whatever became of its filesystem."""
        doing = f"reading the snapshot uploaded at {locator} in object store bucket {obs_name!r}"
        data = self.request(
            "POST",
            "snapshots/locatorInfo",
            doing=doing,
            json={"object_storage": obs_name, "locator": locator},
            next_step="check the locator and the bucket's name; a snapshot is there only once "
            "its upload is SYNCHRONIZED",
        )
        return self._parse(LocatorInfo.from_json, data, doing)

    def create_filesystem_from_locator(
        self,
        name: str,
        group_name: str,
        total_capacity: int,
        ssd_capacity: int,
        *,
        obs_name: str,
        locator: str,
        snapshot_name: str | None = None,
        access_point: str | None = None,
    ) -> FileSystem:
        """A new filesystem made from the snapshot uploaded at `locator` into the object store
        bucket `obs_name` (`weka fs download`), tiered on that bucket and holding the snapshot,
        under its uploaded name and access point unless others are given. A real cluster
        answers at once and fetches the data in the background."""
        doing = (
            f"creating Weka filesystem {name!r} in organization {self.org!r} from the snapshot "
            f"uploaded at {locator} in object store bucket {obs_name!r}"
        )
        body: dict[str, Any] = {
            "name": name,
            "group_name": group_name,
            "total_capacity": total_capacity,
            "ssd_capacity": ssd_capacity,
            "object_storage": obs_name,
            "locator": locator,
        }
        if snapshot_name:
            body["snapshot_name"] = snapshot_name
        if access_point:
            body["access_point"] = access_point
        data = self.request(
            "POST",
            "fileSystems/download",
            doing=doing,
            json=body,
            next_step="check the locator and bucket recorded at offboarding (`locator_info` "
            "reads what the bucket holds there), the name, and the organization's quota",
        )
        return self.wait_ready(self._parse(FileSystem.from_json, data, doing))


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return response.text.strip()[:300]


def _no_quota(response: httpx.Response) -> bool:
    """The cluster's answer for a directory without a quota: final, not a failure to retry."""
    return response.status_code == 500 and _NO_QUOTA in _message(response)


def _absent(response: httpx.Response) -> bool:
    """Whether the reply says the object asked for is not there: 404; a 400 naming a missing
    filesystem, snapshot or path (in its data's `exceptionClass` or its message); or the 500
    of a directory without a quota."""
    if response.status_code == 404 or _no_quota(response):
        return True
    if response.status_code != 400:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    data = body.get("data") if isinstance(body, dict) else None
    named = [_message(response)]
    if isinstance(data, dict):
        named += [str(data.get("exceptionClass") or ""), str(data.get("message") or "")]
    return any(missing in text for text in named for missing in _MISSING)


def _next_step(status: int) -> str:
    if status == 401:
        return (
            "check the credentials: WEKA_USERNAME with WEKA_PASSWORD or WEKA_PASSWORD_FILE for "
            "the cluster admin, or the organization admin's password; if the organization was "
            "deleted outside Pulumi, `pulumi state delete` the resources that were in it"
        )
    if status == 403:
        return "log in as a ClusterAdmin of Root, or as the organization's OrgAdmin"
    if status == 404:
        return "it is gone from the cluster: `pulumi refresh` brings the state up to date"
    if status == 409:
        return "an object of that name exists already: see the resource's ownership rule"
    if status >= 500:
        return "the cluster failed after retries: check its health (`weka status`) and retry"
    return "change the resource's inputs as the message says"
