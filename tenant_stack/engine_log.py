"""The Pulumi SDK's own debug messages, sent to the engine without waiting for its answer.

The Python SDK sends a few debug messages for every resource it registers ("registering
resource", "resource registration successful", ...), each one a blocking call to the engine, made
on the thread that runs every registration. At about 1.5 ms a call that is a third of a second of
a tenant's no-op preview (about 50 resources, 230 messages), whether or not anyone asked for
debug output (`pulumi preview --debug`). Handed to a thread that sends them, they still all
arrive, in their order (a debug line possibly after a later warning), and the program waits for
them before it exits. Every other severity (our warnings, the SDK's errors) is sent, and waited
for, as before.
"""

from __future__ import annotations

import atexit
import queue
import threading
from typing import Any

import grpc
from pulumi.runtime import settings
from pulumi.runtime.proto import engine_pb2

__all__ = ["DebugWithoutWaiting", "send_debug_without_waiting"]

# Long enough for an engine under load to take the last messages; a program never waits longer.
DRAIN_SECONDS = 10.0


class DebugWithoutWaiting:
    """Stands in for the engine's `Log` call: a debug message is handed to a thread of its own,
    which sends them one after another; every other message is sent, and waited for, as before."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send, name="engine-debug-log", daemon=True)
        self._sender.start()

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.severity != engine_pb2.DEBUG:
            return self._log(request, *args, **kwargs)
        self._queue.put(request)
        return None

    def _send(self) -> None:
        while (request := self._queue.get()) is not None:
            try:
                self._log(request)
            except grpc.RpcError:
                # The engine went away: nothing left to tell it, and nobody waits for this.
                return

    def drain(self, timeout: float = DRAIN_SECONDS) -> None:
        """Waits until every debug message handed over so far is sent (or `timeout` passed)."""
        self._queue.put(None)
        self._sender.join(timeout)


def send_debug_without_waiting() -> None:
    """From now on, the SDK's debug messages to the engine are sent without waiting."""
    engine = settings.get_engine()
    if engine is None or isinstance(engine.Log, DebugWithoutWaiting):
        return
    sender = DebugWithoutWaiting(engine.Log)
    engine.Log = sender
    atexit.register(sender.drain)
