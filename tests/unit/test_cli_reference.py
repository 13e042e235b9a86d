"""docs/cli/ says what the command's `--help` says: the pages and the site's navigation to them
are what `make cli-reference` makes from the parser today."""

from __future__ import annotations

from tenant_stack.commands.reference import PAGES, pages, with_navigation
from tests.conftest import ROOT

REMAKE = "stale: run `make cli-reference` and commit docs/cli/ and mkdocs.yml"


def test_every_command_has_its_page_as_the_parser_makes_it() -> None:
    made = pages()
    written = {path.name: path.read_text() for path in (ROOT / "docs" / PAGES).glob("*.md")}
    assert sorted(written) == sorted(made), REMAKE
    for name, (_, text) in made.items():
        assert written[name] == text, f"docs/{PAGES}/{name} is {REMAKE}"


def test_the_sites_navigation_lists_every_page() -> None:
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    assert with_navigation(mkdocs, pages()) == mkdocs, f"mkdocs.yml's navigation is {REMAKE}"


def test_a_page_holds_the_commands_help_and_examples() -> None:
    erase = (ROOT / "docs" / PAGES / "retention-erase.md").read_text()
    assert erase.startswith("# gpu-tenants retention erase\n\n```text\nusage: gpu-tenants ")
    assert "\nExamples:\n  # bob's files out of every retained copy\n" in erase
    index = (ROOT / "docs" / PAGES / "index.md").read_text()
    assert "| [retention erase](retention-erase.md) | a user's right to erasure" in index
