"""The one retry policy of the REST backend clients (Authentik, Weka), over httpx and nothing else.

A request is sent again only when sending it twice can do no harm:

- a request that never reached the server (httpx.ConnectError, ConnectTimeout, PoolTimeout: no
  connection was opened) may always be sent again;
- a request that may have reached it (any other transport error, such as a ReadTimeout whose
  reply was lost, or a 5xx answer) is sent again only if its method is idempotent (GET, HEAD,
  PUT, DELETE): the server may have acted on it already, and a repeated POST or PATCH could act
  twice;
- 429 and 503 say the request was not processed, so any method may try again;
- other 4xx are the request's fault and are never sent again;
- an answer the caller marks final (`final`) is returned as it is, even a 5xx (Weka answers 500
  "Directory has no quota" for a directory without one).

A POST whose reply was lost is therefore not resent blindly: the error reaches the operator, and
the providers' create adopts the object it may have made, by the ownership mark it was sent
with, on the next run.

Waits between attempts come from a `RetryPolicy`: a bounded tuple of delays, one per retry, so a
request is sent at most `len(delays) + 1` times. A numeric `Retry-After` header on an answer that
is retried replaces the scheduled wait, up to the policy's cap. The sleep function is a
parameter, for tests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = [
    "IDEMPOTENT",
    "MAX_RETRIES",
    "NOT_PROCESSED",
    "NoResponseError",
    "Reply",
    "RetryPolicy",
    "may_resend_after_answer",
    "may_resend_after_error",
    "send",
]

# Methods that may be sent again after the server may already have acted on them.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
# Statuses that say the request was not processed: any method may try again.
NOT_PROCESSED = frozenset({429, 503})
# Transport errors raised before a connection was opened: the request never left.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# At most this many retries, whatever a caller configures.
MAX_RETRIES = 20


@dataclass(frozen=True)
class RetryPolicy:
    """`delays[i]` is the wait before the (i + 2)-th attempt; `max_retry_after` caps the wait a
    server's `Retry-After` header may ask for."""

    delays: tuple[float, ...]
    max_retry_after: float = 8.0

    def __post_init__(self) -> None:
        if len(self.delays) > MAX_RETRIES:
            raise ValueError(f"at most {MAX_RETRIES} retries, not {len(self.delays)}")
        for wait in (*self.delays, self.max_retry_after):
            if not (math.isfinite(wait) and wait >= 0):
                raise ValueError(f"a wait must be a finite number of seconds >= 0, not {wait!r}")

    @classmethod
    def exponential(cls, attempts: int, first: float, cap: float) -> RetryPolicy:
        """`attempts` tries in all, waiting `first` seconds, then twice as long each time, up to
        `cap`; a `Retry-After` is honoured up to `cap` too."""
        retries = min(max(attempts, 1), MAX_RETRIES + 1) - 1
        return cls(tuple(min(first * 2.0**i, cap) for i in range(retries)), max_retry_after=cap)

    @property
    def max_attempts(self) -> int:
        return len(self.delays) + 1

    def wait(self, retry: int, response: httpx.Response | None = None) -> float:
        """The wait before retry number `retry` (1 for the second attempt), honouring a numeric
        `Retry-After` of `response`, up to `max_retry_after`."""
        retry_after = "" if response is None else response.headers.get("Retry-After", "").strip()
        if retry_after.isdigit():
            return min(float(retry_after), self.max_retry_after)
        return self.delays[retry - 1]


@dataclass(frozen=True)
class Reply:
    """The final answer, and how many times the request was sent to get it."""

    response: httpx.Response
    attempts: int


class NoResponseError(Exception):
    """No answer came back: `error` is the last transport error, after `attempts` attempts.

    The message names only the error's type: the client that catches this builds its own, with
    its words for the call and the next step (and its own redaction of the error's text)."""

    def __init__(self, error: httpx.TransportError, attempts: int) -> None:
        self.error = error
        self.attempts = attempts
        plural = "s" if attempts != 1 else ""
        super().__init__(f"no answer after {attempts} attempt{plural} ({type(error).__name__})")


def may_resend_after_error(error: httpx.TransportError, method: str) -> bool:
    """A request that never left may be sent again; one that may have reached the server only if
    sending it twice does no harm."""
    return isinstance(error, _NOT_SENT) or method.upper() in IDEMPOTENT


def may_resend_after_answer(
    response: httpx.Response,
    method: str,
    final: Callable[[httpx.Response], bool] | None = None,
) -> bool:
    """429 and 503 were not processed: any method may try again. Other 5xx may come after the
    server acted, so only idempotent methods are sent again. Anything else, and any answer
    `final` accepts, is the answer."""
    if final is not None and final(response):
        return False
    status = response.status_code
    if status in NOT_PROCESSED:
        return True
    return status >= 500 and method.upper() in IDEMPOTENT


def send(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    policy: RetryPolicy,
    params: Mapping[str, str] | None = None,
    json: Any = None,
    final: Callable[[httpx.Response], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Reply:
    """Sends `method url` through `client`, again as the policy allows, and returns the last
    answer, whatever its status. Raises NoResponseError (from the last transport error) when no
    answer came back and the request may not be, or may no more be, sent again."""
    attempts = 0
    while True:
        attempts += 1
        more = attempts < policy.max_attempts
        try:
            response = client.request(method, url, params=params, json=json)
        except httpx.TransportError as error:
            if not (more and may_resend_after_error(error, method)):
                raise NoResponseError(error, attempts) from error
            sleep(policy.wait(attempts))
            continue
        if not (more and may_resend_after_answer(response, method, final)):
            return Reply(response, attempts)
        sleep(policy.wait(attempts, response))
