"""The parser every command's is built on: help wrapped to the terminal except for examples,
which are commands to copy, and a suggestion when a command or a choice is mistyped."""

from __future__ import annotations

import argparse
import difflib
from typing import Any

EXAMPLES = "Examples:"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's own, except that an indented paragraph (an example, a command to copy) is kept
    as written: wrapped, it would no longer run when pasted."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            if paragraph.startswith((" ", EXAMPLES)):
                paragraphs.append("\n".join(indent + line for line in paragraph.splitlines()))
            else:
                paragraphs.append(super()._fill_text(paragraph, width, indent))
        return "\n\n".join(paragraphs)


class Parser(argparse.ArgumentParser):
    """argparse's parser, with our help layout, that also says which command or value was
    probably meant."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:
            near = difflib.get_close_matches(str(value), [str(c) for c in action.choices or ()])
            if not near:
                raise
            suggestion = f"{error.message}; did you mean {near[0]!r}?"
            raise argparse.ArgumentError(action, suggestion) from None


def add_examples(command: argparse.ArgumentParser, *examples: tuple[str, str]) -> None:
    """Each (command line, what it does) shown under "Examples:" at the end of the help."""
    lines = [EXAMPLES]
    for line, what in examples:
        lines += [f"  # {what}", *(f"  {part}" for part in line.splitlines())]
    command.epilog = "\n\n".join(filter(None, [command.epilog, "\n".join(lines)]))
