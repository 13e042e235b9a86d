"""API failures as Django REST Framework renders them, so clients see the real error bodies."""

from __future__ import annotations

from typing import Any

NOT_FOUND = "Not found."
NOT_AUTHENTICATED = "Authentication credentials were not provided."
TOKEN_INVALID = "Token invalid/expired"
PERMISSION_DENIED = "You do not have permission to perform this action."


class ApiError(Exception):
    """Raised anywhere in a handler; the router turns it into the reply."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


def detail(status: int, message: str) -> ApiError:
    return ApiError(status, {"detail": message})


def not_found() -> ApiError:
    return detail(404, NOT_FOUND)


def field_errors(errors: dict[str, list[str]]) -> ApiError:
    return ApiError(400, errors)
