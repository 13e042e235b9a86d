"""Credentials come from a variable or the file its _FILE twin names; errors never hold them."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.environment import secret


def test_the_variable_wins_over_its_file(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("from-file\n")
    assert secret({"TOKEN": " direct ", "TOKEN_FILE": str(file)}, "TOKEN") == "direct"
    assert secret({"TOKEN_FILE": str(file)}, "TOKEN") == "from-file"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "neither TOKEN nor TOKEN_FILE is set"),
        ({"TOKEN_FILE": "/nonexistent/token"}, "TOKEN_FILE /nonexistent/token cannot be read"),
    ],
)
def test_what_is_missing_is_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        secret(env, "TOKEN")


def test_an_empty_file_is_named_and_nothing_is_quoted(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("  \n")
    with pytest.raises(ValueError, match=f"TOKEN_FILE {file} is empty"):
        secret({"TOKEN_FILE": str(file)}, "TOKEN")
