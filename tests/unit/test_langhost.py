"""The language host stops itself once the engine that started it is gone."""

from __future__ import annotations

import socket
import sys
import threading

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "toolchain" / "langhost"))
from pulumi_language_python import engine_alive, watch_engine


class FakeServer:
    def __init__(self) -> None:
        self.stopped = threading.Event()

    def stop(self, grace: float | None) -> None:
        self.stopped.set()


def test_a_listening_engine_is_alive_and_a_closed_port_is_not() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        assert engine_alive(address)
    assert not engine_alive(address)


def test_the_host_stops_after_the_engine_misses_its_checks() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{probe.getsockname()[1]}"
    server = FakeServer()
    watch_engine(closed, server, interval=0.01, misses=3)
    assert server.stopped.is_set()
