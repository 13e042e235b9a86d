"""Runs the external commands of the sandbox, always bounded in time."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence

# Daemons and admin tools live in sbin, which a non-login shell's PATH may lack.
_SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def binary(name: str) -> str:
    """The absolute path of `name`, or `name` itself so that the error names what is missing."""
    return shutil.which(name) or shutil.which(name, path=_SEARCH_PATH) or name


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str] | None:
    """Runs `argv` under timeout(1); None if it could not run or took too long.

    timeout(1) kills the command on its own; the Python timeout is a backstop for a command that
    ignores SIGTERM or a timeout binary that hangs.
    """
    wrapped = [binary("timeout"), "-k", "1", f"{timeout:g}", binary(argv[0]), *argv[1:]]
    try:
        return subprocess.run(
            wrapped,
            input=input_text,
            stdin=None if input_text is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=None if env is None else dict(env),
            timeout=timeout + 5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
