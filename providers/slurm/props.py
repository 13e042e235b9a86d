"""The properties of the Slurm resources: how each is validated (`check`), which changes replace
and which update in place (`diff`), and the form Slurm stores it in, so that a diff right after
`up` is empty although Slurm lowercased a Description or printed 24:00:00 as 1-00:00:00.

Inputs and outputs use the same keys; outputs hold what Slurm reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from providers.base import LIFECYCLE, Field, Rule, Schema
from providers.slurm import partitions, sacctmgr, values

__all__ = ["ACCOUNT", "PARTITION", "QOS", "USER"]


def _optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse_optional(value: Any) -> Any:
        return None if value is None else parse(value)

    return parse_optional


def _required(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse_required(value: Any) -> Any:
        if value is None or value == "":
            raise ValueError("is required")
        return parse(value)

    return parse_required


def _lower(value: str) -> str:
    return value.lower()


def _field(key: str, parse: Callable[[Any], Any], **options: Any) -> Field:
    """A Slurm field: absent means None, which each parse accepts or refuses itself."""
    return Field(key, parse, default=None, **options)


def _qos_binding(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    qos, default = p["qos"], p["default_qos"]
    if qos is not None and not qos:
        return [("qos", "name at least one QoS, or leave it unset to inherit the parent's")]
    if qos is not None and default is not None and default not in qos:
        return [("default_qos", f"{default!r} is not in qos {list(qos)}")]
    return []


# --- QoS -----------------------------------------------------------------------------------------


def _flags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [flag for flag in value.split(",") if flag]
    if not isinstance(value, list | tuple):
        raise ValueError(f"{value!r} is not a list of QoS flags")
    return tuple(sorted({values.choice(flag, sacctmgr.QOS_FLAGS) for flag in value}))


def _qos_preempt_mode(value: Any) -> str:
    # slurmdbd stores PreemptMode=OFF as `cluster` (the cluster's mode, which is off here).
    if value is None or (isinstance(value, str) and value.lower() == "off"):
        return "cluster"
    return values.choice(value, sacctmgr.QOS_PREEMPT_MODES)


QOS = Schema(
    kind="QoS",
    fields=(
        _field("name", _required(values.name), replaces=True),
        _field("tenant", _required(values.name)),
        _field("priority", _required(values.count)),
        _field("grp_tres_gpus", values.optional_count),
        _field("max_wall", values.optional_time_limit),
        _field("flags", _flags),
        _field("preempt_mode", _qos_preempt_mode),
        LIFECYCLE,
    ),
    identity=("name",),
    implied=lambda p: {"description": values.owner_mark(p["tenant"])},
)

# --- accounts ------------------------------------------------------------------------------------


_QOS_BINDING = Rule(("qos", "default_qos"), _qos_binding)


def _not_own_parent(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    if p["parent"] == p["name"]:
        return [("parent", "an account cannot be its own parent")]
    return []


ACCOUNT = Schema(
    kind="account",
    fields=(
        _field("name", _required(values.name), replaces=True),
        _field("parent", values.parent, replaces=True),
        _field("tenant", _required(values.name)),
        _field("description", _required(values.text), stored=_lower),
        _field("fairshare", _required(values.count)),
        _field("grp_tres_gpus", values.optional_count),
        _field("grp_jobs", values.optional_count),
        _field("grp_submit_jobs", values.optional_count),
        _field("qos", _optional(values.names), inherited=True),
        _field("default_qos", _optional(values.name), inherited=True),
        LIFECYCLE,
    ),
    identity=("name",),
    rules=(_QOS_BINDING, Rule(("parent", "name"), _not_own_parent)),
    implied=lambda p: {"organization": p["tenant"]},
)

# --- user associations ---------------------------------------------------------------------------


def _fairshare(value: Any) -> str:
    """A user's Fairshare: a number, or `parent` (the user shares the account's)."""
    if isinstance(value, str) and value.lower() == "parent":
        return "parent"
    return str(values.count(int(value) if isinstance(value, str) and value.isdigit() else value))


USER = Schema(
    kind="user association",
    fields=(
        _field("user", _required(values.user), replaces=True),
        _field("account", _required(values.name), replaces=True),
        _field("tenant", _required(values.name)),
        _field("default_account", _required(values.name)),
        _field("fairshare", _required(_fairshare)),
        _field("max_jobs", values.optional_count),
        _field("grp_tres_mins_gpus", values.optional_count),
        _field("qos", _optional(values.names), inherited=True),
        _field("default_qos", _optional(values.name), inherited=True),
    ),
    identity=("user", "account"),
    rules=(_QOS_BINDING,),
)

# --- partitions ----------------------------------------------------------------------------------


def _hostlist(value: Any) -> str:
    values.expand_hosts(value)
    return str(value)


def _choice(allowed: Sequence[str], default: str) -> Callable[[Any], str]:
    def parse_choice(value: Any) -> str:
        return default if value is None else values.choice(value, allowed)

    return parse_choice


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


PARTITION = Schema(
    kind="partition",
    fields=(
        _field("name", _required(values.name), replaces=True),
        _field("tenant", _required(values.name)),
        _field("nodes", _required(_hostlist), stored=values.expand_hosts),
        _field("allow_accounts", _required(values.names)),
        _field("max_time", _required(values.time_limit)),
        _field("default_time", _required(values.time_limit)),
        _field("preempt_mode", _choice(partitions.PREEMPT_MODES, "OFF")),
        _field("oversubscribe", _choice(partitions.OVERSUBSCRIBE, "EXCLUSIVE")),
        _field("state", _choice(partitions.STATES, "UP")),
        LIFECYCLE,
    ),
    identity=("name",),
    rules=(
        Rule(("allow_accounts", "tenant"), _marking_accounts),
        Rule(("default_time", "max_time"), _times),
    ),
)
