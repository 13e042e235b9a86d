"""What one fleet run is pinned to: the program's commit and the digest of the project's
tenants/ tree. Recorded in the run's input and its report, and checked by each worker before it
touches a stack, so that a worker on another machine never checks or changes a stack with other
code or other specs than the run was started with."""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tenant_stack.errors import StackError

# The checkout holding the program (a sandbox project links to it).
PROGRAM = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RunPin:
    commit: str  # the program's commit, "+dirty" when its tree differs from it
    tenants: str  # sha256 over the project's tenants/*.yaml, names and contents

    @classmethod
    def of(cls, project: Path) -> RunPin:
        """What this machine runs for `project`, now."""
        return cls(_commit(), _tenants_digest(project / "tenants"))

    def verify(self, project: Path) -> None:
        """A StackError naming both sides unless this machine runs what the run is pinned to."""
        here = RunPin.of(project)
        if here != self:
            raise StackError(
                f"this worker runs commit {here.commit} with tenants/ {here.tenants[:12]}, the "
                f"run is pinned to commit {self.commit} with tenants/ {self.tenants[:12]}: "
                "check that commit out on every worker (and restart them) before running it"
            )


def _commit() -> str:
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(PROGRAM), *args], capture_output=True, text=True, check=False
        )

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        raise StackError(f"the program at {PROGRAM} is not a git checkout: {head.stderr.strip()}")
    dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")


def _tenants_digest(tenants: Path) -> str:
    digest = hashlib.sha256()
    for spec in sorted(tenants.glob("*.yaml")):
        digest.update(spec.name.encode() + b"\0" + spec.read_bytes() + b"\0")
    return digest.hexdigest()
