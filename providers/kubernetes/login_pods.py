"""Runbook step 5a: the login release's pods, read through kubectl (`providers.kubectl`), until
as many as the release asks for are Ready and sshd listens in each.

Whatever the chart calls its objects, Helm labels a release's pods with its instance, so they
are found by that label. Ready is the chart's readiness probe; "sshd listens" is read from the
pod's own network namespace (a socket on port 22 in state LISTEN in /proc/net/tcp or tcp6),
which needs nothing of the image but `cat`. The wait is bounded; it says how far it got every
`progress.EVERY` seconds, and its error names each pod's state and its latest events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from providers.command import KubectlExecTransport
from providers.errors import KubernetesError
from providers.kubectl import TIMEOUT, kubectl_json
from providers.kubernetes.workloads import BACKEND, INSTANCE_LABEL
from providers.progress import EVERY

__all__ = ["SSH_PORT", "WAIT_SECONDS", "LoginPods", "Look", "PodState", "listens"]

# A pod starts in seconds once its image is on the node; a first pull of a large image, or a
# node being added by the autoscaler, takes minutes.
WAIT_SECONDS = 600.0
SSH_PORT = 22
_LISTEN = "0A"  # the kernel's TCP_LISTEN, as /proc/net/tcp prints a socket's state
_EVENTS_SHOWN = 3
_GETENT_NOT_FOUND = 2  # getent's exit status when a key is not in the database


@dataclass(frozen=True)
class PodState:
    name: str
    ready: bool
    # What keeps it from Ready, in kubectl's words: a container's waiting reason, or the phase.
    status: str


def _state(pod: dict[str, Any]) -> PodState:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    waiting = [
        c["state"]["waiting"].get("reason", "Waiting")
        for c in status.get("containerStatuses") or []
        if "waiting" in (c.get("state") or {})
    ]
    unscheduled = [
        c.get("message", "")
        for c in status.get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    ]
    words = waiting or [f"unscheduled: {m}" for m in unscheduled] or [status.get("phase", "?")]
    return PodState(pod["metadata"]["name"], ready, ", ".join(words))


def listens(proc_net_tcp: str, port: int = SSH_PORT) -> bool:
    """Whether /proc/net/tcp (or tcp6) text holds a socket listening on `port`."""
    wanted = f"{port:04X}"
    rows = (line.split() for line in proc_net_tcp.splitlines()[1:])
    return any(
        len(row) > 3 and row[1].rsplit(":", 1)[-1] == wanted and row[3] == _LISTEN for row in rows
    )


@dataclass(frozen=True)
class Look:
    """The release's pods as one look found them."""

    states: list[PodState]
    deaf: list[str]  # Ready, but no socket listening on SSH_PORT

    @property
    def ready(self) -> list[str]:
        return [s.name for s in self.states if s.ready]

    def serving(self, replicas: int) -> bool:
        return len(self.states) == len(self.ready) == replicas and not self.deaf

    def summary(self, replicas: int) -> str:
        """ "1 of 2 pods ready (login-x-1 ContainerCreating)", and how many more there are."""
        others = [f"{s.name} {s.status}" for s in self.states if not s.ready]
        others += [f"{pod} Ready but no sshd listening on port {SSH_PORT}" for pod in self.deaf]
        extra = len(self.states) - replicas
        return (
            f"{len(self.ready)} of {replicas} pods ready"
            + (f" ({'; '.join(others)})" if others else "")
            + (f", {extra} more than the release asks for" if extra > 0 else "")
        )


class LoginPods:
    def __init__(self, namespace: str, release: str) -> None:
        self.namespace = namespace
        self.release = release

    @property
    def name(self) -> str:
        return f"login release {self.namespace}/{self.release}"

    def look(self) -> Look:
        """The release's pods but those being deleted, by name, and which Ready ones have no
        sshd listening."""
        listed = kubectl_json(
            "get", "pods", f"--selector={INSTANCE_LABEL}={self.release}",
            namespace=self.namespace, doing=f"listing the pods of the {self.name}",
            backend=BACKEND,
        )  # fmt: skip
        pods = [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]
        states = sorted((_state(p) for p in pods), key=lambda s: s.name)
        deaf = [s.name for s in states if s.ready and not self._sshd_listens(s.name)]
        return Look(states, deaf)

    def _in(self, pod: str) -> KubectlExecTransport:
        return KubectlExecTransport(
            backend=BACKEND, timeout=TIMEOUT, namespace=self.namespace, target=pod
        )

    def _sshd_listens(self, pod: str) -> bool:
        # tcp6 is absent where IPv6 is off: cat prints tcp and fails on the other. A pod that
        # stops meanwhile answers nothing, and the next look tells.
        return listens(self._in(pod).run(["cat", "/proc/net/tcp", "/proc/net/tcp6"]).stdout)

    def getent(self, pod: str, database: str, keys: list[str]) -> dict[str, list[str]]:
        """`getent database keys...` in `pod` (one exec), as its users' processes resolve names
        (nslcd, from LDAP): each entry's fields by its name; a key nothing answers to is
        missing."""
        done = self._in(pod).run(["getent", database, *keys])
        if not done.ok and done.returncode != _GETENT_NOT_FOUND:
            raise KubernetesError(
                f"resolving {database} {' '.join(keys)} in pod {self.namespace}/{pod}",
                done.stderr.strip() or f"getent exited {done.returncode}",
                f"kubectl -n {self.namespace} logs {pod} shows what nslcd says",
            )
        entries = (line.split(":") for line in done.stdout.splitlines() if line)
        return {fields[0]: fields for fields in entries}

    def events(self, pod: str) -> list[str]:
        listed = kubectl_json(
            "get", "events", f"--field-selector=involvedObject.kind=Pod,involvedObject.name={pod}",
            namespace=self.namespace, doing=f"reading pod {pod}'s events", backend=BACKEND,
        )  # fmt: skip
        items = sorted(
            listed["items"], key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or ""
        )
        return [f"{e.get('reason', '')}: {e.get('message', '').strip()}" for e in items]

    def wait_ready(
        self,
        replicas: int,
        say: Callable[[str], None],
        timeout: float = WAIT_SECONDS,
    ) -> list[str]:
        """Waits until `replicas` pods are Ready and sshd listens in each (none left, for 0);
        returns their names. A KubernetesError, naming each pod's state and its latest events,
        when that is not so within `timeout` seconds."""
        started = time.monotonic()
        said = started
        pause = 0.5
        while True:
            look = self.look()
            if look.serving(replicas):
                return look.ready
            waited = time.monotonic() - started
            if waited >= timeout:
                raise self._never(replicas, look, waited)
            if time.monotonic() - said >= EVERY:
                said = time.monotonic()
                say(f"{self.name}: {look.summary(replicas)} after {waited:.0f} s")
            time.sleep(pause)
            # A look is one read of the release's pods; a second's wait at most keeps an `up`
            # from sleeping long past the moment its pods turn Ready.
            pause = min(pause * 1.5, 1.0)

    def _never(self, replicas: int, look: Look, waited: float) -> KubernetesError:
        doing = f"waiting for the {self.name} ({replicas} pods, sshd on port {SSH_PORT})"
        if not look.states and replicas:
            says = (
                f"no pod of the release appeared in {waited:.0f} s; the platform's Helm "
                "controller did not install it"
            )
            step = f"see `kubectl -n {self.namespace} describe helmrelease {self.release}`"
            return KubernetesError(doing, says, step)
        lines = [f"{look.summary(replicas)} after {waited:.0f} s"]
        for state in look.states:
            if not state.ready:
                latest = " | ".join(self.events(state.name)[-_EVENTS_SHOWN:]) or "none"
                lines.append(f"{state.name}: {state.status}; events: {latest}")
        step = f"see `kubectl -n {self.namespace} describe pods -l {INSTANCE_LABEL}={self.release}`"
        return KubernetesError(doing, "; ".join(lines), step)
