"""The sandbox tests run on the one local sandbox, as `make demo` does: brought up if needed,
left running afterwards. Every test names what it creates uniquely and removes it again."""

from __future__ import annotations

import pytest

from sandbox.__main__ import up
from sandbox.layout import SandboxLayout


@pytest.fixture(scope="session")
def sandbox() -> SandboxLayout:
    layout = SandboxLayout.from_environment()
    up(layout)
    return layout
