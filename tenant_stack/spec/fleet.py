"""The rules across tenants, which need every spec in `tenants/` at once and no cluster:

- usernames, uids and gids (each tenant's group and admins group) are unique across tenants, an
  offboarded tenant's included while its spec is kept (its accounting names those numbers, so
  they stay reserved);
- no user's uid is any tenant's gid: Authentik's LDAP outpost gives each user a group of its
  own whose gidNumber is the uid;
- the names each tenant has in a cluster-wide namespace of its own kind are unique across
  tenants: short names (`foo` and `tenant-foo` would share the QoS `normal-foo`), Slurm accounts
  (the slug and the teams), Authentik groups (the slug and `<slug>-admins`) and login hostnames;
  and no team's name ends in another tenant's short name, which would make it read as theirs;
- no node is in two live tenants' reservations (a tenant at stage destroy has released its);
- the live tenants' contracted GPUs on one hardware pool fit in the pool's inventory.

(Slugs are unique by construction: a spec's file is named by its slug, which `load_spec` holds.)
Each finding names every spec and field path involved. `load_fleet` loads every spec, keeping
apart those that do not load, so that one tenant's broken file never hides another's collision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tenant_stack.errors import Problem, SpecError
from tenant_stack.platform import Platform
from tenant_stack.spec.loading import load_spec
from tenant_stack.spec.models import TenantSpec

__all__ = ["Collision", "Place", "find_collisions", "load_fleet", "refusals_beside"]


@dataclass(frozen=True)
class Place:
    spec: Path
    field: str

    def __str__(self) -> str:
        return f"{self.spec.name} {self.field}"


@dataclass(frozen=True)
class Collision:
    rule: str  # usernames | uids | gids | uid-gid | names | teams | nodes | gpus
    message: str  # what collides, and what to do
    places: tuple[Place, ...]  # the first is where to fix it, when one spec is at fault

    def involves(self, spec: Path) -> bool:
        return any(place.spec == spec for place in self.places)

    def __str__(self) -> str:
        return f"{' and '.join(str(p) for p in self.places)}: {self.message}"

    def as_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "message": self.message,
            "places": [{"spec": p.spec.name, "field": p.field} for p in self.places],
        }


def load_fleet(
    tenants_dir: Path, platform: Platform
) -> tuple[dict[Path, TenantSpec], dict[Path, SpecError]]:
    """Every spec in `tenants_dir` that loads, and the errors of those that do not."""
    specs, broken = {}, {}
    for path in sorted(tenants_dir.glob("*.yaml")):
        try:
            specs[path] = load_spec(tenants_dir, path.stem, platform)
        except SpecError as error:
            broken[path] = error
    return specs, broken


def refusals_beside(
    spec: TenantSpec,
    spec_path: Path,
    platform: Platform,
    beside: tuple[dict[Path, TenantSpec], dict[Path, SpecError]],
) -> tuple[list[Problem], dict[Path, SpecError]]:
    """The rules across tenants that `spec` (at `spec_path`) breaks against every other spec
    `beside` it (`load_fleet` of its directory), each at its own field; and the other specs that
    do not load, which the rules skip (one tenant's broken file never blocks another's change)."""
    loaded, broken = beside
    specs = {**loaded, spec_path: spec}
    refusals = []
    for collision in find_collisions(specs, platform):
        own = [place for place in collision.places if place.spec == spec_path]
        if own:
            others = [str(place) for place in collision.places if place.spec != spec_path]
            also = f" (with {', '.join(others)})" if others else ""
            refusals.append(Problem(own[0].field, f"{collision.message}{also}"))
    return refusals, {path: error for path, error in broken.items() if path != spec_path}


def find_collisions(specs: Mapping[Path, TenantSpec], platform: Platform) -> list[Collision]:
    """Every collision between the specs (which each loaded on their own)."""
    return [
        *_unique("usernames", "username", _usernames(specs)),
        *_unique("uids", "uid", _uids(specs)),
        *_unique("gids", "gid", _gids(specs)),
        *_uids_as_gids(specs),
        *_names(specs),
        *_teams(specs),
        *_unique("nodes", "node", _nodes(specs), "a node is reserved for one tenant at a time"),
        *_unique(
            "pkeys",
            "InfiniBand partition key",
            _pkeys(specs),
            "a partition is one tenant's: every port in it reaches every other",
        ),
        *_pools(specs, platform),
    ]


def _usernames(specs: Mapping[Path, TenantSpec]) -> Iterator[tuple[object, Place]]:
    for path, spec in specs.items():
        for i, user in enumerate(spec.users):
            yield user.username, Place(path, f"users.{i}.username")


def _uids(specs: Mapping[Path, TenantSpec]) -> Iterator[tuple[object, Place]]:
    for path, spec in specs.items():
        for i, user in enumerate(spec.users):
            yield user.uid, Place(path, f"users.{i}.uid")


def _gids(specs: Mapping[Path, TenantSpec]) -> Iterator[tuple[object, Place]]:
    for path, spec in specs.items():
        yield spec.identity.gid, Place(path, "identity.gid")
        if spec.identity.admins_gid is not None:
            yield spec.identity.admins_gid, Place(path, "identity.admins_gid")


def _claimed_names(spec: TenantSpec, path: Path) -> Iterator[tuple[str, str, Place]]:
    """(kind, name, place) of every name of `spec` that another tenant could also claim."""
    yield "short name", spec.short_name, Place(path, "slug")
    yield "Slurm account", spec.account, Place(path, "slug")
    for index, team in enumerate(spec.slurm.teams):
        yield "Slurm account", team.name, Place(path, f"slurm.teams.{index}.name")
    yield "Authentik group", spec.slug, Place(path, "slug")
    yield "Authentik group", spec.admins_group, Place(path, "slug")
    yield "login hostname", spec.login.hostname, Place(path, "login.hostname")


def _names(specs: Mapping[Path, TenantSpec]) -> Iterator[Collision]:
    first: dict[tuple[str, str], Place] = {}
    for path, spec in specs.items():
        for kind, name, place in _claimed_names(spec, path):
            seen = first.setdefault((kind, name), place)
            if seen.spec != place.spec:
                yield Collision(
                    "names",
                    f"{kind} {name!r} would be both tenants'; rename it in one of them "
                    "(a slug is never renamed once its stack exists: rename the new tenant's)",
                    (place, seen),
                )


def _teams(specs: Mapping[Path, TenantSpec]) -> Iterator[Collision]:
    for path, spec in specs.items():
        for index, team in enumerate(spec.slurm.teams):
            for other_path, other in specs.items():
                if other_path != path and team.name.endswith(f"-{other.short_name}"):
                    yield Collision(
                        "teams",
                        f"team {team.name!r} ends in '-{other.short_name}', tenant "
                        f"{other.slug}'s short name, so it reads as that tenant's; name it so "
                        f"that it ends in '-{spec.short_name}' alone",
                        (Place(path, f"slurm.teams.{index}.name"), Place(other_path, "slug")),
                    )


def _nodes(specs: Mapping[Path, TenantSpec]) -> Iterator[tuple[object, Place]]:
    for path, spec in specs.items():
        if spec.lifecycle.stage != "destroy":
            for i, node in enumerate(spec.reservation.nodes):
                yield node, Place(path, f"reservation.nodes.{i}")


def _pkeys(specs: Mapping[Path, TenantSpec]) -> Iterator[tuple[object, Place]]:
    for path, spec in specs.items():
        if spec.network.pkey is not None and spec.lifecycle.stage != "destroy":
            yield f"{spec.network.pkey:#06x}", Place(path, "network.pkey")


def _unique(
    rule: str, what: str, values: Iterator[tuple[object, Place]], why: str = ""
) -> Iterator[Collision]:
    """A collision for each value a second tenant claims (within one spec, `check_spec` tells)."""
    first: dict[object, Place] = {}
    for value, place in values:
        seen = first.setdefault(value, place)
        if seen.spec != place.spec:
            because = f" ({why})" if why else ""
            yield Collision(
                rule,
                f"{what} {value} is claimed by both tenants{because}; pin another in one of them",
                (place, seen),
            )


def _uids_as_gids(specs: Mapping[Path, TenantSpec]) -> Iterator[Collision]:
    gids = dict((value, place) for value, place in _gids(specs))
    for uid, place in _uids(specs):
        if uid in gids:
            yield Collision(
                "uid-gid",
                f"uid {uid} is also a group's gid, and the LDAP outpost gives each user a group "
                "whose gidNumber is the uid; pin another uid",
                (place, gids[uid]),
            )


def _pools(specs: Mapping[Path, TenantSpec], platform: Platform) -> Iterator[Collision]:
    on_pool: dict[str, list[tuple[Path, int]]] = {}
    for path, spec in specs.items():
        if spec.lifecycle.stage != "destroy":
            on_pool.setdefault(spec.reservation.hardware_pool, []).append(
                (path, spec.contract.gpus)
            )
    for name, tenants in sorted(on_pool.items()):
        pool = platform.node_pools.get(name)
        sku = platform.skus.get(pool.sku) if pool else None
        if pool is None or sku is None or len(tenants) < 2:
            continue  # each spec's own check covers one tenant against its pool
        inventory = len(pool.nodes) * sku.gpus_per_node
        wanted = sum(gpus for _, gpus in tenants)
        if wanted > inventory:
            yield Collision(
                "gpus",
                f"the live tenants on pool {name} are contracted {wanted} GPUs together, and "
                f"the pool has {inventory} ({len(pool.nodes)} nodes of {sku.gpus_per_node}); "
                "lower a contract or add nodes to the pool in Pulumi.prod.yaml",
                tuple(Place(path, "contract.gpus") for path, _ in tenants),
            )
