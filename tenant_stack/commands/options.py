"""The options several commands share, each defined here once, with one default."""

from __future__ import annotations

import argparse
import os
from datetime import date
from email.utils import parseaddr
from pathlib import Path
from typing import TYPE_CHECKING

from tenant_stack.errors import TenantError
from tenant_stack.stacks import SPECS_VARIABLE

if TYPE_CHECKING:
    from tenant_stack.platform import Platform
    from tenant_stack.spec import TenantSpec
    from tenant_stack.stacks import Stacks

ROOT = Path(__file__).resolve().parents[2]
# The project whose stacks the commands work on: a sandbox's own when one is set up (its stacks'
# config files live there; a stack command run in the checkout would write them into it).
PROJECT = Path(os.environ.get("GPU_TENANTS_PROJECT") or ROOT)
PLATFORM = ROOT / "Pulumi.prod.yaml"


def directory(text: str) -> Path:
    """A directory an option names, which must exist: a typo would otherwise read as a project
    with no tenants, and a CI job would pass."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return path


def output(text: str) -> Path:
    """A file or directory an option names to write, checked before the command reads anything,
    so that a typo costs a message rather than the work done: the directory it goes in must
    exist and be writable (a directory named may be made there)."""
    path = Path(text)
    parent = path.resolve().parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: {parent} is not a directory this user can write")
    return path


def add_project(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--project",
        type=directory,
        metavar="DIR",
        # Checked where it is used (`tenants`): --tenants may make it irrelevant.
        default=PROJECT,
        help="the Pulumi project whose stacks are the tenants, its tenants/ holding their specs "
        "(default: $GPU_TENANTS_PROJECT when set, else the checkout)",
    )


def add_tenants(command: argparse.ArgumentParser) -> None:
    """--tenants, beside --project (`tenants` reads both)."""
    command.add_argument(
        "--tenants",
        type=directory,
        metavar="DIR",
        help=f"where the specs are (default: ${SPECS_VARIABLE} when set, else the project's "
        "tenants/); the Pulumi program this command runs reads the same",
    )


def tenants(args: argparse.Namespace) -> Path:
    """The specs' directory --tenants, $GPU_TENANTS_SPECS or --project names; a TenantError if
    there is none."""
    given = getattr(args, "tenants", None) or os.environ.get(SPECS_VARIABLE)
    found = Path(given) if given else args.project / "tenants"
    if not found.is_dir():
        named = f"${SPECS_VARIABLE}" if given else "--project's tenants/"
        raise TenantError(f"{found}: no such directory (the specs' directory, from {named})")
    return found


def stacks(args: argparse.Namespace) -> Stacks:
    """The project's stacks, whose program reads the specs this command reads."""
    from tenant_stack.stacks import Stacks

    return Stacks(args.project, tenants(args))


def tenant_spec(args: argparse.Namespace) -> tuple[TenantSpec, Platform]:
    """The spec of `args.slug` (from --tenants or --project) and the platform it is read
    against."""
    from tenant_stack.platform import load_platform
    from tenant_stack.spec import load_spec

    platform = load_platform(PLATFORM)
    return load_spec(tenants(args), args.slug, platform), platform


class _Format(argparse.Action):
    """`-o table|json`, kept as the one flag `args.json` that every command reads."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values == "json")


def add_output_format(command: argparse.ArgumentParser, what: str = "the report") -> None:
    """`-o json|table`, as kubectl and gh spell it, and `--json`, which workflows already use."""
    formats = command.add_mutually_exclusive_group()
    formats.add_argument(
        "-o",
        "--output",
        dest="json",
        action=_Format,
        choices=("table", "json"),
        default=False,
        metavar="FORMAT",
        help=f"print {what} as a table (the default) or as JSON",
    )
    formats.add_argument("--json", action="store_true", help="the same as -o json")


def add_slug(command: argparse.ArgumentParser, help: str = "the tenant") -> None:
    """The one tenant a command works on, by its slug: its spec's name and its stack's."""
    slug = command.add_argument("slug", metavar="SLUG", help=f"{help}, as in tenants/<slug>.yaml")
    slug.completer = _known_slugs  # type: ignore[attr-defined]


def add_slugs(command: argparse.ArgumentParser, default: str = "every spec in tenants/") -> None:
    """The tenants a command works on, by their slugs (none given: every tenant)."""
    slugs = command.add_argument(
        "slugs", metavar="SLUG", nargs="*", help=f"only these tenants (default: {default})"
    )
    slugs.completer = _known_slugs  # type: ignore[attr-defined]


def chosen_slugs(args: argparse.Namespace) -> list[str]:
    """The slugs given, or every spec's in the specs' directory."""
    return list(args.slugs) or sorted(path.stem for path in tenants(args).glob("*.yaml"))


def _known_slugs(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
    """The shell's completion of a slug: the specs' names (argcomplete's completer)."""
    project = Path(getattr(parsed_args, "project", PROJECT))
    specs = getattr(parsed_args, "tenants", None) or os.environ.get(SPECS_VARIABLE)
    return sorted(path.stem for path in Path(specs or project / "tenants").glob(f"{prefix}*.yaml"))


def add_workers(command: argparse.ArgumentParser, at_once: str) -> None:
    command.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help=f"{at_once} at once (default: the machine's cores)",
    )


def positive(text: str) -> int:
    """A whole number above 0, or argparse's error naming the option."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return number


def add_contact(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--contact",
        type=contact,
        metavar='"NAME <EMAIL>"',
        help="who at the customer receives the offboarding notices (contract.contact; needed "
        "from stage frozen when the platform sends notices)",
    )


def contact(text: str) -> tuple[str, str]:
    """A person to write to, NAME <EMAIL>, as (name, email); or argparse's error naming the
    option. The spec's models check the address itself."""
    name, email = parseaddr(text)
    if not (name and email):
        raise argparse.ArgumentTypeError(
            f'{text!r} is not NAME <EMAIL>, such as "Lee Chen <lee.chen@customer.example>"'
        )
    return name, email


def term(text: str) -> tuple[date, date]:
    """A contract's term, START:END in ISO dates, or argparse's error naming the option."""
    start, _, end = text.partition(":")
    try:
        return date.fromisoformat(start), date.fromisoformat(end)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not START:END in ISO dates, such as 2026-01-05:2027-01-04"
        ) from None
