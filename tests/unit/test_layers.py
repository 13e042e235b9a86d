"""Dependencies point one way. Read from the source (every import, at any depth of a module,
followed through the project's own modules):

- backend clients (REST and command transports, their settings, parsers and errors) reach
  neither Pulumi, nor pydantic, nor any upper layer;
- providers reach neither the spec and components (`tenant_stack`) nor the sandbox;
- the spec, components and program never reach the sandbox, toolchain, benchmarks or tests;
- the sandbox reaches the product only through the bottom layer's helpers and the platform file's
  loader;
- the operator's commands (`tenant_stack.commands`) are the top: no module outside them imports
  them but `tenant_stack/__main__.py` (and the tests, which test each layer where it is);
- inside `tenant_stack`, each module and subpackage sits on a level (`LEVELS`) and imports only
  from its own level and those below: the foundations, the spec, the components (which take
  typed args and import neither the spec nor the platform: `mapping` builds their args), the
  domain work over a spec, the program and the work over stacks, and the commands on top.

Under providers/, the provider layer is `base` and each backend's `props`, `provider`,
`resources` and `<kind>_provider` modules (one per kind of object, where a backend's providers
are split so); every other module there is a backend client or its helpers, the bottom layer.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("providers", "tenant_stack", "sandbox", "toolchain", "benchmarks", "tests")
# The provider layer: what turns Pulumi's calls into client calls, these modules and every
# `<kind>_provider` (a backend's providers split one module per kind of object). Everything else
# under providers/ is a backend client or its helpers, the bottom layer.
PROVIDER_LAYER = {"props", "provider", "resources", "base"}
# The levels inside tenant_stack, bottom first, each a set of its modules and subpackages.
LEVELS = (
    {
        "errors",
        "lifecycle",
        "partition_types",
        "annotations",
        "strict_yaml",
        "strict_models",
        "platform",
        "sizes",
        "live",
        "stacks",
    },
    {"spec"},
    {"components"},
    {
        "mapping",
        "preflight",
        "adoption",
        "handover",
        "fleet",
        "retention_calendar",
        "expiry",
        "usage_report",
        "usage_charts",
        "smoke_judging",
        "smoke",
    },
    {
        "program",
        "diagnosis",
        "importing",
        "offboarded",
        "retention_job",
        "authoring",
        "workflows",
        "doctor",
    },
    {"commands", "__main__"},
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(path): path
    for package in PACKAGES
    for path in (ROOT / package).rglob("*.py")
    if "smoke" not in path.parts
}


def is_client(module: str) -> bool:
    """A module of the bottom layer: under providers/, and neither named in `PROVIDER_LAYER`
    nor a `<kind>_provider`."""
    parts = module.split(".")
    provider_layer = parts[-1] in PROVIDER_LAYER or parts[-1].endswith("_provider")
    return parts[0] == "providers" and not provider_layer


@cache
def direct_imports(module: str) -> frozenset[str]:
    """Every module `module` imports, anywhere in its body (deferred imports too)."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    # `from package import module` names a module; `from module import name` does not.
    return frozenset(
        name for name in found if name in MODULES or name.split(".")[0] not in PACKAGES
    )


def with_parents(module: str) -> set[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def reached(module: str) -> set[str]:
    """Every module importing `module` runs, project modules followed through."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        for name in direct_imports(current):
            for step in with_parents(name):
                if step in seen:
                    continue
                seen.add(step)
                if step in MODULES:
                    todo.append(step)
    return seen


def offending(module: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        name for name in reached(module) if name.split(".")[0] in forbidden or name in forbidden
    )


@pytest.mark.parametrize("module", sorted(m for m in MODULES if is_client(m)))
def test_backend_clients_reach_no_pulumi_no_pydantic_and_no_upper_layer(module: str) -> None:
    upper = [
        name for name in reached(module) if name.startswith("providers.") and not is_client(name)
    ]
    assert (
        offending(module, ("pulumi", "pydantic", "tenant_stack", "sandbox", "tests")) + upper == []
    )


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("providers")))
def test_providers_reach_neither_the_spec_nor_the_sandbox(module: str) -> None:
    assert offending(module, ("tenant_stack", "sandbox", "tests", "toolchain")) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("tenant_stack")))
def test_the_spec_components_and_program_reach_no_sandbox(module: str) -> None:
    assert offending(module, ("sandbox", "tests", "toolchain", "benchmarks")) == []


def test_the_sandbox_uses_only_the_products_bottom_helpers_and_platform_loader() -> None:
    allowed = {"tenant_stack", "tenant_stack.errors", "tenant_stack.platform"}
    used = {
        name
        for module in MODULES
        if module.startswith("sandbox")
        for name in direct_imports(module)
        if name.split(".")[0] in ("providers", "tenant_stack")
    }
    assert sorted(n for n in used if n.startswith("providers") and not is_client(n)) == []
    assert sorted(n for n in used if n.startswith("tenant_stack") and n not in allowed) == []


@pytest.mark.parametrize(
    "module",
    sorted(
        m
        for m in MODULES
        if not m.startswith(("tenant_stack.commands", "tests")) and m != "tenant_stack.__main__"
    ),
)
def test_nothing_below_the_commands_imports_them(module: str) -> None:
    assert sorted(n for n in direct_imports(module) if n.startswith("tenant_stack.commands")) == []


def level_of(module: str) -> int:
    """The level of a tenant_stack module (the package itself: the lowest, it imports nothing)."""
    parts = module.split(".")
    if len(parts) == 1:
        return 0
    return next(i for i, level in enumerate(LEVELS) if parts[1] in level)


def test_every_part_of_tenant_stack_has_a_level() -> None:
    parts = {m.split(".")[1] for m in MODULES if m.startswith("tenant_stack.")}
    assert sorted(parts - set().union(*LEVELS)) == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("tenant_stack")))
def test_tenant_stack_imports_only_its_own_level_and_below(module: str) -> None:
    above = sorted(
        name
        for name in direct_imports(module)
        if name.startswith("tenant_stack") and level_of(name) > level_of(module)
    )
    assert above == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("tenant_stack.comp")))
def test_components_take_args_not_the_spec_nor_the_platform(module: str) -> None:
    assert offending(module, ("tenant_stack.spec", "tenant_stack.platform")) == []


def test_the_graph_is_read() -> None:
    # The rules above would pass on an empty graph; this is what they stand on.
    assert "pulumi" in offending("providers.slurm.provider", ("pulumi",))
    assert "tenant_stack.platform" in reached("tenant_stack.spec")
    assert is_client("providers.weka.client")
    assert not is_client("providers.weka.provider")
    assert not is_client("providers.weka.organization_provider")
    assert "pulumi" in offending("providers.weka.organization_provider", ("pulumi",))
    assert "tenant_stack.commands" in direct_imports("tenant_stack.__main__")
    assert level_of("tenant_stack.spec.models") < level_of("tenant_stack.components.identity")
    assert "tenant_stack.mapping" in direct_imports("tenant_stack.program")
