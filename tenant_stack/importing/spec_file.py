"""A spec as YAML for review: the spec's own layout, with a comment above every value a command
chose rather than read or was given, so the pull request shows what to check: what `import`
inferred or no backend holds (`render`), what `new` chose and why (`render_commented`)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from tenant_stack.importing.inferred_spec import Note

__all__ = ["render", "render_commented"]

_LABELS = {"inferred": "inferred", "todo": "TODO"}


def _scalar(value: Any) -> str:
    # A one-item flow list, so that YAML quotes the value exactly where it must.
    return str(yaml.safe_dump([value], default_flow_style=True, width=1000)).strip()[1:-1]


def _comment(text: str | None, indent: int) -> list[str]:
    if text is None:
        return []
    return [" " * indent + "# " + line for line in textwrap.wrap(text, 96 - indent)]


def _flow(values: Sequence[Any]) -> bool:
    return all(not isinstance(v, dict | list) for v in values)


def _mapping(data: dict[str, Any], path: str, indent: int, notes: Mapping[str, str]) -> list[str]:
    lines = []
    pad = " " * indent
    for key, value in data.items():
        at = f"{path}.{key}" if path else key
        lines += _comment(notes.get(at), indent)
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines += _mapping(value, at, indent + 2, notes)
        elif isinstance(value, list) and not _flow(value):
            lines.append(f"{pad}{key}:")
            for index, item in enumerate(value):
                item_lines = _mapping(item, f"{at}.{index}", indent + 4, notes)
                first = next(
                    i for i, line in enumerate(item_lines) if not line.lstrip().startswith("#")
                )
                item_lines[first] = f"{pad}  - {item_lines[first].lstrip()}"
                lines += item_lines
        elif isinstance(value, list) and len(flow := f"[{', '.join(map(_scalar, value))}]") < 72:
            lines.append(f"{pad}{key}: {flow}")
        elif isinstance(value, list):
            lines.append(f"{pad}{key}:")
            lines += [f"{pad}  - {_scalar(item)}" for item in value]
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}")
    return lines


def render(document: dict[str, Any], notes: Sequence[Note], header: Sequence[str]) -> str:
    """`document` as the spec file, `header` as its opening comment, each inferred or TODO
    note above its value."""
    commented = {n.location: f"{_LABELS[n.kind]}: {n.text}" for n in notes if n.kind in _LABELS}
    return render_commented(document, commented, header)


def render_commented(
    document: dict[str, Any], comments: Mapping[str, str], header: Sequence[str]
) -> str:
    """`document` as the spec file, `header` as its opening comment, each of `comments` (by
    dotted field path, `users.0.uid`) above its value."""
    lines = [f"# {line}" if line else "#" for line in header]
    return "\n".join([*lines, *_mapping(document, "", 0, comments)]) + "\n"
