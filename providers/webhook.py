"""The operators' chat webhook (GPU_TENANTS_WEBHOOK_URL): one JSON message per POST, in the form
Slack's incoming webhooks take (`{"text": ...}`), which Mattermost, Rocket.Chat and Microsoft
Teams' Slack-compatible connectors accept as well.

A webhook's URL is its credential (whoever holds it may post), so it is never printed: errors
name the host alone. The POST is sent again only when it cannot have been delivered (no
connection was made, or the receiver answered 429 or 503), under the shared retry policy, so a
notice is not posted twice by the client itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx

from providers.errors import WebhookError
from providers.http_retry import NoResponseError, RetryPolicy, send

__all__ = ["URL_VARIABLE", "Webhook"]

URL_VARIABLE = "GPU_TENANTS_WEBHOOK_URL"


class Webhook:
    """Posts messages to one webhook URL."""

    def __init__(self, url: str, timeout: float = 10.0, policy: RetryPolicy | None = None) -> None:
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise WebhookError(
                f"reading {URL_VARIABLE}",
                "it is not an http(s) URL",
                "set it to the webhook's URL as the chat service gave it",
            )
        self._url = url
        self.host = parsed.host
        self._policy = policy or RetryPolicy.exponential(attempts=4, first=1.0, cap=8.0)
        self._client = httpx.Client(timeout=timeout)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Webhook | None:
        """The webhook GPU_TENANTS_WEBHOOK_URL names, or None when it is unset."""
        url = (os.environ if env is None else env).get(URL_VARIABLE, "")
        return cls(url) if url else None

    def post(self, text: str) -> None:
        """Posts `text` as one message; a WebhookError when the receiver did not take it."""
        doing = f"posting a message to the webhook at {self.host}"
        try:
            reply = send(self._client, "POST", self._url, policy=self._policy, json={"text": text})
        except NoResponseError as error:
            raise WebhookError(
                doing,
                str(error),
                "check that the receiver is up and reachable from here; the message may or may "
                "not have arrived",
            ) from None
        if reply.response.is_error:
            raise WebhookError(
                doing,
                f"HTTP {reply.response.status_code}: {reply.response.text[:200]}",
                f"check {URL_VARIABLE} (a revoked or mistyped webhook answers 403 or 404)",
            )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Webhook:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
