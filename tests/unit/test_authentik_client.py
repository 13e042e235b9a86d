"""The Authentik client (providers.authentik.client) on a mock transport: retries, errors,
pagination and the two group shapes, with no Authentik running."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx
import pytest

from providers.authentik.client import AuthentikClient
from providers.errors import AuthentikError


def mock_client(
    handler: Callable[[httpx.Request], httpx.Response], *, max_attempts: int = 3
) -> tuple[AuthentikClient, list[float]]:
    slept: list[float] = []
    api = AuthentikClient(
        base_url="http://authentik.test",
        token="mock-token",
        transport=httpx.MockTransport(handler),
        max_attempts=max_attempts,
        sleep=slept.append,
    )
    return api, slept


GROUP_PK = str(uuid.uuid4())
GROUP = {
    "pk": GROUP_PK,
    "num_pk": 12345,
    "name": "t-a",
    "is_superuser": False,
    "parent": None,
    "parent_name": None,
    "attributes": {},
    "users": [],
    "users_obj": None,
}


def test_client_retries_a_503_then_succeeds() -> None:
    answers = iter([httpx.Response(503, json={"detail": "busy"}), httpx.Response(200, json=GROUP)])
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return next(answers)

    api, slept = mock_client(handler)
    group = api.get_group(GROUP_PK)

    assert group is not None
    assert group.name == "t-a"
    assert len(seen) == 2
    assert slept == [0.5]
    assert seen[0].headers["Authorization"] == "Bearer mock-token"


def test_client_does_not_retry_a_400_and_quotes_the_body() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(400, json={"name": ["This field must be unique."]})

    api, slept = mock_client(handler)
    with pytest.raises(AuthentikError) as failed:
        api.create_group(name="t-a", parent=None, attributes={})

    assert (len(seen), slept) == (1, [])
    message = str(failed.value)
    assert "POST /api/v3/core/groups/" in message
    assert "HTTP 400" in message
    assert "This field must be unique." in message
    assert "mock-token" not in message


def test_client_follows_pagination_and_reads_the_2025_12_group_shape() -> None:
    parent = str(uuid.uuid4())
    newer = {
        **{k: v for k, v in GROUP.items() if k not in ("parent", "parent_name")},
        "parents": [parent],
        "parents_obj": [{"pk": parent, "name": "tenants"}],
        "children": [],
    }
    pages = {
        "1": {"pagination": {"next": 2}, "results": [{**newer, "name": "t-b"}]},
        "2": {"pagination": {"next": 0}, "results": [newer]},
    }
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=pages[request.url.params["page"]])
        bodies.append(request.content)
        return httpx.Response(201, json=newer)

    api, _ = mock_client(handler)
    found = api.find_group("t-a")

    assert found is not None
    assert (found.parents, found.parent_names) == ((parent,), ("tenants",))
    api.create_group(name="t-c", parent=parent, attributes={})
    assert f'"parents":["{parent}"]'.encode() in bodies[0].replace(b" ", b"")


def test_client_does_not_resend_a_post_after_a_500() -> None:
    # The server may have made the group before failing: a second POST could make it twice. The
    # providers' create adopts it by its mark on the next run instead.
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500, json={"detail": "internal error"})

    api, slept = mock_client(handler)
    with pytest.raises(AuthentikError) as failed:
        api.create_group(name="t-a", parent=None, attributes={})

    assert ([r.method for r in seen], slept) == (["POST"], [])
    message = str(failed.value)
    assert "POST /api/v3/core/groups/" in message
    assert "HTTP 500: " in message
    assert "internal error" in message
    assert "mock-token" not in message


def test_client_still_resends_a_get_after_a_500_with_doubling_waits() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500, json={"detail": "internal error"})

    api, slept = mock_client(handler, max_attempts=4)
    with pytest.raises(AuthentikError, match="HTTP 500 after 4 attempts"):
        api.get_group(GROUP_PK)

    assert len(seen) == 4
    assert slept == [0.5, 1.0, 2.0]


def test_client_says_where_a_lost_post_reply_went_without_resending_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        raise httpx.ReadTimeout("timed out", request=request)

    api, slept = mock_client(handler)
    with pytest.raises(AuthentikError) as failed:
        api.create_group(name="t-a", parent=None, attributes={})

    assert (len(seen), slept) == (1, [])
    message = str(failed.value)
    assert "connection to http://authentik.test failed after 1 attempt (ReadTimeout" in message
    assert "AUTHENTIK_URL" in message
    assert "mock-token" not in message
