"""The SDK's debug messages go to the engine from a thread of their own, in order, and all of
them before the program exits; every other message is sent at once, by the caller."""

from __future__ import annotations

import threading
import time
from typing import Any

from pulumi.runtime.proto import engine_pb2

from tenant_stack.engine_log import DebugWithoutWaiting


class SlowEngine:
    """An engine `Log` call that takes `seconds` and records who sent what."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.received: list[tuple[str, str]] = []

    def __call__(self, request: engine_pb2.LogRequest) -> None:
        time.sleep(self.seconds)
        self.received.append((request.message, threading.current_thread().name))


def log(severity: Any, message: str) -> engine_pb2.LogRequest:
    return engine_pb2.LogRequest(severity=severity, message=message)


def test_debug_messages_do_not_wait_and_all_arrive_in_order() -> None:
    engine = SlowEngine(0.05)
    sender = DebugWithoutWaiting(engine)
    started = time.monotonic()
    for number in range(10):
        sender(log(engine_pb2.DEBUG, f"debug {number}"))
    handed_over = time.monotonic() - started
    sender.drain()
    assert handed_over < 0.05 * 10 / 2  # the caller did not wait for the engine
    assert [message for message, _ in engine.received] == [f"debug {n}" for n in range(10)]
    assert {thread for _, thread in engine.received} == {"engine-debug-log"}


def test_other_messages_are_sent_by_the_caller_and_waited_for() -> None:
    engine = SlowEngine(0.0)
    sender = DebugWithoutWaiting(engine)
    sender(log(engine_pb2.WARNING, "a warning"))
    sender(log(engine_pb2.ERROR, "an error"))
    assert engine.received == [
        ("a warning", threading.current_thread().name),
        ("an error", threading.current_thread().name),
    ]
    sender.drain()


def test_drain_gives_up_on_a_stuck_engine() -> None:
    sender = DebugWithoutWaiting(SlowEngine(5.0))
    sender(log(engine_pb2.DEBUG, "stuck"))
    started = time.monotonic()
    sender.drain(timeout=0.2)
    assert time.monotonic() - started < 1.0
