"""The users file a new tenant's contract comes with: one row (CSV) or one mapping (YAML) per
user, with `username`, `name`, `email`, `ssh_keys` and, optionally, `team`.

CSV has a header row naming its columns; a cell of several SSH keys holds one per line (a
spreadsheet's line break inside a cell, which CSV quotes). YAML is a list of users, or a mapping
whose `users:` is one (a spec's own `users:` block pasted); `ssh_keys` is a list or one key.

Every value is checked with the spec's own field types, so that a problem is reported at the
file's line, where the operator fixes it, rather than at a spec field they never wrote.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from tenant_stack.errors import Problem
from tenant_stack.spec.names import AccountName, Email, PersonName, Username
from tenant_stack.spec.ssh_keys import SshKey
from tenant_stack.strict_yaml import parse_yaml, unbuildable_problems

__all__ = ["COLUMNS", "UserEntry", "UsersFile", "read_users"]

COLUMNS = ("username", "name", "email", "ssh_keys", "team")
_REQUIRED = COLUMNS[:4]
_TYPES: dict[str, TypeAdapter[Any]] = {
    "username": TypeAdapter(Username),
    "name": TypeAdapter(PersonName),
    "email": TypeAdapter(Email),
    "ssh_keys": TypeAdapter(list[SshKey]),
    "team": TypeAdapter(AccountName | None),
}


@dataclass(frozen=True)
class UserEntry:
    """One user as the file gives them, with the line each value is on."""

    username: str
    name: str
    email: str
    ssh_keys: tuple[str, ...]
    team: str | None
    line: int  # where the user starts
    lines: dict[str, int] = field(default_factory=dict)  # each field's line, where known

    def line_of(self, field_name: str) -> int:
        return self.lines.get(field_name, self.line)


@dataclass(frozen=True)
class UsersFile:
    path: Path
    users: list[UserEntry]
    refusals: list[Problem]  # each located `<file>:<line>`

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"


def read_users(path: Path) -> UsersFile:
    """The users `path` lists, and every problem of the file, each at its line. Raises
    OSError when the file cannot be read at all."""
    # utf-8-sig: a spreadsheet's CSV export often starts with a byte order mark.
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        rows, refusals = _csv_rows(text)
    elif path.suffix.lower() in (".yaml", ".yml"):
        rows, refusals = _yaml_rows(text)
    else:
        return UsersFile(path, [], [Problem(str(path), "name the file .csv, .yaml or .yml")])
    users: list[UserEntry] = []
    first_line: dict[str, int] = {}
    for row in rows:
        entry, problems = _entry(row)
        refusals += problems
        if entry is None:
            continue
        if entry.username in first_line:
            refusals.append(
                Problem(
                    str(entry.line_of("username")),
                    f"user {entry.username!r} is already on line {first_line[entry.username]}; "
                    "list each user once",
                )
            )
            continue
        first_line[entry.username] = entry.line_of("username")
        users.append(entry)
    if not users and not refusals:
        refusals.append(Problem("1", "no users: a tenant has at least one"))
    located = [
        Problem(f"{path}:{p.location}" if p.location else str(path), p.message) for p in refusals
    ]
    return UsersFile(path, users, located)


@dataclass(frozen=True)
class _Row:
    values: dict[str, Any]
    line: int
    lines: dict[str, int]


def _csv_rows(text: str) -> tuple[list[_Row], list[Problem]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as error:
        return [], [Problem("1", f"not CSV: {error}")]
    if header is None:
        return [], [Problem("1", f"empty; the first line names the columns: {', '.join(COLUMNS)}")]
    columns = [name.strip().lower() for name in header]
    unknown = [name for name in columns if name not in COLUMNS]
    missing = [name for name in _REQUIRED if name not in columns]
    repeated = sorted({name for name in columns if columns.count(name) > 1})
    if unknown or missing or repeated:
        said = [
            *([f"unknown column {', '.join(map(repr, unknown))}"] if unknown else []),
            *([f"missing column {', '.join(missing)}"] if missing else []),
            *([f"column {', '.join(repeated)} named twice"] if repeated else []),
        ]
        return [], [Problem("1", f"{'; '.join(said)}: the columns are {', '.join(COLUMNS)}")]
    rows, problems = [], []
    line = reader.line_num + 1  # where the next record starts (a quoted cell may span lines)
    try:
        for record in reader:
            start, line = line, reader.line_num + 1
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(columns):
                problems.append(
                    Problem(str(start), f"{len(record)} cells; the header names {len(columns)}")
                )
                continue
            values: dict[str, Any] = {
                name: cell.strip() for name, cell in zip(columns, record, strict=True)
            }
            values["ssh_keys"] = [k.strip() for k in values["ssh_keys"].splitlines() if k.strip()]
            if not values.get("team"):
                values.pop("team", None)
            rows.append(_Row(values, start, {}))
    except csv.Error as error:
        problems.append(Problem(str(reader.line_num), f"not CSV: {error}"))
    return rows, problems


def _yaml_rows(text: str) -> tuple[list[_Row], list[Problem]]:
    try:
        data = parse_yaml(text)
        # The same text composed again, for the line each value is on.
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = str(mark.line + 1) if mark is not None else ""
        return [], [Problem(line, f"not valid YAML: {getattr(error, 'problem', None) or error}")]
    if isinstance(data, dict) and set(data) == {"users"} and isinstance(document, yaml.MappingNode):
        data, document = data["users"], document.value[0][1]
    if not isinstance(data, list) or not isinstance(document, yaml.SequenceNode):
        return [], [Problem("1", "expected a list of users (or a mapping whose users: is one)")]
    rows, problems = [], []
    for index, (item, node) in enumerate(zip(data, document.value, strict=True)):
        line = node.start_mark.line + 1
        if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
            problems.append(Problem(str(line), f"user {index + 1} is not a mapping of fields"))
            continue
        lines = {str(key.value): value.start_mark.line + 1 for key, value in node.value}
        unknown = [str(name) for name in item if name not in COLUMNS]
        for name in unknown:
            known = ", ".join(COLUMNS)
            problems.append(Problem(str(lines[name]), f"unknown field {name!r}; fields: {known}"))
        for problem in unbuildable_problems(item):
            problems.append(Problem(str(lines.get(problem.location, line)), problem.message))
        if unknown:
            continue
        values = dict(item)
        if isinstance(values.get("ssh_keys"), str):
            values["ssh_keys"] = [values["ssh_keys"]]
        if values.get("team") is None:
            values.pop("team", None)
        rows.append(_Row(values, line, lines))
    return rows, problems


def _entry(row: _Row) -> tuple[UserEntry | None, list[Problem]]:
    """The row as a user, or the problems of its values, each at its line."""
    problems = []
    checked: dict[str, Any] = {}
    for name in COLUMNS:
        where = str(row.lines.get(name, row.line))
        if name not in row.values:
            if name in _REQUIRED:
                problems.append(Problem(where, f"{name}: missing; every user has one"))
            continue
        value = row.values[name]
        if name == "ssh_keys" and value == []:
            problems.append(Problem(where, "ssh_keys: none; every user has at least one key"))
            continue
        try:
            checked[name] = _TYPES[name].validate_python(value)
        except ValidationError as error:
            for detail in error.errors(include_url=False):
                key = detail["loc"][0] if detail["loc"] and name == "ssh_keys" else None
                at = f"{name} {key + 1}" if isinstance(key, int) else name
                message = str(detail["msg"]).removeprefix("Value error, ")
                problems.append(Problem(where, f"{at}: {message}"))
    if problems:
        return None, problems
    entry = UserEntry(
        checked["username"],
        checked["name"],
        checked["email"],
        tuple(checked["ssh_keys"]),
        checked.get("team"),
        row.line,
        row.lines,
    )
    return entry, []
