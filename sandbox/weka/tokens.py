"""Passwords and bearer tokens."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import time

from sandbox.weka.store import State, Token

# Few iterations on purpose: tests log in often on a shared 2-core machine, and the hash only
# has to keep plaintext passwords out of the state file.
_PBKDF2_ROUNDS = 20_000

# Weka's rule for local users (docs of POST /users).
PASSWORD_RULE = (
    "Password must contain at least 8 characters, and have at least one uppercase letter, "
    "one lowercase letter, and one number or special character"
)


def password_is_strong(password: str) -> bool:
    return (
        len(password) >= 8
        and re.search(r"[A-Z]", password) is not None
        and re.search(r"[a-z]", password) is not None
        and re.search(r"[^A-Za-z]", password) is not None
    )


def generate_password() -> str:
    """A random password that satisfies the rule above."""
    alphabet = string.ascii_letters + string.digits
    while True:
        candidate = "".join(secrets.choice(alphabet) for _ in range(24))
        if password_is_strong(candidate):
            return candidate


def hash_password(password: str) -> str:
    salt = secrets.token_hex(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), _PBKDF2_ROUNDS)
    return f"pbkdf2_sha256${_PBKDF2_ROUNDS}${salt}${digest.hex()}"


def check_password(password: str, stored: str) -> bool:
    _, rounds, salt, expected = stored.split("$")
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), bytes.fromhex(salt), int(rounds))
    return hmac.compare_digest(digest.hex(), expected)


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    """Issues and checks tokens kept in the state (by hash), so they survive a restart."""

    def __init__(self, state: State, access_ttl: int, refresh_ttl: int) -> None:
        self.state = state
        self.access_ttl = access_ttl
        self.refresh_ttl = refresh_ttl

    def issue(self, user_uid: str, kind: str) -> str:
        token = secrets.token_urlsafe(32)
        ttl = self.access_ttl if kind == "access" else self.refresh_ttl
        self.state.tokens[_key(token)] = Token(kind, user_uid, time.time() + ttl)
        return token

    def lookup(self, token: str, kind: str) -> tuple[Token | None, bool]:
        """The token's record if it is of this kind, and whether it is still valid."""
        record = self.state.tokens.get(_key(token))
        if record is None or record.kind != kind:
            return None, False
        return record, record.expires_at > time.time()

    def expire_access_tokens(self) -> None:
        now = time.time()
        for record in self.state.tokens.values():
            if record.kind == "access":
                record.expires_at = min(record.expires_at, now - 1)

    def revoke_user(self, user_uid: str) -> None:
        for key in [k for k, t in self.state.tokens.items() if t.user_uid == user_uid]:
            del self.state.tokens[key]

    def prune(self) -> None:
        """Forget tokens long expired; recently expired ones still get the 'expired' answer."""
        horizon = time.time() - self.access_ttl
        for key in [k for k, t in self.state.tokens.items() if t.expires_at < horizon]:
            del self.state.tokens[key]
