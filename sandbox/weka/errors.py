"""The error every emulated call can answer with: the HTTP status and the real API's message.

A module of its own because mounts.py raises it too, and must not import the cluster's rules,
which use mounts.py.
"""

from __future__ import annotations


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
