"""Atomic JSON state files for the emulators: a kill at any moment leaves the old state or the
new one, never half of either."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from providers.files import write_atomic


def write_json_atomically(path: Path, data: Any) -> None:
    # 0600: the emulators' state holds password hashes and tokens.
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True), new_file_mode=0o600)
