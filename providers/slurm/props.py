"""The Slurm resources' schemas (`providers.base`), as `check` and `diff` use them: the field table
(`fields`) with the rules across fields, the keys that name each object, the ownership mark the
inputs imply, and the lifecycle on the tenant-level objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.base import LIFECYCLE, Field, Rule, Schema
from providers.slurm import fields, values

__all__ = ["ACCOUNT", "PARTITION", "QOS", "USER"]


def _schema(kind: fields.Kind, identity: tuple[str, ...], rules: tuple[Rule, ...] = ()) -> Schema:
    own = tuple(
        Field(
            f.key,
            f.parse,
            default=f.default,
            replaces=f.replaces,
            stored=f.stored,
            inherited=f.inherited,
        )
        for f in kind.fields
    )
    marked = any(f.mark for f in kind.fields)
    return Schema(
        kind=kind.name,
        fields=(*own, LIFECYCLE) if kind.lifecycle else own,
        identity=identity,
        rules=rules,
        implied=kind.marks if marked else None,
    )


def _qos_binding(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    qos, default = p["qos"], p["default_qos"]
    if qos is not None and not qos:
        return [("qos", "name at least one QoS, or leave it unset to inherit the parent's")]
    if qos is not None and default is not None and default not in qos:
        return [("default_qos", f"{default!r} is not in qos {list(qos)}")]
    return []


_QOS_BINDING = Rule(("qos", "default_qos"), _qos_binding)


def _not_own_parent(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    if p["parent"] == p["name"]:
        return [("parent", "an account cannot be its own parent")]
    return []


def _marking_accounts(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    if not p["allow_accounts"]:
        return [("allow_accounts", "name at least one account")]
    if p["tenant"] not in p["allow_accounts"]:
        reason = (
            f"must include the tenant's account {p['tenant']!r}: it marks the partition as the "
            "tenant's"
        )
        return [("allow_accounts", reason)]
    return []


def _times(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    default_time, max_time = values.seconds(p["default_time"]), values.seconds(p["max_time"])
    if default_time is None:
        return [("default_time", "must be a time limit, not UNLIMITED")]
    if max_time is not None and default_time > max_time:
        return [("default_time", f"is longer than max_time {p['max_time']}")]
    return []


QOS = _schema(fields.QOS, identity=("name",))
ACCOUNT = _schema(
    fields.ACCOUNT,
    identity=("name",),
    rules=(_QOS_BINDING, Rule(("parent", "name"), _not_own_parent)),
)
USER = _schema(fields.USER, identity=("user", "account"), rules=(_QOS_BINDING,))
PARTITION = _schema(
    fields.PARTITION,
    identity=("name",),
    rules=(
        Rule(("allow_accounts", "tenant"), _marking_accounts),
        Rule(("default_time", "max_time"), _times),
    ),
)
