"""Offboarding step 7's judging of a node's health at release, from its Node object."""

from __future__ import annotations

from typing import Any

from providers.offboarding.node_release_provider import fault


def node(*conditions: dict[str, str]) -> dict[str, Any]:
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    return {"metadata": {"name": "gpu-03"}, "status": {"conditions": [ready, *conditions]}}


def test_a_node_whose_health_condition_is_false_is_held_back_with_the_checkers_words() -> None:
    failing = {"type": "GPUHealthy", "status": "False", "reason": "XidErrors",
               "message": "Xid 79 on GPU 3"}  # fmt: skip
    assert fault(node(failing), "GPUHealthy") == "GPUHealthy False (XidErrors: Xid 79 on GPU 3)"
    assert fault(node({"type": "GPUHealthy", "status": "False"}), "GPUHealthy") == (
        "GPUHealthy False"
    )


def test_a_healthy_unknown_or_unreported_node_goes_back_to_the_pool() -> None:
    for conditions in (
        ({"type": "GPUHealthy", "status": "True"},),
        ({"type": "GPUHealthy", "status": "Unknown"},),
        (),
        # Another checker's condition says nothing of this one's.
        ({"type": "DiskPressure", "status": "False"},),
    ):
        assert fault(node(*conditions), "GPUHealthy") is None
