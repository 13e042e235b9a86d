"""The command reference in docs/cli/: a page per command, made from the parser itself, so the
pages say what `--help` says. `python -m tenant_stack.commands.reference` (`make cli-reference`)
writes them and the site's navigation to them; tests/unit/test_cli_reference.py fails when they
are stale."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = "cli"
# The width the pages are wrapped at, whatever the terminal that makes them.
WIDTH = "100"
# mkdocs.yml's lines between these two are the reference's navigation, written here.
NAV_START = "          # The command reference: made by `make cli-reference`, do not edit."
NAV_END = "          # The end of the command reference."


def leaves(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command that runs (not a group of commands), by its words after `gpu-tenants`."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield parser.prog.removeprefix("gpu-tenants "), parser
        return
    for sub in groups[0].choices.values():
        yield from leaves(sub)


def pages() -> dict[str, tuple[str, str]]:
    """Each page's file name under docs/cli/, with its title and its Markdown."""
    from tenant_stack.commands import parser

    top = parser()
    commands = list(leaves(top))
    index = [
        "# Command reference",
        "",
        "Every `gpu-tenants` command, with its `--help` as the command prints it. Made from the "
        "command's parser by `make cli-reference`; the tests fail when a page is stale.",
        "",
        "| Command | What it does |",
        "|---|---|",
        *(f"| [{words}]({_file(words)}) | {_summary(top, words)} |" for words, _ in commands),
        "",
        *_help_block(top),
    ]
    made = {"index.md": ("Every command", "\n".join(index))}
    for words, command in commands:
        title = f"gpu-tenants {words}"
        made[_file(words)] = (title, "\n".join([f"# {title}", "", *_help_block(command)]))
    return made


def with_navigation(mkdocs: str, made: dict[str, tuple[str, str]]) -> str:
    """mkdocs.yml's text with the reference's navigation, index first, between its markers."""
    lines = mkdocs.splitlines()
    start, end = lines.index(NAV_START), lines.index(NAV_END)
    indent = NAV_START[: len(NAV_START) - len(NAV_START.lstrip())]
    listed = [f"{indent}- {title}: {PAGES}/{name}" for name, (title, _) in made.items()]
    return "\n".join([*lines[: start + 1], *listed, *lines[end:]]) + "\n"


def _help_block(parser: argparse.ArgumentParser) -> list[str]:
    # argparse wraps at the terminal's width, read from $COLUMNS first.
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        text = parser.format_help().rstrip()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return ["```text", text, "```", ""]


def _file(words: str) -> str:
    return words.replace(" ", "-") + ".md"


def _summary(top: argparse.ArgumentParser, words: str) -> str:
    parser, help_text = top, ""
    for word in words.split():
        group = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        help_text = next(c.help or "" for c in group._choices_actions if c.dest == word)
        parser = group.choices[word]
    return help_text.replace("|", "\\|")


def write(docs: Path) -> None:
    """Writes the pages under docs/cli/ (removing pages of commands that are gone) and their
    navigation in mkdocs.yml beside docs/."""
    made = pages()
    folder = docs / PAGES
    folder.mkdir(exist_ok=True)
    for stale in set(p.name for p in folder.glob("*.md")) - made.keys():
        (folder / stale).unlink()
    for name, (_, text) in made.items():
        (folder / name).write_text(text)
    mkdocs = docs.parent / "mkdocs.yml"
    mkdocs.write_text(with_navigation(mkdocs.read_text(), made))


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs")
