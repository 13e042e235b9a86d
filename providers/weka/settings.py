"""Where the Weka cluster is and how to log in to it as the cluster admin, read from the
environment at call time: the dynamic provider runs in a process of its own that the engine
starts with the CLI's environment, and nothing read here may be pickled into the state.

    WEKA_URL             https://HOST:14000/api/v2
    WEKA_USERNAME        a ClusterAdmin of the Root organization
    WEKA_PASSWORD        its password, or
    WEKA_PASSWORD_FILE   a file holding it (what `make -s env` exports for the sandbox)
    SANDBOX_CA_FILE      optional: a CA bundle (PEM) to trust instead of the system's
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from providers.env_secret import secret_from_env
from providers.errors import WekaError

__all__ = ["WekaSettings", "load_settings"]

_DOING = "reading the Weka settings from the environment"
_HOW = 'export it (for the sandbox: eval "$(make -s env)")'


@dataclass(frozen=True)
class WekaSettings:
    url: str
    username: str
    password: str = field(repr=False)
    ca_file: Path | None = None

    def tls_verify(self) -> ssl.SSLContext | bool:
        """What httpx should verify the server with (a context: httpx 0.28 deprecates paths)."""
        if self.ca_file is None:
            return True
        return ssl.create_default_context(cafile=str(self.ca_file))


def load_settings(environ: Mapping[str, str] | None = None) -> WekaSettings:
    """The settings in `environ` (default: this process's environment), or a WekaError that
    names the variable to set."""
    env = os.environ if environ is None else environ
    url = _required(env, "WEKA_URL").rstrip("/")
    if not url.startswith(("https://", "http://")):
        raise WekaError(
            _DOING,
            f"WEKA_URL is {url!r}, not an http(s) URL",
            "set it to the API's base, such as https://weka-api.example.internal:14000/api/v2",
        )
    ca_file = env.get("SANDBOX_CA_FILE") or None
    if ca_file is not None and not Path(ca_file).is_file():
        raise WekaError(_DOING, f"SANDBOX_CA_FILE names {ca_file}, which is not a file", _HOW)
    return WekaSettings(
        url=url,
        username=_required(env, "WEKA_USERNAME"),
        password=_password(env),
        ca_file=Path(ca_file) if ca_file else None,
    )


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise WekaError(_DOING, f"{name} is not set", _HOW)
    return value


def _password(env: Mapping[str, str]) -> str:
    try:
        return secret_from_env(env, "WEKA_PASSWORD")
    except ValueError as error:
        raise WekaError(_DOING, str(error), _HOW) from None
