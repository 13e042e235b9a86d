"""The one way the project runs kubectl itself (the operator's own tool, with whatever credentials
their kubeconfig holds: the KUBECONFIG the Kubernetes provider uses): its argv built by
`providers.command.kubectl` (which builds the pod transport's too), a bounded wait, and a failure
as a `KubernetesError` that quotes kubectl's own words.

A command starts at once (`Kubectl`) and is read when its answer is needed, so that reads a caller
needs later run while it does other work; `kubectl_json` and `kubectl_get` wait at once. An object
that does not exist is told by kubectl itself (`--ignore-not-found`: no output, exit 0), never by
matching its message.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from providers.command import CommandResult, kubectl
from providers.errors import KubernetesError

__all__ = ["TIMEOUT", "Kubectl", "kubectl_get", "kubectl_json", "start_read"]

# kubectl can outlive its own --request-timeout (an exec credential plugin waiting for a browser
# login, say); past this the command is stopped and fails.
TIMEOUT = 60.0
# What kubectl gives the API server to answer; the wait above covers what it does around that.
REQUEST_TIMEOUT = "--request-timeout=30s"
NEXT_STEP = "check KUBECONFIG and that kubectl reaches the cluster"


class Kubectl:
    """One kubectl command that asks the API server (not `exec`, whose run has no bound), started
    at once; `result` waits for it (at most `TIMEOUT`), `stop` ends it if it still runs (its
    caller failed before it needed the answer)."""

    def __init__(self, *args: str, namespace: str | None = None) -> None:
        self.argv = tuple(kubectl(*args, REQUEST_TIMEOUT, namespace=namespace))
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
                stdout, stderr = self._process.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.stop()
                self._result = self._unanswered(f"kubectl gave no answer within {TIMEOUT:g} s")
            else:
                self._result = CommandResult(self.argv, self._process.returncode, stdout, stderr)
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
        return KubernetesError(f"`{self.command}`", result.words, NEXT_STEP)

    def _unanswered(self, why: str) -> CommandResult:
        return CommandResult(self.argv, None, "", why)


def start_read(*args: str, namespace: str | None = None) -> Kubectl:
    """`kubectl <args>` with JSON output, bounded on the API server's side too, started."""
    return Kubectl(*args, "--output=json", namespace=namespace)


def kubectl_json(*args: str, namespace: str | None = None) -> Any:
    """`kubectl <args>` (a read) as JSON; a KubernetesError with kubectl's words when it fails."""
    return start_read(*args, namespace=namespace).json()


def kubectl_get(*args: str, namespace: str | None = None) -> dict[str, Any] | None:
    """`kubectl get <args>` as JSON, None when nothing is found (kubectl answers nothing)."""
    output = start_read("get", *args, "--ignore-not-found", namespace=namespace).output()
    found: dict[str, Any] | None = json.loads(output) if output.strip() else None
    return found
