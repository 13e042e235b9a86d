"""Reading a backend's settings from the environment, the same way for every backend.

The dynamic providers run in a process the engine starts with the CLI's environment, and nothing
they read may be pickled into the state: so each backend's `settings` module reads its variables
at every call, through these helpers, and turns their ValueError (which names the variable, never
a secret's value) into the backend's own error.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["ca_file", "required", "seconds", "secret"]


def required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ValueError(f"{name} is not set")
    return value


def secret(env: Mapping[str, str], name: str) -> str:
    """A credential: the variable itself, or the file that `<name>_FILE` names (what `make -s
    env` exports, so no secret is ever printed)."""
    value = env.get(name, "").strip()
    if value:
        return value
    path = env.get(f"{name}_FILE", "").strip()
    if not path:
        raise ValueError(f"neither {name} nor {name}_FILE is set")
    try:
        value = Path(path).read_text().strip()
    except OSError as error:
        raise ValueError(f"{name}_FILE {path} cannot be read: {error.strerror}") from None
    if not value:
        raise ValueError(f"{name}_FILE {path} is empty")
    return value


def ca_file(env: Mapping[str, str], name: str) -> Path | None:
    """An optional CA bundle (PEM) to trust instead of the system's, for a private CA."""
    value = env.get(name, "").strip()
    if not value:
        return None
    if not Path(value).is_file():
        raise ValueError(f"{name} names {value}, which is not a file")
    return Path(value)


def seconds(env: Mapping[str, str], name: str, default: str) -> float:
    """A positive number of seconds from `name`."""
    raw = env.get(name) or default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{name}={raw!r}: give seconds, such as {default}")
    return value
