"""The login flow of the Weka REST API v2: bearer tokens that last five minutes, renewed when
the cluster answers 401 (`POST /login/refresh`, or `POST /login` again when the refresh token is
refused), and one session per process for each user (`shared_auth`)."""

from __future__ import annotations

from collections.abc import Generator, Mapping

import httpx

from providers.errors import WekaError
from providers.weka.settings import Credentials

__all__ = ["WekaAuth", "shared_auth"]


class WekaAuth(httpx.Auth):
    """Bearer tokens for one user: logs in on the first request; on a 401 refreshes the access
    token, or logs in again when the refresh token is refused, then retries the request once.

    A failed login ends the flow with the login's own response, so the caller reports the
    cluster's answer to the login (401 "Invalid username or password") rather than guessing.

    One may serve many clients, in several threads at once (`shared_auth`): each flow reads the
    tokens once per request, and two that renew them at the same moment cost a login more."""

    requires_response_body = True

    def __init__(self, base_url: str, credentials: Credentials) -> None:
        self._base_url = base_url.rstrip("/")
        self._credentials = credentials
        self._access_token: str | None = None
        self._refresh_token: str | None = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self._access_token is None:
            login = yield self._login_request()
            if not self._accept(login):
                return
        request.headers["Authorization"] = f"Bearer {self._access_token}"
        response = yield request
        if response.status_code != 401:
            return
        renewed = False
        if self._refresh_token is not None:
            refreshed = yield self._post("login/refresh", {"refresh_token": self._refresh_token})
            renewed = self._accept(refreshed)
        if not renewed:
            login = yield self._login_request()
            if not self._accept(login):
                return
        request.headers["Authorization"] = f"Bearer {self._access_token}"
        yield request

    def redact(self, text: str) -> str:
        """`text` with the password and the tokens blanked out, for error messages."""
        for secret in (self._credentials.password, self._access_token, self._refresh_token):
            if secret:
                text = text.replace(secret, "***")
        return text

    def _login_request(self) -> httpx.Request:
        creds = self._credentials
        body = {"username": creds.username, "password": creds.password, "org": creds.org}
        return self._post("login", body)

    def _post(self, path: str, body: Mapping[str, str]) -> httpx.Request:
        return httpx.Request("POST", f"{self._base_url}/{path}", json=body)

    def _accept(self, response: httpx.Response) -> bool:
        """Keep the tokens of a successful login or refresh reply."""
        if response.status_code != 200:
            self._access_token = self._refresh_token = None
            return False
        try:
            tokens = response.json()["data"]
            access, refresh = tokens["access_token"], tokens.get("refresh_token")
        except (ValueError, KeyError, TypeError) as error:
            raise WekaError(
                f"logging in to Weka as {self._credentials.username!r}",
                f"{response.request.url.path} answered 200 without an access token",
                "check that WEKA_URL points at the Weka API (https://HOST:14000/api/v2)",
            ) from error
        self._access_token = str(access)
        self._refresh_token = str(refresh) if refresh else None
        return True


_SHARED: dict[tuple[str, Credentials], WekaAuth] = {}


def shared_auth(base_url: str, credentials: Credentials) -> WekaAuth:
    """The one session of this process for `credentials` at `base_url`: a login costs the
    cluster a password hash, and a process that makes a client per call (the provider host, a
    call per user of a large tenant) would otherwise log in for each."""
    return _SHARED.setdefault((base_url.rstrip("/"), credentials), WekaAuth(base_url, credentials))
