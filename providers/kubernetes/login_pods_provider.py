"""Runbook step 5a as a resource: made or updated once the login release's pods are Ready with
sshd listening (`providers.kubernetes.login_pods`), so that `up` ends only when users can log in.
`release_values` is the digest of what the release was given: a change of it rolls the pods, and
the update waits again. Nothing to delete: the release and its pods are the release's."""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers import progress
from providers.base import Field, Schema, SchemaProvider, nonempty_text, whole_number
from providers.errors import KubernetesError
from providers.kubernetes.login_pods import LoginPods

__all__ = ["LoginPodsReadyProvider"]


def _replicas(value: Any) -> int:
    replicas = whole_number(value, "replicas")
    if replicas < 0:
        raise ValueError(f"{value!r} replicas is fewer than none")
    return replicas


READY = Schema(
    kind="login pods ready",
    fields=(
        Field("namespace", nonempty_text, replaces=True),
        Field("release", nonempty_text, replaces=True),
        Field("replicas", _replicas),
        Field("release_values", nonempty_text),
    ),
)


class LoginPodsReadyProvider(SchemaProvider):
    schema = READY
    error = KubernetesError

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self._wait(props)
        return CreateResult(f"{p['namespace']}/{p['release']}", p)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._wait(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        p = self.load(props, f"waiting for the login release {props.get('release')!r}")
        pods = LoginPods(p["namespace"], p["release"])
        return {**p, "pods": pods.wait_ready(p["replicas"], progress.say)}
