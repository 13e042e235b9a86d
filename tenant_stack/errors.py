"""The errors of the spec, the platform and the program, as one hierarchy:

    TenantError            base: catch this to catch anything this layer raises on purpose
    ├── PlatformError      Pulumi.prod.yaml (the platform every tenant reads) is missing or wrong
    ├── SpecError          tenants/<slug>.yaml (one tenant's spec) is missing or wrong
    ├── PreflightError     the live cluster refuses what a valid spec asks (a node taken, NotReady)
    ├── ClusterError       the live cluster could not be read
    └── StackError         a `pulumi` command on a tenant's stack failed
        └── StackNotFoundError   the project has no stack of that name

A backend's refusals are the backend layer's own (`providers.errors.BackendError`).

The two file errors carry every problem found, not only the first, so that one `pulumi preview`
of a pull request shows the reviewer everything to fix. Each problem is rendered on its own line
as `<file>: <dotted.location>: <what is wrong and what would be right>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ClusterError",
    "PlatformError",
    "PreflightError",
    "Problem",
    "SpecError",
    "StackError",
    "StackNotFoundError",
    "TenantError",
]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file. `location` is the dotted path of the field (`users.1.uid`), or
    empty when the problem is the file as a whole (missing, unreadable, not YAML)."""

    location: str
    message: str

    def render(self, path: Path) -> str:
        if self.location:
            return f"{path}: {self.location}: {self.message}"
        return f"{path}: {self.message}"


def _listing(what: str, path: Path, problems: Sequence[Problem]) -> str:
    count = len(problems)
    header = f"{what} {path} has {count} problem{'' if count == 1 else 's'}:"
    return "\n".join([header, *(problem.render(path) for problem in problems)])


class TenantError(Exception):
    """Base of every error this project raises on purpose."""


class PlatformError(TenantError):
    """The platform config (the `prod` stack's Pulumi.prod.yaml) is missing or invalid."""

    def __init__(self, path: Path, problems: Sequence[Problem]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__(_listing("platform config", path, self.problems))


class SpecError(TenantError):
    """A tenant spec is missing or invalid; `problems` lists all of it, each with its location."""

    def __init__(self, path: Path, problems: Sequence[Problem]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__(_listing("tenant spec", path, self.problems))


class PreflightError(TenantError):
    """The live cluster refuses what the spec asks; each problem points at the spec field."""

    def __init__(self, path: Path, problems: Sequence[Problem]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__(
            _listing("preflight against the live cluster: tenant spec", path, problems)
        )


class ClusterError(TenantError):
    """Reading the live cluster failed; the message carries the tool's own words."""


class StackError(TenantError):
    """A `pulumi` command on a tenant's stack failed; the message quotes the engine's words."""


class StackNotFoundError(StackError):
    """The project has no stack of the name asked for: a tenant never brought up, or destroyed
    and removed."""
