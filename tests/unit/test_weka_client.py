"""The Weka client (providers.weka.client) on a mock transport: its retries, its tokens and how it
reads the cluster's answers, with no cluster or emulator running."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from providers.errors import WekaError
from providers.weka.client import WekaClient
from providers.weka.records import AttachedBucket, FileSystem, SnapshotUpload
from providers.weka.settings import Credentials


class Script:
    """A mock Weka: answers each (method, path) from a queue of (status, body), and logs calls."""

    def __init__(self, answers: dict[tuple[str, str], list[tuple[int, Any]]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, str]] = []
        # What each call sent: (method, path, JSON body or None, query).
        self.sent: list[tuple[str, str, Any, dict[str, str]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v2/")
        self.calls.append((request.method, path, request.headers.get("Authorization", "")))
        body = json.loads(request.content) if request.content else None
        self.sent.append((request.method, path, body, dict(request.url.params)))
        if (request.method, path) == ("POST", "login") and ("POST", "login") not in self.answers:
            tokens = {"access_token": "a1", "refresh_token": "r1", "expires_in": 300}
            return httpx.Response(200, json={"data": tokens})
        status, body = self.answers[(request.method, path)].pop(0)
        return httpx.Response(status, json=body)

    def client(self) -> WekaClient:
        return WekaClient(
            "https://weka.test/api/v2",
            Credentials("admin", "Mock-Passw0rd"),
            transport=httpx.MockTransport(self),
            retry_delays=(0, 0, 0),
        )


FS = {"uid": "u1", "name": "home", "group_name": "default", "total_budget": 1, "ssd_budget": 1}


def test_client_retries_503_and_429_then_succeeds() -> None:
    script = Script(
        {
            ("GET", "fileSystems/u1"): [
                (503, {"message": "busy"}),
                (429, {"message": "slow down"}),
                (200, {"data": FS}),
            ]
        }
    )
    assert script.client().get_filesystem("u1") is not None
    assert [c[:2] for c in script.calls].count(("GET", "fileSystems/u1")) == 3


def test_client_gives_up_after_bounded_retries() -> None:
    script = Script({("GET", "fileSystems/u1"): [(503, {"message": "busy"})] * 10})
    with pytest.raises(WekaError, match="answered 503: busy"):
        script.client().get_filesystem("u1")
    assert len(script.answers[("GET", "fileSystems/u1")]) == 10 - 4


def test_client_does_not_retry_a_400_or_a_post_that_failed_with_500() -> None:
    script = Script(
        {
            ("GET", "fileSystems/u1"): [(400, {"message": "bad request"})],
            ("POST", "fileSystems"): [(500, {"message": "oops"})],
        }
    )
    with pytest.raises(WekaError, match="GET /api/v2/fileSystems/u1 answered 400: bad request"):
        script.client().get_filesystem("u1")
    with pytest.raises(WekaError, match="answered 500: oops"):
        script.client().create_filesystem("home", "default", 1, 1)
    assert [c[:2] for c in script.calls if c[0] != "POST" or c[1] != "login"] == [
        ("GET", "fileSystems/u1"),
        ("POST", "fileSystems"),
    ]


def test_client_reads_directory_has_no_quota_as_an_answer() -> None:
    said = "Directory has no quota: /home/alice in filesystem home"
    script = Script({("GET", "fileSystems/u1/quota/7"): [(500, {"message": said})]})
    assert script.client().get_quota("u1", "7", "/home/alice") is None
    assert len(script.calls) == 2  # login, and one GET: no retry


MISSING_FS = {
    "message": "Filesystem u1 does not exist",
    "data": {"exceptionClass": "FilesystemDoesNotExistException"},
}


def test_a_400_naming_a_missing_object_reads_as_gone_and_any_other_400_fails() -> None:
    script = Script(
        {
            ("GET", "fileSystems/u1"): [(400, MISSING_FS)],
            ("GET", "snapshots/s1"): [
                (
                    400,
                    {"data": {"exceptionClass": "SnapshotDoesNotExistException"}, "message": "no"},
                )
            ],
            ("GET", "fileSystems/u2/resolvePath"): [(400, {"message": "PATH_NOT_FOUND: /x"})],
            ("DELETE", "fileSystems/u1"): [(400, MISSING_FS)],
            ("GET", "fileSystems/u3"): [(400, {"message": "Filesystem name is too long"})],
        }
    )
    client = script.client()
    assert client.get_filesystem("u1") is None
    assert client.get_snapshot("s1") is None
    assert client.resolve_path("u2", "/x") is None
    client.delete_filesystem("u1", "home")  # deleted by hand: nothing left to do
    with pytest.raises(WekaError, match="answered 400: Filesystem name is too long"):
        client.get_filesystem("u3")


def test_a_new_filesystem_is_waited_for_until_it_is_ready() -> None:
    making = {**FS, "is_ready": False, "is_creating": True, "status": "CREATING"}
    ready = {**FS, "is_ready": True, "status": "READY"}
    script = Script(
        {
            ("POST", "fileSystems"): [(200, {"data": making})],
            ("GET", "fileSystems/u1"): [(200, {"data": making})] * 2
            + [(200, {"data": ready}), (200, {"data": making})],
        }
    )
    slept: list[float] = []
    client = script.client()
    client._sleep = slept.append
    assert client.create_filesystem("home", "default", 1, 1).is_ready
    assert slept == [0.25, 0.5]  # ever less often
    with pytest.raises(WekaError, match=r"waiting for Weka filesystem 'home' \(u1\) to be ready"):
        client.wait_ready(FileSystem.from_json(making), timeout=0)


def test_a_quota_is_waited_for_until_it_is_active() -> None:
    quota = {"inode_id": 7, "hard_limit_bytes": 10, "soft_limit_bytes": 9}
    script = Script(
        {
            ("PUT", "fileSystems/u1/quota/7"): [(200, {"data": {**quota, "status": "ADDING"}})],
            ("GET", "fileSystems/u1/quota/7"): [
                (200, {"data": {**quota, "status": "ADDING"}}),
                (200, {"data": {**quota, "status": "ACTIVE"}}),
            ],
        }
    )
    set_ = script.client().set_quota(
        "u1", "7", path="/home/a", hard_limit_bytes=10, soft_limit_bytes=9, grace_seconds=0,
        owner="t",
    )  # fmt: skip
    # Only the fields csi-wekafs relies on are required; the path is the one asked for.
    assert (set_.status, set_.path, set_.grace_seconds) == ("ACTIVE", "/home/a", 0)
    assert [c[:2] for c in script.calls].count(("GET", "fileSystems/u1/quota/7")) == 2


def test_a_password_goes_to_the_password_call_and_a_role_to_the_user() -> None:
    user = {"uid": "w1", "username": "csi", "role": "CSI"}
    script = Script(
        {
            ("PUT", "users/w1"): [(200, {"data": user})],
            ("PUT", "users/w1/password"): [(200, {"data": None})],
        }
    )
    client = script.client()
    client.update_user("w1", "csi", role="CSI")
    client.set_password("w1", "csi", "New-Passw0rd!")
    sent = {(m, p): body for m, p, body, _ in script.sent if p.startswith("users/")}
    assert sent == {
        ("PUT", "users/w1"): {"role": "CSI"},
        ("PUT", "users/w1/password"): {"password": "New-Passw0rd!"},
    }


def test_client_refreshes_on_401_and_retries_once() -> None:
    script = Script(
        {
            ("GET", "fileSystems/u1"): [(401, {"message": "expired"}), (200, {"data": FS})],
            ("POST", "login/refresh"): [(200, {"data": {"access_token": "a2"}})],
        }
    )
    assert script.client().get_filesystem("u1") is not None
    assert script.calls == [
        ("POST", "login", ""),
        ("GET", "fileSystems/u1", "Bearer a1"),
        ("POST", "login/refresh", ""),
        ("GET", "fileSystems/u1", "Bearer a2"),
    ]


def test_clients_with_a_shared_login_log_in_once_for_each_user() -> None:
    script = Script({("GET", "fileSystems/u1"): [(200, {"data": FS})] * 5})
    transport = httpx.MockTransport(script)

    def client(password: str, shared: bool) -> WekaClient:
        # A base URL of this test's own: the process's sessions outlive the test.
        login = Credentials("admin", password)
        url = "https://weka.shared-login.test/api/v2"
        return WekaClient(url, login, transport=transport, shared_login=shared)

    for _ in range(3):  # as a provider host makes one client per call
        with client("Mock-Passw0rd", shared=True) as weka:
            weka.get_filesystem("u1")
    with client("Other-Passw0rd", shared=True) as weka:  # another login, another session
        weka.get_filesystem("u1")
    with client("Mock-Passw0rd", shared=False) as weka:  # a check of the password itself
        weka.get_filesystem("u1")
    assert [c[1] for c in script.calls] == [
        "login",
        "fileSystems/u1",
        "fileSystems/u1",
        "fileSystems/u1",
        "login",
        "fileSystems/u1",
        "login",
        "fileSystems/u1",
    ]


def test_client_logs_in_again_when_the_refresh_token_is_refused() -> None:
    first = {"access_token": "a1", "refresh_token": "r1"}
    fresh = {"access_token": "a3", "refresh_token": "r3"}
    script = Script(
        {
            ("GET", "fileSystems/u1"): [(401, {"message": "expired"}), (200, {"data": FS})],
            ("POST", "login/refresh"): [(401, {"message": "Refresh token has expired"})],
            ("POST", "login"): [(200, {"data": first}), (200, {"data": fresh})],
        }
    )
    assert script.client().get_filesystem("u1") is not None
    assert [c[1] for c in script.calls] == [
        "login",
        "fileSystems/u1",
        "login/refresh",
        "login",
        "fileSystems/u1",
    ]
    assert script.calls[-1][2] == "Bearer a3"


def test_client_never_takes_a_failed_login_for_a_missing_object() -> None:
    script = Script({("POST", "login"): [(404, {"message": "No such API endpoint: /login"})]})
    with pytest.raises(WekaError, match="POST /api/v2/login answered 404"):
        script.client().get_filesystem("u1")


def test_client_retries_connection_errors_then_says_where_it_failed() -> None:
    attempts = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request.url.path)
        raise httpx.ConnectError("Connection refused")

    client = WekaClient(
        "https://weka.test/api/v2",
        Credentials("admin", "Mock-Passw0rd"),
        transport=httpx.MockTransport(refuse),
        retry_delays=(0, 0),
    )
    with pytest.raises(WekaError, match="reached no answer: ConnectError") as failed:
        client.list_organizations()
    assert "WEKA_URL" in str(failed.value)
    assert attempts == ["/api/v2/login"] * 3


# --- snapshots and Snap-To-Object --------------------------------------------------------------

SNAP = {
    "uid": "s1",
    "name": "offboard",
    "filesystem": "home",
    "filesystemUid": "u1",
    "accessPoint": "offboard-ap",
    "isWritable": False,
    "isRemoving": False,
    "creationTime": "2026-01-02T03:04:05Z",
    "locator": "",
    "stowStatus": "NONE",
}
LOCATOR = "59c2ddf9/d/s/16/spec/b365-4e7a-b924-b2f0956b7f9c"


def without_login(script: Script) -> list[tuple[str, str, Any, dict[str, str]]]:
    return [call for call in script.sent if call[1] != "login"]


def test_snapshots_are_created_listed_and_read_in_camel_case() -> None:
    other_fs = {**SNAP, "uid": "s2", "filesystem": "scratch", "filesystemUid": "u2"}
    script = Script(
        {
            ("POST", "snapshots"): [(200, {"data": SNAP})],
            ("GET", "snapshots"): [(200, {"data": [SNAP, other_fs]})],
        }
    )
    client = script.client()
    made = client.create_snapshot("u1", "offboard", access_point="offboard-ap")
    assert (made.uid, made.filesystem, made.access_point, made.is_writable) == (
        "s1",
        "home",
        "offboard-ap",
        False,
    )
    assert (made.locator, made.stow_status, made.uploaded) == ("", "NONE", False)
    # A cluster that ignores the filter lists every snapshot: only home's are kept.
    assert [s.uid for s in client.list_snapshots("home")] == ["s1"]
    assert without_login(script) == [
        (
            "POST",
            "snapshots",
            {
                "fs_uid": "u1",
                "name": "offboard",
                "is_writable": False,
                "access_point": "offboard-ap",
            },
            {},
        ),
        ("GET", "snapshots", None, {"filesystem": "home"}),
    ]


def test_an_upload_returns_the_locator_and_a_rerun_uploads_nothing() -> None:
    uploaded = {
        **SNAP,
        "locator": "",
        "stowStatus": "",
        "localStowInfo": {"locator": LOCATOR, "stowStatus": "SYNCHRONIZED", "stowProgress": "100%"},
    }
    script = Script(
        {
            ("GET", "snapshots/s1"): [(200, {"data": SNAP}), (200, {"data": uploaded})],
            ("POST", "snapshots/s1/upload"): [(200, {"data": {"locator": LOCATOR, "extra": {}}})],
        }
    )
    client = script.client()
    assert client.upload_snapshot("s1") == SnapshotUpload("s1", LOCATOR)
    # Read per site when the top-level fields are empty (a snapshot of 4.x and later).
    assert client.upload_snapshot("s1") == SnapshotUpload("s1", LOCATOR)
    assert [c[:3] for c in without_login(script)] == [
        ("GET", "snapshots/s1", None),
        ("POST", "snapshots/s1/upload", {"obs_site": "LOCAL"}),
        ("GET", "snapshots/s1", None),
    ]


def test_an_upload_refused_says_what_to_do() -> None:
    refused = {"message": "Filesystem home is not tiered: cannot upload from it"}
    script = Script(
        {
            ("GET", "snapshots/s1"): [(200, {"data": SNAP})],
            ("POST", "snapshots/s1/upload"): [(400, refused)],
            ("GET", "snapshots/gone"): [(404, {"message": "Snapshot gone not found"})],
        }
    )
    client = script.client()
    with pytest.raises(WekaError) as failed:
        client.upload_snapshot("s1")
    message = str(failed.value)
    assert "uploading Weka snapshot 'offboard' (s1) of filesystem 'home'" in message
    assert "answered 400: Filesystem home is not tiered: cannot upload from it" in message
    assert "attach_object_store" in message
    with pytest.raises(WekaError, match="snapshot gone does not exist"):
        client.upload_snapshot("gone")


def test_attaching_a_bucket_is_done_once() -> None:
    tiered = {**FS, "obs_buckets": [{"uid": "b1", "name": "retention", "mode": "WRITABLE"}]}
    script = Script(
        {
            ("GET", "fileSystems/u1"): [
                (200, {"data": FS}),
                (200, {"data": tiered}),
                (200, {"data": tiered}),
            ],
            ("POST", "fileSystems/u1/objectStoreBuckets"): [(200, {"data": None})],
        }
    )
    client = script.client()
    fs = client.attach_object_store("u1", "retention")
    assert fs.object_stores == (AttachedBucket("b1", "retention", "WRITABLE"),)
    assert client.attach_object_store("u1", "retention") == fs
    posts = [c for c in without_login(script) if c[0] == "POST"]
    assert posts == [
        (
            "POST",
            "fileSystems/u1/objectStoreBuckets",
            {"obs_name": "retention", "obs_mode": "WRITABLE"},
            {},
        )
    ]


def test_a_filesystem_is_made_from_a_locator_and_the_locator_read() -> None:
    info = {
        "fs_name": "home",
        "guid": "59c2ddf9-0000-4000-8000-000000000000",
        "snapshot_name": "offboard",
        "snap_view_id": "SnapViewId<16>",
        "access_point": "offboard-ap",
        "fs_ssd_capacity": 1,
        "is_encrypted": False,
    }
    script = Script(
        {
            ("POST", "snapshots/locatorInfo"): [(200, {"data": info})],
            ("POST", "fileSystems/download"): [(200, {"data": {**FS, "name": "home-restored"}})],
        }
    )
    client = script.client()
    read = client.locator_info("retention", LOCATOR)
    assert (read.fs_name, read.snapshot_name, read.access_point) == (
        "home",
        "offboard",
        "offboard-ap",
    )
    made = client.create_filesystem_from_locator(
        "home-restored", "default", 10, 5, obs_name="retention", locator=LOCATOR
    )
    assert made.name == "home-restored"
    assert [c[:3] for c in without_login(script)] == [
        ("POST", "snapshots/locatorInfo", {"object_storage": "retention", "locator": LOCATOR}),
        (
            "POST",
            "fileSystems/download",
            {
                "name": "home-restored",
                "group_name": "default",
                "total_capacity": 10,
                "ssd_capacity": 5,
                "object_storage": "retention",
                "locator": LOCATOR,
            },
        ),
    ]


def test_a_long_wait_says_every_ten_seconds_what_it_waits_for_and_in_what_state() -> None:
    making = {**FS, "is_ready": False, "is_creating": True, "status": "CREATING"}
    ready = {**FS, "is_ready": True, "status": "READY"}
    # Pauses of 0.25, 0.5, 1 and then 2 s: 11.75 s of them before the ninth look, 21.75 s
    # before the fourteenth; the fifteenth finds it ready.
    script = Script(
        {("GET", "fileSystems/u1"): [(200, {"data": making})] * 14 + [(200, {"data": ready})]}
    )
    said: list[str] = []
    client = script.client()
    client._sleep = lambda _: None
    client._progress = said.append
    assert client.wait_ready(FileSystem.from_json(making)).is_ready
    assert said == [
        "waiting for Weka filesystem 'home' (u1) to be ready: still CREATING after 12s",
        "waiting for Weka filesystem 'home' (u1) to be ready: still CREATING after 22s",
    ]
