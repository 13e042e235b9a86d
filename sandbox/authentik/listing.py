"""List endpoints: django-filter filters, DRF search and ordering, and Authentik's pagination."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sandbox.authentik.errors import ApiError, detail

T = TypeVar("T")
K = TypeVar("K")

PAGE_SIZE = 100  # Authentik's REST_FRAMEWORK["PAGE_SIZE"]


class Query:
    """Query parameters with Django's QueryDict semantics: `get` is the last value given."""

    def __init__(self, params: dict[str, list[str]]) -> None:
        self.params = params

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.params.get(name)
        return values[-1] if values else default

    def value(self, name: str) -> str | None:
        """A filter's value; django-filter skips a filter given an empty value."""
        return self.get(name) or None

    def values(self, name: str) -> list[str]:
        return [v for v in self.params.get(name, []) if v]

    def flag(self, name: str) -> bool:
        """include_users / include_groups: anything but "true" (any case) turns them off."""
        return str(self.get(name, "true")).lower() == "true"


class FilterErrors:
    """A django-filter form's errors, answered together as one 400."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)

    def raise_any(self) -> None:
        if self.errors:
            raise ApiError(400, self.errors)


def boolean(value: str | None) -> bool | None:
    """django-filter's BooleanWidget: anything it does not know means "no filter"."""
    return {"true": True, "True": True, "1": True, "false": False, "False": False, "0": False}.get(
        value or ""
    )


def choices(
    query: Query,
    name: str,
    errors: FilterErrors,
    lookup: Callable[[str], K | None],
    *,
    is_valid: Callable[[str], bool] = lambda _: True,
) -> list[K] | None:
    """A ModelMultipleChoiceFilter: every value must name an existing object; None = no filter."""
    raw = query.values(name)
    if not raw:
        return None
    found: list[K] = []
    for value in raw:
        if not is_valid(value):
            errors.add(name, f"\u201c{value}\u201d is not a valid value.")
            return None
        obj = lookup(value)
        if obj is None:
            errors.add(name, f"Select a valid choice. {value} is not one of the available choices.")
            return None
        found.append(obj)
    return found


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def is_int(value: str) -> bool:
    return re.fullmatch(r"\s*[+-]?\d+\s*", value) is not None


def json_equal(left: Any, right: Any) -> bool:
    """Equality of two JSON values as Postgres jsonb compares them (true is not 1, 1 is 1.0)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and left == right


_MISSING = object()


def _lookup_path(attributes: Any, path: list[str]) -> Any:
    for key in path:
        if isinstance(attributes, dict) and key in attributes:
            attributes = attributes[key]
        elif isinstance(attributes, list) and key.isdigit() and int(key) < len(attributes):
            attributes = attributes[int(key)]
        else:
            return _MISSING
    return attributes


def by_attributes(items: list[T], raw: str | None, attributes: Callable[[T], Any]) -> list[T]:
    """Authentik's `attributes` filter: a JSON object of `key: value`, all of which must match.

    Keys go through Django's JSONField lookups, so `a__b` reaches into nested objects.
    """
    if raw is None:
        return items
    try:
        wanted = json.loads(raw)
    except ValueError:
        raise ApiError(400, ["filter: failed to parse JSON"]) from None
    if not isinstance(wanted, dict):
        raise ApiError(400, ["filter: value must be key:value mapping"])
    return [
        item
        for item in items
        if all(
            (found := _lookup_path(attributes(item), key.split("__"))) is not _MISSING
            and json_equal(found, value)
            for key, value in wanted.items()
        )
    ]


def search(items: list[T], raw: str | None, fields: Callable[[T], Iterable[str]]) -> list[T]:
    """DRF's SearchFilter: every term must appear (case-insensitively) in one of the fields."""
    if not raw:
        return items
    terms = [t.strip("\"'").casefold() for t in re.split(r"[\s,]+", raw) if t.strip("\"'")]
    return [
        item
        for item in items
        if all(any(term in f.casefold() for f in fields(item)) for term in terms)
    ]


def order(
    items: list[T], raw: str | None, fields: dict[str, Callable[[T], Any]], default: list[str]
) -> list[T]:
    """DRF's OrderingFilter: unknown fields are dropped; none left means the default ordering."""
    wanted = [f.strip() for f in (raw or "").split(",") if f.strip().lstrip("-") in fields]
    result = list(items)
    for term in reversed(wanted or default):
        key = fields[term.lstrip("-")]
        # Postgres puts NULLs last in ascending order, first in descending order.
        result.sort(key=lambda item: _null_last(key(item)), reverse=term.startswith("-"))
    return result


def _null_last(value: Any) -> tuple[bool, Any]:
    return (value is None, "" if value is None else value)


def _page_size(raw: str | None) -> int:
    try:
        size = int(raw or "")
    except ValueError:
        return PAGE_SIZE
    return size if size > 0 else PAGE_SIZE


def paginate(items: list[T], query: Query) -> tuple[list[T], dict[str, int]]:
    """Django's Paginator as Authentik's Pagination class reports it (0 means "no such page")."""
    size = _page_size(query.get("page_size"))
    count = len(items)
    pages = max(1, math.ceil(count / size))
    raw = query.get("page") or "1"
    try:
        number = pages if raw == "last" else int(raw)
    except ValueError:
        raise detail(404, "Invalid page.") from None
    if not 1 <= number <= pages:
        raise detail(404, "Invalid page.")
    start = (number - 1) * size
    page = items[start : start + size]
    return page, {
        "next": number + 1 if number < pages else 0,
        "previous": number - 1 if number > 1 else 0,
        "count": count,
        "current": number,
        "total_pages": pages,
        "start_index": start + 1 if count else 0,
        "end_index": start + len(page),
    }
