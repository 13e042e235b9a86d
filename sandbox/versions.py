"""The versions toolchain/versions.sh pins, as the sandbox reads them: what its seeded nodes
report, and the tags of the images it makes from the binaries `make setup` built."""

from __future__ import annotations

from pathlib import Path

VERSIONS_FILE = Path(__file__).resolve().parents[1] / "toolchain" / "versions.sh"


def pinned(variable: str) -> str:
    """The value of `variable` (KUBERNETES_VERSION, COREDNS_VERSION) in toolchain/versions.sh."""
    for line in VERSIONS_FILE.read_text().splitlines():
        if line.startswith(f"{variable}="):
            return line.split("=", 1)[1]
    raise RuntimeError(f"no {variable} in {VERSIONS_FILE}")
