"""What a no-op preview loads. The program's modules load in every preview, and the dynamic-provider
host loads each provider's module to check and diff its resources: neither needs a backend
client for that, so neither loads one (the HTTP stack, boto3; the preflight loads the Authentik
client when it runs, after the spec has passed). The program's first cluster reads
start before the spec and the components load, so their module loads neither."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# What the dynamic-provider host unpickles and the program declares resources with.
PROVIDER_MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for path in (ROOT / "providers").rglob("*.py")
    if path.stem in ("provider", "resources", "props") or path.stem.endswith("_provider")
)
BACKEND_CLIENTS = (
    "httpx",
    "boto3",
    "providers.authentik.client",
    "providers.weka.client",
    "providers.http_retry",
)


def loaded_by(*modules: str) -> set[str]:
    """The modules a fresh interpreter holds after importing `modules`."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(modules)!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout))


def test_the_provider_modules_are_found() -> None:
    assert "providers.weka.organization_provider" in PROVIDER_MODULES
    assert "providers.authentik.provider" in PROVIDER_MODULES


@pytest.mark.parametrize("module", ["tenant_stack.program", *PROVIDER_MODULES])
def test_a_preview_loads_no_backend_client(module: str) -> None:
    assert sorted(loaded_by(module) & set(BACKEND_CLIENTS)) == []


def test_the_first_cluster_reads_load_neither_the_spec_nor_the_components() -> None:
    loaded = loaded_by("tenant_stack.live")
    assert sorted(m for m in loaded if m.startswith(("pydantic", "pulumi", "tenant_stack."))) == [
        "tenant_stack.annotations",
        "tenant_stack.errors",
        "tenant_stack.live",
        "tenant_stack.sizes",
    ]


def test_a_call_that_needs_the_backend_loads_its_client() -> None:
    # The other side of the bargain: the client is there when a provider makes one.
    code = (
        "import sys\n"
        "from providers.weka.props import weka_client\n"
        "from providers.weka.settings import Settings\n"
        "weka_client(Settings('https://weka.invalid/api/v2', 'admin', 'x')).close()\n"
        "print('httpx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "True"
