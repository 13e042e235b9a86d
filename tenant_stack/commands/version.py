"""`gpu-tenants --version`: the command's, the pinned engine's and the Pulumi SDK's versions."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import metadata
from typing import Any, NoReturn


class Versions(argparse.Action):
    """--version, read only when asked: completion builds the parser on every key press."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print this command's version, the pinned Pulumi engine's and the Pulumi "
            "SDK's, and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> NoReturn:
        print(versions())
        parser.exit()


def versions() -> str:
    """The project's version as installed, the Pulumi engine's that toolchain/versions.sh pins
    (the one `make setup` builds and the stacks were tested with), and the Pulumi SDK's."""
    try:
        project = metadata.version("gpu-tenants")
    except metadata.PackageNotFoundError:
        project = "(not installed in this Python: run make setup)"
    from tenant_stack.doctor.engine import PINS, pins

    pinned = pins(PINS.read_text())
    engine = pinned.get("PULUMI_VERSION", "(not pinned)")
    return "\n".join(
        (
            f"gpu-tenants {project}",
            f"Pulumi engine {engine} (pinned in toolchain/versions.sh)",
            f"Pulumi Python SDK {metadata.version('pulumi')}",
        )
    )
