"""`gpu-tenants check`: the rules across tenants (unique users, uids, gids, nodes; pools)."""

from __future__ import annotations

import argparse
import json

from tenant_stack.commands.options import (
    PLATFORM,
    add_output_format,
    add_project,
    add_tenants,
    tenants,
)
from tenant_stack.commands.parser import add_examples


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "check",
        help="the rules across tenants: unique users, uids, gids and nodes, pools not oversold",
        description="Loads every spec in tenants/ and checks the rules that need them all at "
        "once (no cluster needed): usernames, uids and gids unique across tenants (offboarded "
        "ones included), no uid equal to a gid, no node in two live tenants, the live tenants' "
        "GPUs per pool within its inventory. Each finding names both specs and field paths.",
        epilog="Exit status: 0 no collision, 1 a spec does not load or two collide (each "
        "finding named), 2 the command could not run.",
    )
    add_output_format(command, "the findings")
    command.add_argument(
        "--live",
        action="store_true",
        help="also against the numbers Authentik's LDAP outpost hands out now (AUTHENTIK_URL "
        "and a read-only token in AUTHENTIK_TOKEN or AUTHENTIK_TOKEN_FILE)",
    )
    add_tenants(command)
    add_project(command)
    add_examples(
        command,
        ("gpu-tenants check", "every spec of the project against the others"),
        ("gpu-tenants check --live", "and against the numbers Authentik hands out now"),
    )
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from providers.authentik.client import AuthentikClient
    from providers.authentik.settings import Settings as AuthentikSettings
    from tenant_stack.fleet.live_numbers import handed_out, live_collisions
    from tenant_stack.platform import load_platform
    from tenant_stack.spec.fleet import find_collisions, load_fleet

    platform = load_platform(PLATFORM)
    specs, broken = load_fleet(tenants(args), platform)
    collisions = find_collisions(specs, platform)
    if args.live:
        with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
            held = handed_out(directory.users(), directory.groups(), *platform.ldap.start_numbers)
        collisions += live_collisions(specs, held)
    if args.json:
        print(
            json.dumps(
                {
                    "specs": sorted(path.name for path in specs),
                    "invalid": {path.name: str(error) for path, error in broken.items()},
                    "collisions": [c.as_json() for c in collisions],
                }
            )
        )
    else:
        for error in broken.values():
            print(error)
        for collision in collisions:
            print(collision)
        if not broken and not collisions:
            print(f"{len(specs)} specs, no collision")
    return 1 if broken or collisions else 0
