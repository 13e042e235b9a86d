"""Where the Authentik provider finds its endpoint and token, read from the environment at every
call (`providers.environment` says why):

    AUTHENTIK_URL            base URL, such as http://127.0.0.1:29000 (the client adds /api/v3)
    AUTHENTIK_TOKEN          an API token of a superuser; else
    AUTHENTIK_TOKEN_FILE     a file holding it (what `make -s env` exports)
    AUTHENTIK_CA_FILE        optional: the CA that signed the server's TLS certificate, when it is
                             not a public CA's
    AUTHENTIK_MAX_ATTEMPTS   optional: tries per request on transient failures (default 5)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from providers import environment
from providers.errors import AuthentikError

__all__ = ["DEFAULT_MAX_ATTEMPTS", "Settings"]

DEFAULT_MAX_ATTEMPTS = 5
_READING = "reading the Authentik settings from the environment"
_HINT = 'for the sandbox, run eval "$(make -s env)"'


@dataclass(frozen=True)
class Settings:
    url: str
    token: str = field(repr=False)
    ca_file: Path | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in `env` (default: os.environ); AuthentikError names what is missing."""
        env = os.environ if env is None else env
        try:
            url = environment.required(env, "AUTHENTIK_URL").rstrip("/")
            ca_file = environment.ca_file(env, "AUTHENTIK_CA_FILE")
        except ValueError as error:
            raise AuthentikError(_READING, str(error), f"export it; {_HINT}") from None
        try:
            token = environment.secret(env, "AUTHENTIK_TOKEN")
        except ValueError as error:
            raise AuthentikError(
                _READING, str(error), f"export it, or point AUTHENTIK_TOKEN_FILE at it; {_HINT}"
            ) from None
        return cls(
            url=url,
            token=token,
            ca_file=ca_file,
            max_attempts=_max_attempts(env.get("AUTHENTIK_MAX_ATTEMPTS", "")),
        )


def _max_attempts(raw: str) -> int:
    if not raw.strip():
        return DEFAULT_MAX_ATTEMPTS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= 20:
        raise AuthentikError(
            _READING,
            f"AUTHENTIK_MAX_ATTEMPTS is {raw!r}",
            "set it to a whole number from 1 to 20, or unset it",
        )
    return value
