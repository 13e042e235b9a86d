"""A sandbox service is defined the same whichever name started the Python that defines it, so
that `up` from a script (`pytest`'s shebang names python3) and from `python -m sandbox` never
restart a service that did not change."""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import ROOT

DEFINITIONS = (
    "import json\n"
    "from sandbox.layout import SandboxLayout\n"
    "services = SandboxLayout.from_environment().services()\n"
    "print(json.dumps({s.name: list(s.argv) for s in services}))\n"
)


def test_the_python_services_are_the_same_whichever_python_defines_them() -> None:
    defined = [
        json.loads(
            subprocess.run(
                [str(ROOT / "venv" / "bin" / name), "-c", DEFINITIONS],
                cwd=ROOT,
                env={**os.environ, "GPU_TENANTS_SANDBOX": "test"},
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
        )
        for name in ("python", "python3", "python3.11")
    ]
    assert defined[0] == defined[1] == defined[2]
    runs_python = [name for name, argv in defined[0].items() if "python" in argv[0]]
    assert sorted(runs_python) == [
        "authentik-emulator",
        "external-dns",
        "load-balancer",
        "login-release-controller",
        "partitions-configmap-volume",
        "reservation-operator",
        "retention-store",
        "smtp-relay",
        "weka-emulator",
    ], defined[0]
