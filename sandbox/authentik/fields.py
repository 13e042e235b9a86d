"""Request field parsing with Django REST Framework's coercions and error messages.

Each parser takes the raw JSON value and returns the internal value or raises FieldError with the
message DRF (3.15, as shipped with Authentik 2024.10) would put in the reply.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")

REQUIRED = "This field is required."
NULL = "This field may not be null."
BLANK = "This field may not be blank."
UNIQUE = "This field must be unique."
NOT_A_DICT = "Value must be a dictionary, and not have any duplicate keys."

# DRF's BooleanField vocabulary; 1 and 0 also match True/False and 1.0/0.0, as in DRF.
_TRUE: frozenset[Any] = frozenset(
    {"t", "T", "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "1", 1}
)
_FALSE: frozenset[Any] = frozenset(
    {"f", "F", "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "0", 0}
)
# Django's EmailValidator, reduced to what matters here: one @, a dotted domain, no spaces.
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+|[^@\s]+@localhost")
_SLUG = re.compile(r"[-a-zA-Z0-9_]+")
_DATETIME_FORMAT = "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]"


class FieldError(Exception):
    def __init__(self, *messages: str) -> None:
        super().__init__(*messages)
        self.messages = list(messages)


def string(value: Any, *, allow_blank: bool = False, max_length: int | None = None) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise FieldError("Not a valid string.")
    text = str(value).strip()  # CharField trims surrounding whitespace before anything else
    if not text and not allow_blank:
        raise FieldError(BLANK)
    if max_length is not None and len(text) > max_length:
        raise FieldError(f"Ensure this field has no more than {max_length} characters.")
    return text


def email(value: Any) -> str:
    text = string(value, allow_blank=True, max_length=254)
    if text and not _EMAIL.fullmatch(text):
        raise FieldError("Enter a valid email address.")
    return text


def slug(value: Any, *, max_length: int) -> str:
    text = string(value, max_length=max_length)
    if not _SLUG.fullmatch(text):
        raise FieldError(
            'Enter a valid "slug" consisting of letters, numbers, underscores or hyphens.'
        )
    return text


def boolean(value: Any) -> bool:
    try:
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    except TypeError:  # unhashable (list, dict)
        pass
    raise FieldError("Must be a valid boolean.")


def choice(value: Any, choices: tuple[str, ...]) -> str:
    if isinstance(value, str) and value in choices:
        return value
    raise FieldError(f'"{value}" is not a valid choice.')


def json_dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError(NOT_A_DICT)
    return value


def timestamp(value: Any) -> datetime:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise FieldError(
            f"Datetime has wrong format. Use one of these formats instead: {_DATETIME_FORMAT}."
        ) from None
    # Authentik runs with USE_TZ and UTC: naive input is taken as UTC.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def int_pk(value: Any) -> int:
    """A Django AutoField lookup value, as PrimaryKeyRelatedField coerces it."""
    if isinstance(value, bool):
        raise FieldError(f"Incorrect type. Expected pk value, received {type(value).__name__}.")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise FieldError(
            f"Incorrect type. Expected pk value, received {type(value).__name__}."
        ) from None


def uuid_pk(value: Any) -> str:
    """A Django UUIDField lookup value; a malformed one fails with Django's own message."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise FieldError(f"Incorrect type. Expected pk value, received {type(value).__name__}.")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise FieldError(f"\u201c{value}\u201d is not a valid UUID.") from None


def does_not_exist(value: Any) -> FieldError:
    return FieldError(f'Invalid pk "{value}" - object does not exist.')


def related_list(value: Any, resolve: Callable[[Any], T]) -> list[T]:
    """A many=True PrimaryKeyRelatedField: a list whose items `resolve` turns into objects."""
    if isinstance(value, str) or not isinstance(value, list):
        raise FieldError(f'Expected a list of items but got type "{type(value).__name__}".')
    return [resolve(item) for item in value]


@dataclass(frozen=True)
class Field:
    """One writable serializer field.

    `parse` gets the raw value (never None unless `allow_null`); `default` applies when the field
    is absent from a full (non-partial) write, as DRF does for fields declared with a default.
    """

    parse: Callable[[Any], Any]
    required: bool = False
    allow_null: bool = False
    default: Callable[[], Any] | None = None


def parse_body(
    body: Any, fields: dict[str, Field], *, partial: bool
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Validate a write body field by field; returns the values given and the errors found."""
    if not isinstance(body, dict):
        raise FieldError(f"Invalid data. Expected a dictionary, but got {type(body).__name__}.")
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name, spec in fields.items():
        if name not in body:
            if partial:
                continue
            if spec.required:
                errors[name] = [REQUIRED]
            elif spec.default is not None:
                values[name] = spec.default()
            continue
        raw = body[name]
        if raw is None and not spec.allow_null:
            errors[name] = [NULL]
            continue
        try:
            values[name] = None if raw is None else spec.parse(raw)
        except FieldError as exc:
            errors[name] = exc.messages
    return values, errors
