"""Every name a spec, a platform setting or a provider's input gives is matched whole: Python's
`$` also matches before one trailing newline, so `re.match("^...$")` took "root\\n" for a name
that is not "root" and is valid, and half an `up` went through before a backend refused it."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from providers.authentik.props import GROUP, USER
from providers.base import Schema
from providers.slurm import values
from tenant_stack.spec.models import Found, Imported
from tenant_stack.spec.names import AccountName, Email, Slug, Ticket, Username
from tenant_stack.strict_models import ChartVersion, DistinguishedName, DnsLabel, DnsName

ROOT = Path(__file__).resolve().parents[2]


def _adapter(kind: Any) -> Callable[[Any], Any]:
    return TypeAdapter(kind).validate_python


def _field(schema: Schema, key: str) -> Callable[[Any], Any]:
    return next(field.parse for field in schema.fields if field.key == key)


CHECKS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "spec slug": (_adapter(Slug), "tenant-foo"),
    "spec username": (_adapter(Username), "alice"),
    "spec account": (_adapter(AccountName), "ml-team_foo"),
    "spec email": (_adapter(Email), "alice@tenant-foo.example"),
    "spec ticket": (_adapter(Ticket), "OPS-1234"),
    "import kubernetes object": (
        lambda v: Found(kubernetes=[v]),
        "ConfigMap/tenant-foo-motd",
    ),
    "import slurm object": (lambda v: Found(slurm=[v]), "Account/tenant-foo"),
    "import weka admin": (
        lambda v: Imported(date=date(2026, 12, 1), weka_org_admin=v),
        "tenant-foo-admin",
    ),
    "platform dns label": (_adapter(DnsLabel), "auth"),
    "platform dns name": (_adapter(DnsName), "login.example.com"),
    "platform base dn": (_adapter(DistinguishedName), "dc=example,dc=com"),
    "platform chart version": (_adapter(ChartVersion), "1.4.x"),
    "authentik user's tenant": (_field(USER, "tenant"), "tenant-foo"),
    "authentik username": (_field(USER, "username"), "alice"),
    "authentik email": (_field(USER, "email"), "alice@tenant-foo.example"),
    "authentik group name": (_field(GROUP, "name"), "tenant-foo-admins"),
    "slurm name": (values.name, "tenant-foo"),
    "slurm user": (values.user, "alice"),
    "slurm time limit": (values.time_limit, "2-00:00:00"),
    "slurm hosts": (values.expand_hosts, "gpu-[14-15]"),
}


@pytest.mark.parametrize("what", sorted(CHECKS))
def test_a_name_with_a_trailing_newline_is_refused(what: str) -> None:
    check, valid = CHECKS[what]
    check(valid)
    # Each error names the value, its newline shown.
    with pytest.raises(ValueError, match=re.escape(repr(valid + "\n"))):
        check(valid + "\n")


# The calls of Python's re module whose first argument is the pattern.
_RE_CALLS = {"compile", "match", "search", "fullmatch", "findall", "finditer", "sub", "split"}


def _anchored_at_end(node: ast.Call) -> str | None:
    """The pattern of an `re` call that ends in an unescaped `$` without re.MULTILINE."""
    func = node.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "re"
        and func.attr in _RE_CALLS
        and node.args
    ):
        return None
    parts = node.args[0]
    pattern = "".join(
        part.value
        for part in ast.walk(parts)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    )
    multiline = any("MULTILINE" in ast.unparse(arg) for arg in [*node.args[1:], *node.keywords])
    if multiline or not re.search(r"(?<!\\)\$$", pattern):
        return None
    return pattern


def test_no_pattern_of_the_product_or_the_emulators_ends_in_a_dollar() -> None:
    # Matched whole with fullmatch instead, which has no trailing-newline exception.
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {pattern!r}"
        for package in ("tenant_stack", "providers", "sandbox")
        for path in sorted((ROOT / package).rglob("*.py"))
        if "venv" not in path.parts
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and (pattern := _anchored_at_end(node))
    ]
    assert found == []
