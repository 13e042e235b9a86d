"""The error every emulated call can answer with: the HTTP status and the real API's message.

A module of its own because mounts.py raises it too, and must not import the cluster's rules,
which use mounts.py.
"""

from __future__ import annotations


class ApiError(Exception):
    """`exception_class` is the class name the real API adds to some errors' `data`
    (`FilesystemDoesNotExistException`), by which clients tell "missing" from other 400s."""

    def __init__(self, status: int, message: str, exception_class: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.exception_class = exception_class

    def body(self) -> dict[str, object]:
        if not self.exception_class:
            return {"message": self.message}
        return {
            "message": self.message,
            "data": {"exceptionClass": self.exception_class, "message": self.message},
        }


def missing_filesystem(uid: str) -> ApiError:
    """Another organization's filesystem is reported missing too: orgs cannot see each other."""
    return ApiError(400, f"Filesystem {uid} does not exist", "FilesystemDoesNotExistException")
