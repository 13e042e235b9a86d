"""Sessions: logging in with a password, refreshing, and the bearer token that names the caller
of every other call. Issuing, storing and expiring the tokens themselves is tokens.py's.
"""

from __future__ import annotations

from sandbox.weka.core import Caller
from sandbox.weka.errors import ApiError
from sandbox.weka.organizations import Organizations
from sandbox.weka.store import User
from sandbox.weka.tokens import check_password


class Sessions(Organizations):
    def login(self, username: str, password: str, org_name: str) -> dict[str, object]:
        org = self._org_by_name(org_name)
        user = self._user_by_name(org, username) if org else None
        if user is None or not check_password(password, user.password_hash):
            raise ApiError(401, "Invalid username or password")
        self.tokens.prune()
        return self._token_reply(user, self.tokens.issue(user.uid, "refresh"))

    def refresh(self, refresh_token: str) -> dict[str, object]:
        record, valid = self.tokens.lookup(refresh_token, "refresh")
        if record is None or record.user_uid not in self.state.users:
            raise ApiError(401, "Invalid refresh token")
        if not valid:
            raise ApiError(401, "Refresh token has expired, please log in again")
        return self._token_reply(self.state.users[record.user_uid], refresh_token)

    def _token_reply(self, user: User, refresh_token: str) -> dict[str, object]:
        return {
            "access_token": self.tokens.issue(user.uid, "access"),
            "token_type": "Bearer",
            "expires_in": self.tokens.access_ttl,
            "refresh_token": refresh_token,
        }

    def authenticate(self, authorization: str | None) -> Caller:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "Unauthorized: missing Bearer access token")
        record, valid = self.tokens.lookup(token.strip(), "access")
        if record is None or record.user_uid not in self.state.users:
            raise ApiError(401, "Unauthorized: invalid access token")
        if not valid:
            raise ApiError(401, "Unauthorized: access token has expired")
        user = self.state.users[record.user_uid]
        return Caller(user, self.state.orgs[user.org_uid])
