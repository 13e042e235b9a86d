"""What no new tenant may have, and the next of it that is free.

- Nodes: runbook step 1's query, `preflight.free_nodes` over the live cluster, less the nodes a
  spec in the tenants directory names (a spec not yet applied holds them as surely as a
  Reservation; one at stage destroy has released them, as the fleet's rule says), in the
  platform's order of the pool.
- uids and gids: the next numbers above every one that a spec in the tenants directory pins
  (offboarded tenants' included: their accounting names them; a spec that does not load is
  read as plain YAML) and that Authentik's LDAP outpost hands out now, none equal to another's
  uid or gid (each user's own group has its uid as gid). Gaps are not reused: a number freed by
  a spec deleted since may still own files somewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tenant_stack.errors import Problem
from tenant_stack.fleet.live_numbers import Holder
from tenant_stack.live import NodeState
from tenant_stack.platform import Platform
from tenant_stack.preflight import free_nodes
from tenant_stack.spec.fleet import load_fleet
from tenant_stack.strict_yaml import parse_yaml

__all__ = ["Taken", "free_for", "next_free"]


@dataclass
class Taken:
    """Numbers and nodes no new tenant may have."""

    uids: set[int] = field(default_factory=set)
    gids: set[int] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)

    @classmethod
    def beside(cls, tenants: Path, platform: Platform) -> tuple[Taken, list[Problem]]:
        """What every spec in `tenants` pins, those that do not load included (read as plain
        YAML), so that one broken file never hides its numbers; and a problem for each file
        that is not even YAML."""
        taken, problems = cls(), []
        specs, broken = load_fleet(tenants, platform)
        for spec in specs.values():
            taken.uids.update(user.uid for user in spec.users)
            taken.gids.add(spec.identity.gid)
            if spec.identity.admins_gid is not None:
                taken.gids.add(spec.identity.admins_gid)
            # A tenant at stage destroy has released its nodes (the fleet's rule).
            if spec.lifecycle.stage != "destroy":
                taken.nodes.update(spec.reservation.nodes)
        for other in broken:
            try:
                data = parse_yaml(other.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                problems.append(
                    Problem(
                        "--tenants",
                        f"{other} is not readable YAML, so the numbers and nodes it pins are "
                        "unknown and none can be chosen safely; fix it first",
                    )
                )
                continue
            taken.add_raw(data)
        return taken, problems

    def add_raw(self, data: Any) -> None:
        spec = _of(dict, data)
        identity, reservation = _of(dict, spec.get("identity")), _of(dict, spec.get("reservation"))
        users = [user for user in _of(list, spec.get("users")) if isinstance(user, dict)]
        self.uids.update(_ints(user.get("uid") for user in users))
        self.gids.update(_ints((identity.get("gid"), identity.get("admins_gid"))))
        self.nodes.update(str(node) for node in _of(list, reservation.get("nodes")))

    def add_live(self, held: Iterable[Holder]) -> None:
        for holder in held:
            (self.gids if holder.kind == "group" else self.uids).add(holder.number)

    def every_number(self) -> set[int]:
        return self.uids | self.gids


_Container = TypeVar("_Container", dict[str, Any], list[Any])


def _of(kind: type[_Container], value: Any) -> _Container:
    """`value` if it is of `kind`, else an empty one: a broken spec may hold anything."""
    return value if isinstance(value, kind) else kind()


def _ints(values: Iterable[Any]) -> list[int]:
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def free_for(
    sku: str, pool: str, order: Sequence[str], live: Sequence[NodeState], named: set[str]
) -> list[str]:
    """The nodes of `sku` and `pool` free for a new reservation, in `order` (the pool's, as the
    platform lists it: the runbook's operator picks gpu-01 before gpu-02)."""
    free = {node.name for node in free_nodes(sku, pool, live)} - named
    return [name for name in order if name in free]


def next_free(start: int, count: int, after: Iterable[int], taken: set[int]) -> list[int]:
    """`count` numbers from `start`, above every one in `after`, none of them in `taken`."""
    number = max([start - 1, *after]) + 1
    found: list[int] = []
    while len(found) < count:
        if number not in taken:
            found.append(number)
        number += 1
    return found
