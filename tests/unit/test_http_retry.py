"""The backend clients' one retry policy (providers.http_retry), on a mock transport: what is sent
again, how often, and after how long."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from providers.http_retry import NoResponseError, Reply, RetryPolicy, send

POLICY = RetryPolicy((0.5, 1.0, 2.0), max_retry_after=8.0)
Answer = httpx.Response | type[httpx.TransportError]


class Backend:
    """Answers requests from a script: a response, or a transport error class to raise. The last
    entry answers every request after it. Logs the methods it was sent."""

    def __init__(self, *script: Answer) -> None:
        self.script = list(script)
        self.methods: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.methods.append(request.method)
        answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(answer, httpx.Response):
            return answer
        raise answer("scripted", request=request)


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def call(slept: list[float]) -> Iterator[Callable[..., Reply]]:
    clients: list[httpx.Client] = []

    def call(
        backend: Backend,
        method: str,
        *,
        policy: RetryPolicy = POLICY,
        final: Callable[[httpx.Response], bool] | None = None,
    ) -> Reply:
        client = httpx.Client(
            base_url="http://backend.test", transport=httpx.MockTransport(backend)
        )
        clients.append(client)
        return send(client, method, "/things/", policy=policy, final=final, sleep=slept.append)

    yield call
    for client in clients:
        client.close()


def test_a_get_is_sent_again_after_a_500_and_the_success_returned(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    backend = Backend(httpx.Response(500), httpx.Response(200, json={"ok": True}))
    reply = call(backend, "GET")
    assert (reply.response.status_code, reply.attempts) == (200, 2)
    assert reply.response.json() == {"ok": True}
    assert backend.methods == ["GET", "GET"]
    assert slept == [0.5]


@pytest.mark.parametrize("method", ["POST", "PATCH"])
@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_non_idempotent_call_is_not_resent_after_a_5xx(
    call: Callable[..., Reply], slept: list[float], method: str, status: int
) -> None:
    # The server may have acted before failing: the answer goes back to the caller as it is.
    backend = Backend(httpx.Response(status), httpx.Response(201))
    reply = call(backend, method)
    assert (reply.response.status_code, reply.attempts) == (status, 1)
    assert backend.methods == [method]
    assert slept == []


@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.RemoteProtocolError, httpx.WriteError])
def test_a_post_whose_reply_was_lost_is_not_resent(
    call: Callable[..., Reply], slept: list[float], error: type[httpx.TransportError]
) -> None:
    backend = Backend(error, httpx.Response(201))
    with pytest.raises(NoResponseError) as failed:
        call(backend, "POST")
    assert isinstance(failed.value.error, error)
    assert failed.value.attempts == 1
    assert failed.value.__cause__ is failed.value.error
    assert backend.methods == ["POST"]
    assert slept == []


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "DELETE"])
def test_an_idempotent_call_whose_reply_was_lost_is_sent_again(
    call: Callable[..., Reply], slept: list[float], method: str
) -> None:
    backend = Backend(httpx.ReadTimeout, httpx.Response(200))
    reply = call(backend, method)
    assert (reply.response.status_code, reply.attempts) == (200, 2)
    assert backend.methods == [method, method]
    assert slept == [0.5]


def test_a_post_is_sent_again_after_503_and_429(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    backend = Backend(httpx.Response(503), httpx.Response(429), httpx.Response(201))
    reply = call(backend, "POST")
    assert (reply.response.status_code, reply.attempts) == (201, 3)
    assert backend.methods == ["POST"] * 3
    assert slept == [0.5, 1.0]


@pytest.mark.parametrize("error", [httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout])
def test_a_post_that_never_reached_the_server_is_sent_again(
    call: Callable[..., Reply], slept: list[float], error: type[httpx.TransportError]
) -> None:
    backend = Backend(error, httpx.Response(201))
    reply = call(backend, "POST")
    assert (reply.response.status_code, reply.attempts) == (201, 2)
    assert backend.methods == ["POST", "POST"]
    assert slept == [0.5]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_other_4xx_are_never_sent_again(
    call: Callable[..., Reply], slept: list[float], status: int
) -> None:
    backend = Backend(httpx.Response(status), httpx.Response(200))
    reply = call(backend, "GET")
    assert (reply.response.status_code, reply.attempts) == (status, 1)
    assert slept == []


def test_retry_after_replaces_the_wait_and_is_capped(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    backend = Backend(
        httpx.Response(429, headers={"Retry-After": "3"}),
        httpx.Response(503, headers={"Retry-After": "3600"}),
        httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        httpx.Response(201),
    )
    reply = call(backend, "POST")
    assert (reply.response.status_code, reply.attempts) == (201, 4)
    # 3 s as asked; 3600 s capped at 8; a date is not a number of seconds: the policy's own wait.
    assert slept == [3.0, 8.0, 2.0]


def test_retry_after_is_honoured_on_a_retried_5xx_too(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    backend = Backend(httpx.Response(502, headers={"Retry-After": "0"}), httpx.Response(200))
    assert call(backend, "GET").attempts == 2
    assert slept == [0.0]


def test_attempts_are_bounded_by_the_delays_and_the_last_answer_returned(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    backend = Backend(httpx.Response(503, json={"message": "busy"}))
    reply = call(backend, "POST")
    assert (reply.response.status_code, reply.attempts) == (503, 4)
    assert reply.response.json() == {"message": "busy"}
    assert backend.methods == ["POST"] * 4
    assert slept == [0.5, 1.0, 2.0]


def test_attempts_are_bounded_when_no_connection_opens(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    backend = Backend(httpx.ConnectError)
    with pytest.raises(NoResponseError, match="no answer after 3 attempts") as failed:
        call(backend, "GET", policy=RetryPolicy((0.1, 0.2)))
    assert isinstance(failed.value.error, httpx.ConnectError)
    assert failed.value.attempts == 3
    assert backend.methods == ["GET"] * 3
    assert slept == [0.1, 0.2]


def test_a_policy_without_delays_sends_once(call: Callable[..., Reply], slept: list[float]) -> None:
    backend = Backend(httpx.Response(503), httpx.Response(200))
    assert call(backend, "GET", policy=RetryPolicy(())).response.status_code == 503
    assert (backend.methods, slept) == (["GET"], [])


def test_an_answer_marked_final_is_returned_though_it_is_a_5xx(
    call: Callable[..., Reply], slept: list[float]
) -> None:
    def no_quota(response: httpx.Response) -> bool:
        return response.status_code == 500 and response.json() == {"message": "no quota"}

    marked = Backend(httpx.Response(500, json={"message": "no quota"}), httpx.Response(200))
    reply = call(marked, "GET", final=no_quota)
    assert (reply.response.status_code, reply.attempts) == (500, 1)
    assert slept == []

    # Another 500 is not marked by the same predicate: it is sent again.
    other = Backend(httpx.Response(500, json={"message": "oops"}), httpx.Response(200))
    assert call(other, "GET", final=no_quota).response.status_code == 200
    assert other.methods == ["GET", "GET"]


def test_exponential_waits_double_up_to_the_cap() -> None:
    assert RetryPolicy.exponential(5, 0.5, 8.0).delays == (0.5, 1.0, 2.0, 4.0)
    assert RetryPolicy.exponential(8, 0.5, 8.0).delays == (0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0)
    assert RetryPolicy.exponential(5, 0.5, 8.0).max_retry_after == 8.0
    assert RetryPolicy.exponential(0, 0.5, 8.0).max_attempts == 1
    assert RetryPolicy.exponential(1000, 0.5, 8.0).max_attempts == 21


@pytest.mark.parametrize(
    "delays", [(-1.0,), (float("nan"),), (float("inf"),), (0.0,) * 21], ids=str
)
def test_a_policy_refuses_unbounded_or_negative_waits(delays: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match=r"at most 20 retries|finite number"):
        RetryPolicy(delays)
