"""The sandbox's stand-in controllers wake on a watch event instead of waiting out their interval
(sandbox/kubernetes/client.Changes), and open a watch again when it fails. On the sandbox, every
onboarding waits on the reservation operator's and the login release controller's answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from sandbox.kubernetes.client import JSON, Changes, KubeClient, KubeError

# Far longer than any wake-up takes: a wait that lasts it was not woken.
INTERVAL = 60.0


class Api:
    """A watch whose events the test sends; its first opening fails if `fails_first`."""

    def __init__(self, fails_first: bool = False) -> None:
        self.send = threading.Event()
        self.opened = 0
        self.fails_first = fails_first

    def watch(self, path: str) -> Iterator[JSON]:
        self.opened += 1
        if self.fails_first and self.opened == 1:
            raise KubeError("GET", path, 503, "the API server is restarting")
        self.send.wait()
        yield {"type": "MODIFIED", "object": {"metadata": {"name": "tenant-foo-reservation"}}}
        threading.Event().wait()  # open, and quiet, until the test ends


def woken_within_the_interval(changes: Changes) -> bool:
    started = time.monotonic()
    changes.wait(INTERVAL)
    return time.monotonic() - started < INTERVAL


def changes_of(api: Api) -> Changes:
    def client() -> KubeClient:
        return api  # type: ignore[return-value]

    return Changes(client, ["/apis/scheduling.example.io/v1alpha1/reservations"])


def test_a_change_wakes_the_loop_at_once() -> None:
    api = Api()
    changes = changes_of(api)
    api.send.set()
    assert woken_within_the_interval(changes)


def test_a_failed_watch_is_opened_again_and_wakes_the_loop() -> None:
    api = Api(fails_first=True)
    changes = changes_of(api)
    api.send.set()
    assert woken_within_the_interval(changes)
    assert api.opened == 2
