"""The properties of the Slurm resources: how each is validated (`check`), which changes replace
and which update in place (`diff`), and the form Slurm stores it in, so that a diff right after
`up` is empty although Slurm lowercased a Description or printed 24:00:00 as 1-00:00:00.

Inputs and outputs use the same keys; outputs hold what Slurm reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi.runtime.rpc import UNKNOWN

from providers.slurm import partitions, sacctmgr, values


def is_unknown(value: Any) -> bool:
    """True for a value `pulumi preview` cannot know yet (an output of a resource to be made)."""
    if isinstance(value, list | tuple):
        return any(is_unknown(item) for item in value)
    return bool(value == UNKNOWN)


__all__ = [
    "ACCOUNT",
    "PARTITION",
    "QOS",
    "USER",
    "Field",
    "Schema",
]


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Field:
    key: str
    parse: Callable[[Any], Any]  # validates an input or output value; returns its canonical form
    replaces: bool = False  # a change creates a new object rather than modifying this one
    stored: Callable[[Any], Any] = _same  # the parsed value as Slurm stores it, for comparison
    inherited: bool = False  # unset in the inputs: Slurm's (inherited) value is left alone


@dataclass(frozen=True)
class Schema:
    kind: str
    fields: tuple[Field, ...]
    identity: tuple[str, ...]  # the keys that name the object in Slurm
    rules: Callable[[Mapping[str, Any]], list[tuple[str, str]]]  # across fields, on valid input
    # The output that carries the ownership mark, and the mark a tenant's object carries there.
    # `tenant` itself stays as the inputs recorded it, so that a delete still knows whose the
    # object should be after a refresh has read a changed mark.
    mark: tuple[str, Callable[[str], str]] | None = None

    def problems(self, news: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(property, reason) for every invalid input; values not known yet are skipped."""
        found = []
        parsed: dict[str, Any] = {}
        for field in self.fields:
            value = news.get(field.key)
            if is_unknown(value):
                continue
            try:
                parsed[field.key] = field.parse(value)
            except ValueError as error:
                found.append((field.key, str(error)))
        if found or len(parsed) < len(self.fields):
            return found
        return self.rules(parsed)

    def load(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """The validated, canonical properties; ValueError listing every problem."""
        found = self.problems(props)
        if found:
            raise ValueError("; ".join(f"{key}: {reason}" for key, reason in found))
        return {field.key: field.parse(props.get(field.key)) for field in self.fields}

    def differences(
        self, olds: Mapping[str, Any], news: Mapping[str, Any]
    ) -> tuple[list[str], list[str]]:
        """The keys whose stored forms differ between the last outputs and the new inputs, and
        those of them that force a replacement."""
        changed = []
        for field in self.fields:
            new = news.get(field.key)
            if field.inherited and new is None:
                continue
            if is_unknown(new) or _stored(field, new) != _stored(field, olds.get(field.key)):
                changed.append(field.key)
        if self.mark is not None:
            key, mark = self.mark
            tenant = news.get("tenant")
            if is_unknown(tenant) or str(olds.get(key)).lower() != mark(str(tenant)):
                changed.append(key)
        replaces = [f.key for f in self.fields if f.replaces and f.key in changed]
        return changed, replaces


def _stored(field: Field, value: Any) -> Any:
    try:
        return field.stored(field.parse(value))
    except ValueError:
        # What Slurm holds after a change made behind the provider's back may not be valid input:
        # compared as it is, it differs from any valid input, which is the drift to report.
        return value


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


def _no_rules(_: Mapping[str, Any]) -> list[tuple[str, str]]:
    return []


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
        Field("name", _required(values.name), replaces=True),
        Field("tenant", _required(values.name)),
        Field("priority", _required(values.count)),
        Field("grp_tres_gpus", values.optional_count),
        Field("max_wall", values.optional_time_limit),
        Field("flags", _flags),
        Field("preempt_mode", _qos_preempt_mode),
    ),
    identity=("name",),
    rules=_no_rules,
    mark=("description", values.owner_mark),
)

# --- accounts ------------------------------------------------------------------------------------


def _account_rules(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = _qos_binding(p)
    if p["parent"] == p["name"]:
        found.append(("parent", "an account cannot be its own parent"))
    return found


ACCOUNT = Schema(
    kind="account",
    fields=(
        Field("name", _required(values.name), replaces=True),
        Field("parent", values.parent, replaces=True),
        Field("tenant", _required(values.name)),
        Field("description", _required(values.text), stored=_lower),
        Field("fairshare", _required(values.count)),
        Field("grp_tres_gpus", values.optional_count),
        Field("grp_jobs", values.optional_count),
        Field("grp_submit_jobs", values.optional_count),
        Field("qos", _optional(values.names), inherited=True),
        Field("default_qos", _optional(values.name), inherited=True),
    ),
    identity=("name",),
    rules=_account_rules,
    mark=("organization", _same),
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
        Field("user", _required(values.user), replaces=True),
        Field("account", _required(values.name), replaces=True),
        Field("tenant", _required(values.name)),
        Field("default_account", _required(values.name)),
        Field("fairshare", _required(_fairshare)),
        Field("max_jobs", values.optional_count),
        Field("grp_tres_mins_gpus", values.optional_count),
        Field("qos", _optional(values.names), inherited=True),
        Field("default_qos", _optional(values.name), inherited=True),
    ),
    identity=("user", "account"),
    rules=_qos_binding,
)

# --- partitions ----------------------------------------------------------------------------------


def _hostlist(value: Any) -> str:
    values.expand_hosts(value)
    return str(value)


def _choice(allowed: Sequence[str], default: str) -> Callable[[Any], str]:
    def parse_choice(value: Any) -> str:
        return default if value is None else values.choice(value, allowed)

    return parse_choice


def _partition_rules(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = []
    if not p["allow_accounts"]:
        found.append(("allow_accounts", "name at least one account"))
    elif p["tenant"] not in p["allow_accounts"]:
        found.append(
            (
                "allow_accounts",
                f"must include the tenant's account {p['tenant']!r}: it marks the partition as "
                "the tenant's",
            )
        )
    default_time, max_time = values.seconds(p["default_time"]), values.seconds(p["max_time"])
    if default_time is None:
        found.append(("default_time", "must be a time limit, not UNLIMITED"))
    elif max_time is not None and default_time > max_time:
        found.append(("default_time", f"is longer than max_time {p['max_time']}"))
    return found


PARTITION = Schema(
    kind="partition",
    fields=(
        Field("name", _required(values.name), replaces=True),
        Field("tenant", _required(values.name)),
        Field("nodes", _required(_hostlist), stored=values.expand_hosts),
        Field("allow_accounts", _required(values.names)),
        Field("max_time", _required(values.time_limit)),
        Field("default_time", _required(values.time_limit)),
        Field("preempt_mode", _choice(partitions.PREEMPT_MODES, "OFF")),
        Field("oversubscribe", _choice(partitions.OVERSUBSCRIBE, "EXCLUSIVE")),
        Field("state", _choice(partitions.STATES, "UP")),
    ),
    identity=("name",),
    rules=_partition_rules,
)
