"""The Weka client (providers.weka.client) on a mock transport: its retries, its tokens and how it
reads the cluster's answers, with no cluster or emulator running."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from providers.errors import WekaError
from providers.weka.client import Credentials, WekaClient


class Script:
    """A mock Weka: answers each (method, path) from a queue of (status, body), and logs calls."""

    def __init__(self, answers: dict[tuple[str, str], list[tuple[int, Any]]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v2/")
        self.calls.append((request.method, path, request.headers.get("Authorization", "")))
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
    script = Script(
        {("GET", "fileSystems/u1/quota/7"): [(500, {"message": "Directory has no quota"})]}
    )
    assert script.client().get_quota("u1", "7") is None
    assert len(script.calls) == 2  # login, and one GET: no retry


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
