"""One check's outcome, and what a set of them means for the command's exit status."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from providers.errors import BackendError
from tenant_stack.errors import ClusterError

__all__ = ["FAILED", "NOT_RUN", "OK", "Check", "Steps", "exit_status"]

OK = "ok"
FAILED = "failed"
# A check that needs an earlier one of its backend which failed: reporting it as failed too would
# name two causes for one.
NOT_RUN = "not run"


@dataclass(frozen=True)
class Check:
    """`name` is `<backend> <what>` (`kubernetes access`); `fix` is what the operator does about a
    failure. Neither `detail` nor `fix` ever holds a secret: they quote the backends' errors,
    which the clients keep free of tokens and passwords."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"check": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def exit_status(checks: Iterable[Check]) -> int:
    """0 when every check passed, else 1 (a check that did not run follows one that failed)."""
    return 0 if all(check.status == OK for check in checks) else 1


class CheckFailedError(Exception):
    """A step of a backend's checks failed; `fix` says what to do."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.fix = fix


class Steps:
    """A backend's checks in order: once one fails, the rest are `not run`, naming it."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.checks: list[Check] = []
        self._failed: str | None = None

    def step(self, what: str, probe: Callable[[], str]) -> None:
        """Runs `probe` (which returns the detail of a pass, or raises CheckFailedError or a
        backend's error) unless an earlier step failed."""
        name = f"{self.backend} {what}"
        if self._failed is not None:
            self.checks.append(Check(name, NOT_RUN, f"needs {self._failed}"))
            return
        try:
            self.checks.append(Check(name, OK, probe()))
        except CheckFailedError as failed:
            self._fail(Check(name, FAILED, failed.detail, failed.fix))
        except BackendError as error:
            self._fail(Check(name, FAILED, f"{error.doing}: {error.backend_says}", error.next_step))
        except ClusterError as error:
            self._fail(Check(name, FAILED, str(error), "check KUBECONFIG and that kubectl works"))

    def _fail(self, check: Check) -> None:
        self.checks.append(check)
        self._failed = check.name
