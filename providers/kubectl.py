"""The one way the project runs kubectl itself (the operator's own tool, with whatever credentials
their kubeconfig holds: the KUBECONFIG the Kubernetes provider uses): its argv built by
`providers.command.kubectl` (which builds the pod transport's too), a bounded wait, and a failure
as a `KubernetesError` that quotes kubectl's own words and names what was being done (`doing`, by
default the command). A command run for a backend's client (`backend`) is counted in the
benchmark's call log under that backend's name.

A command starts at once (`Kubectl`) and is read when its answer is needed, so that reads a caller
needs later run while it does other work; `kubectl_json` and `kubectl_get` wait at once. An object
that does not exist is told by kubectl itself (`--ignore-not-found`: no output, exit 0), never by
matching its message.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any, TypedDict, Unpack

from providers.call_log import record
from providers.command import CommandResult, kubectl
from providers.errors import KubernetesError

__all__ = ["TIMEOUT", "Kubectl", "Options", "kubectl_get", "kubectl_json", "start_read"]

# kubectl can outlive its own --request-timeout (an exec credential plugin waiting for a browser
# login, say); past this the command is stopped and fails.
TIMEOUT = 60.0
# What kubectl gives the API server to answer; the wait above covers what it does around that.
REQUEST_TIMEOUT = "--request-timeout=30s"
NEXT_STEP = "check KUBECONFIG and that kubectl reaches the cluster"


class Options(TypedDict, total=False):
    """How a command is run: in `namespace`; its error naming `doing`; counted under `backend`
    in the call log; waited for `timeout` seconds at most (default `TIMEOUT`)."""

    namespace: str | None
    doing: str | None
    backend: str | None
    timeout: float | None


class Kubectl:
    """One kubectl command that asks the API server (not `exec`, whose run has no bound), started
    at once; `result` waits for it (at most its timeout), `stop` ends it if it still runs (its
    caller failed before it needed the answer)."""

    def __init__(self, *args: str, **options: Unpack[Options]) -> None:
        self.argv = tuple(kubectl(*args, REQUEST_TIMEOUT, namespace=options.get("namespace")))
        self.doing = options.get("doing") or f"`{self.command}`"
        self.timeout = options.get("timeout") or TIMEOUT
        self._backend = options.get("backend")
        self._call = " ".join(("kubectl", *args[:2]))
        self._started = time.perf_counter()
        self._process: subprocess.Popen[str] | None = None
        self._result: CommandResult | None = None
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        except FileNotFoundError:
            self._result = self._unanswered("kubectl is not on PATH")
        except OSError as error:
            self._result = self._unanswered(f"could not run kubectl: {error}")

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def result(self) -> CommandResult:
        """What kubectl did; never raises for its failure (`returncode` None: it never ran to
        its end, and `stderr` says why)."""
        if self._result is None:
            assert self._process is not None
            try:
                stdout, stderr = self._process.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.stop()
                self._result = self._unanswered(f"kubectl gave no answer within {self.timeout:g} s")
            else:
                self._result = CommandResult(self.argv, self._process.returncode, stdout, stderr)
            if self._backend:
                record(self._backend, self._call, time.perf_counter() - self._started)
        return self._result

    def answer(self) -> CommandResult:
        """What kubectl answered, whatever its exit status (`auth can-i` says "no" with 1); a
        KubernetesError when it gave none."""
        result = self.result()
        if result.returncode is None:
            raise self._failed(result)
        return result

    def output(self) -> str:
        """kubectl's stdout; a KubernetesError with its words when it failed."""
        result = self.result()
        if not result.ok:
            raise self._failed(result)
        return result.stdout

    def json(self) -> Any:
        """kubectl's output (asked for with `--output=json`), parsed."""
        return json.loads(self.output())

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.communicate()

    def _failed(self, result: CommandResult) -> KubernetesError:
        # kubectl exits 1 whatever failed; only its words tell the API server's refusal (401,
        # 403: "(Unauthorized)", "(Forbidden)") from no answer.
        refused = any(word in result.stderr for word in ("(Unauthorized)", "(Forbidden)"))
        return KubernetesError(self.doing, result.words, NEXT_STEP, refused=refused)

    def _unanswered(self, why: str) -> CommandResult:
        return CommandResult(self.argv, None, "", why)


def start_read(*args: str, **options: Unpack[Options]) -> Kubectl:
    """`kubectl <args>` with JSON output, bounded on the API server's side too, started."""
    return Kubectl(*args, "--output=json", **options)


def kubectl_json(*args: str, **options: Unpack[Options]) -> Any:
    """`kubectl <args>` (a read) as JSON; a KubernetesError with kubectl's words when it fails."""
    return start_read(*args, **options).json()


def kubectl_get(*args: str, **options: Unpack[Options]) -> dict[str, Any] | None:
    """`kubectl get <args>` as JSON, None when nothing is found (kubectl answers nothing)."""
    output = start_read("get", *args, "--ignore-not-found", **options).output()
    found: dict[str, Any] | None = json.loads(output) if output.strip() else None
    return found
