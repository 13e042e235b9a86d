"""How the login release's wait reads a pod: its sockets from /proc/net/tcp, its state from the
pod's status as the API server writes it."""

from __future__ import annotations

import socket
from pathlib import Path

from providers.kubernetes.login_pods import _state, listens


def test_a_listening_socket_is_read_from_proc_net_tcp_and_gone_once_closed() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    assert not listens(Path("/proc/net/tcp").read_text(), port)  # bound, not listening
    server.listen()
    try:
        assert listens(Path("/proc/net/tcp").read_text(), port)
        # A connection to it is ESTABLISHED, not LISTEN, on both ends: still the one listener.
        with socket.create_connection(("127.0.0.1", port)):
            assert listens(Path("/proc/net/tcp").read_text(), port)
    finally:
        server.close()
    assert not listens(Path("/proc/net/tcp").read_text(), port)


def test_a_pods_state_names_what_keeps_it_from_ready() -> None:
    pending = {
        "metadata": {"name": "login-x-1"},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False",
                 "message": "0/3 nodes are available: 3 Insufficient cpu."}
            ],
        },
    }  # fmt: skip
    assert _state(pending).status == "unscheduled: 0/3 nodes are available: 3 Insufficient cpu."
    waiting = {
        "metadata": {"name": "login-x-0"},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"state": {"waiting": {"reason": "ErrImageNeverPull"}}}],
        },
    }
    state = _state(waiting)
    assert (state.ready, state.status) == (False, "ErrImageNeverPull")
    running = {
        "metadata": {"name": "login-x-0"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert _state(running).ready
