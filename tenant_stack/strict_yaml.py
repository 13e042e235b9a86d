"""The project's YAML boundary: the strict loader every YAML file of the project (the platform
config, tenant specs, users files) is read with, and what it cannot read as located `Problem`s."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode

from tenant_stack.errors import PlatformError, Problem, SpecError

__all__ = [
    "Unbuildable",
    "parse_yaml",
    "read_yaml_mapping",
    "unbuildable_problems",
    "yaml_problem",
]


class _StrictLoader(yaml.SafeLoader):
    """PyYAML implements YAML 1.1, which turns values a reviewer reads as text into something else:
    `off`/`no` become booleans, `24:00:00` becomes the integer 86400 (base 60) and `010` becomes
    8. This loader resolves only the YAML 1.2 core forms (true/false, decimal and hex integers,
    floats, null) plus plain dates, and refuses duplicate keys, which PyYAML would silently
    resolve to the last one."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        first_line: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in first_line:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first written on line {first_line[key]}); "
                    "keep one",
                    key_node.start_mark,
                )
            if isinstance(key, Hashable):
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


# Replaces, not extends, SafeLoader's YAML 1.1 resolvers. PyYAML dispatches on a scalar's first
# character; an empty scalar is looked up under "".
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", [*"tTfF"]),
    ("int", r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$", [*"-+0123456789"]),
    (
        "float",
        r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        [*"-+0123456789."],
    ),
    ("null", r"^(?:~|null|Null|NULL|)$", [*"~nN", ""]),
    ("timestamp", r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", [*"0123456789"]),
):
    _StrictLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), _first)


@dataclass(frozen=True)
class Unbuildable:
    """A scalar YAML recognised (a date, a number, a tagged value) but could not build, such as
    `2027-02-29`. The loader keeps it in place, so the caller can name its field."""

    text: str
    kind: str
    reason: str
    line: int

    def describe(self) -> str:
        return f"{self.text!r} (line {self.line}) is not a valid {self.kind}: {self.reason}"


def _keeping_unbuildable(
    kind: str, construct: Callable[[yaml.SafeLoader, ScalarNode], Any]
) -> Callable[[yaml.SafeLoader, ScalarNode], Any]:
    def tolerant(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as exc:
            return Unbuildable(str(node.value), kind, str(exc), node.start_mark.line + 1)

    return tolerant


# PyYAML's constructors raise a bare ValueError (no line, no field) for `2027-02-29` or `!!int x`.
for _tag, _kind_name, _construct in (
    ("timestamp", "date", yaml.SafeLoader.construct_yaml_timestamp),
    ("int", "integer", yaml.SafeLoader.construct_yaml_int),
    ("float", "number", yaml.SafeLoader.construct_yaml_float),
):
    _StrictLoader.add_constructor(
        f"tag:yaml.org,2002:{_tag}",
        _keeping_unbuildable(_kind_name, _construct),
    )


def parse_yaml(text: str) -> Any:
    """Parse one YAML document with the strict loader; raises `yaml.YAMLError`. A scalar it
    cannot build is left as an `Unbuildable` (see `unbuildable_problems`)."""
    return yaml.load(text, Loader=_StrictLoader)


def unbuildable_problems(data: Any, location: str = "") -> list[Problem]:
    """Every `Unbuildable` in parsed YAML, as a problem at its dotted field path."""
    if isinstance(data, Unbuildable):
        return [Problem(location, data.describe())]
    if isinstance(data, dict):
        items: Iterable[tuple[object, Any]] = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        return []
    return [
        problem
        for key, value in items
        for problem in unbuildable_problems(value, f"{location}.{key}" if location else str(key))
    ]


def yaml_problem(error: yaml.YAMLError) -> Problem:
    """A YAML syntax error as a problem that names the line and column."""
    mark = getattr(error, "problem_mark", None)
    detail = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    text = f"{context}: {detail}" if context else str(detail)
    if mark is None:
        return Problem("", f"not valid YAML: {text}")
    return Problem("", f"line {mark.line + 1}, column {mark.column + 1}: not valid YAML: {text}")


def read_yaml_mapping(
    path: Path, what: str, error: type[PlatformError | SpecError]
) -> dict[str, Any]:
    """The top-level mapping of a YAML file; raises `error` naming what prevents reading it."""
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        problem = Problem("", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        raise error(path, [problem]) from None
    except yaml.YAMLError as exc:
        raise error(path, [yaml_problem(exc)]) from None
    if data is None:
        raise error(path, [Problem("", f"the file is empty; it should hold {what}")])
    if not isinstance(data, dict):
        raise error(path, [Problem("", f"expected {what} at the top level, found {_kind(data)}")])
    unbuildable = unbuildable_problems(data)
    if unbuildable:
        raise error(path, unbuildable)
    return data


def _kind(value: object) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )
