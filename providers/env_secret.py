"""A credential read at call time from the environment: the variable itself, or the file that
`<variable>_FILE` names (what `make -s env` exports, so no secret is ever printed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def secret_from_env(env: Mapping[str, str], name: str) -> str:
    """The secret, or ValueError with a message that names the variables and never the value."""
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
