"""The documentation: the site builds with MkDocs' --strict (a broken link or anchor fails it),
the README's links resolve, and every `gpu-tenants` command a page shows exists, flags included."""

from __future__ import annotations

import argparse
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenant_stack.commands import parser
from tests.conftest import ROOT

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# Where a command shown in a page ends: a shell operator or a comment.
_END = re.compile(r"\s(?:\||&&|;|#|>>?|2>)(?:\s|$)")
_COMMAND = re.compile(
    r"(?:^|(?<=[\s(]))(?:venv/bin/)?(?:gpu-tenants|python -m tenant_stack)(?=\s|$)"
)
_COMMENT = re.compile(r"(?:^|\s)#\s")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`]+)`")


def _snippets(text: str) -> Iterator[str]:
    """Each command line of the fenced blocks (an indented line continues the one above; a
    comment is prose) and each code span of the prose (which may wrap across lines)."""
    for block in _FENCE.findall(text):
        lines: list[str] = []
        for line in (_COMMENT.split(line)[0] for line in block.splitlines()[1:-1]):
            if lines and (line.startswith((" ", "\t")) or lines[-1].endswith("\\")):
                lines[-1] = lines[-1].rstrip("\\") + " " + line.strip()
            else:
                lines.append(line)
        yield from lines
    yield from _SPAN.findall(_FENCE.sub("", text).replace("\n", " "))


def shown_commands(text: str) -> Iterator[list[str]]:
    """The words of each `gpu-tenants ...` a page shows, brackets and quotes stripped."""
    for snippet in _snippets(text):
        for found in _COMMAND.finditer(snippet):
            rest = _END.split(snippet[found.end() :], maxsplit=1)[0]
            yield [word.strip("[]{}()'\",") for word in rest.split()]


def _placeholder(word: str) -> bool:
    return "<" in word or "..." in word or word.isupper() or not word


def _subcommands(command: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def unknown_words(words: list[str]) -> list[str]:
    """The subcommands and options in `words` the command does not have."""
    command, unknown, path = parser(), [], ["gpu-tenants"]
    for word in words:
        subcommands = _subcommands(command)
        if word.startswith("-"):
            option = word.split("=", 1)[0]
            if option not in command._option_string_actions:
                unknown.append(f"{' '.join(path)} {option}")
        elif subcommands:
            if _placeholder(word):
                break
            if word not in subcommands:
                unknown.append(f"{' '.join(path)} {word}")
                break
            command, path = subcommands[word], [*path, word]
    return unknown


def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    built = subprocess.run(
        [str(ROOT / "venv" / "bin" / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "onboarding.html").exists()


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_a_page_shows_exists(page: Path) -> None:
    unknown = [u for words in shown_commands(page.read_text()) for u in unknown_words(words)]
    assert not unknown, f"{page.name} shows what gpu-tenants does not have: {unknown}"


def test_the_pages_show_commands() -> None:
    # The check above passes trivially if nothing is found; the daily pages must be found.
    shown = {
        page.name: [words[0] for words in shown_commands(page.read_text()) if words]
        for page in PAGES
    }
    assert "stage" in shown["offboarding.md"]
    assert {"drift", "review", "check"} <= set(shown["fleet.md"])


def test_a_wrong_subcommand_or_flag_is_found() -> None:
    text = "Run `gpu-tenants drfit` and\n```sh\ngpu-tenants fleet stage x --stgae s  # note\n```\n"
    found = [u for words in shown_commands(text) for u in unknown_words(words)]
    assert found == ["gpu-tenants fleet stage --stgae", "gpu-tenants drfit"]


def test_the_readmes_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links to the docs"
    assert [t for t in local if not (ROOT / t).exists()] == []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_a_page_stands_alone_and_leaves_the_suites_figures_to_testing_md(page: Path) -> None:
    text = page.read_text()
    assert "../shared" not in text, f"{page.name} points outside the repository"
    if page.name != "testing.md":
        counts = re.findall(r"\b\d{3,} tests\b", text)
        assert not counts, f"{page.name} gives the suite's size ({counts}): link testing.md"
