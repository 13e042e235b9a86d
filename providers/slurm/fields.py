"""The Slurm field table: for each property of a Slurm resource, how it is validated and put in
canonical form, whether a change replaces the object or updates it in place, the form Slurm
stores it in (so that a diff right after `up` is empty although Slurm lowercased a Description or
printed 24:00:00 as 1-00:00:00), and the sacctmgr option that keeps it. The schemas (`props`),
the resources' inputs, the providers' outputs and sacctmgr's commands and columns are all built
from this table: a field is named here once.

Inputs and outputs use the same keys; outputs hold what Slurm reports, and, for what Slurm does
not keep (the tenant, the lifecycle), what the inputs said.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.slurm import options, partitions, values
from providers.slurm.options import Option

__all__ = ["ACCOUNT", "LIFECYCLE", "PARTITION", "QOS", "USER", "Kind", "SlurmField"]

# The tenant's offboarding stage, recorded on a tenant-level object (`providers.base.LIFECYCLE`,
# which `props` adds to the schema): Slurm does not keep it.
LIFECYCLE = "lifecycle"


def _same(value: Any) -> Any:
    return value


def _listed(value: Any) -> Any:
    # Records hold lists as tuples; the state holds them as lists.
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class SlurmField:
    """A field (as `providers.base.Field` has it: `parse`, `default`, `replaces`, `stored`,
    `inherited`) with where Slurm keeps it. `option`: the sacctmgr option (None: sacctmgr keeps
    no such option: the object's name, which its commands name otherwise, the tenant). For the
    tenant, `mark` is the output under which Slurm keeps the ownership mark, `marked(tenant)`,
    which the option writes. `add_only`: written by `add` alone (as a field whose change replaces
    the object is). `shown`: a value as Slurm reports it, in the outputs' form."""

    key: str
    parse: Callable[[Any], Any]
    default: Any = None  # absent means None, which each parse accepts or refuses itself
    replaces: bool = False
    stored: Callable[[Any], Any] = _same
    inherited: bool = False
    option: Option | None = None
    mark: str = ""
    marked: Callable[[Any], Any] = _same
    add_only: bool = False
    shown: Callable[[Any], Any] = _listed

    @property
    def written_by_add_only(self) -> bool:
        return self.replaces or self.add_only


@dataclass(frozen=True)
class Kind:
    """A Slurm resource kind: its fields, and whether it records the tenant's lifecycle (a
    tenant-level object)."""

    name: str
    fields: tuple[SlurmField, ...]
    lifecycle: bool = False

    def inputs(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """A resource's inputs from the fields it was given; TypeError naming any this kind does
        not have, as for a mistyped keyword argument."""
        keys = {field.key for field in self.fields} | ({LIFECYCLE} if self.lifecycle else set())
        unknown = sorted(set(given) - keys)
        if unknown:
            raise TypeError(f"a Slurm {self.name} has no field {', '.join(unknown)}")
        return dict(given)

    def marks(self, p: Mapping[str, Any]) -> dict[str, Any]:
        """The ownership mark that properties `p` imply, under its output's key."""
        return {field.mark: field.marked(p[field.key]) for field in self.fields if field.mark}

    def outputs(self, live: Mapping[str, Any], recorded: Mapping[str, Any]) -> dict[str, Any]:
        """The outputs: each field as Slurm holds it (`live`, by key), and as `recorded` (the
        inputs, or the last outputs) where Slurm holds none (the tenant, the lifecycle); the
        ownership mark as Slurm holds it."""
        found = {field.key: recorded.get(field.key) for field in self.fields}
        if self.lifecycle:
            found[LIFECYCLE] = recorded.get(LIFECYCLE)
        for field in self.fields:
            if field.mark:
                found[field.mark] = live[field.mark]
            elif field.key in live:
                found[field.key] = field.shown(live[field.key])
        return found


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


# An association's QoS binding; unset, it is inherited from the parent account.
_QOS = SlurmField(
    "qos", _optional(values.names), inherited=True, option=Option("QOS", options.INHERITED_NAMES)
)
_DEFAULT_QOS = SlurmField(
    "default_qos",
    _optional(values.name),
    inherited=True,
    option=Option("DefaultQOS", options.INHERITED_NAME),
)

# --- QoS -----------------------------------------------------------------------------------------


def _flags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [flag for flag in value.split(",") if flag]
    if not isinstance(value, list | tuple):
        raise ValueError(f"{value!r} is not a list of QoS flags")
    return tuple(sorted({values.choice(flag, values.QOS_FLAGS) for flag in value}))


def _qos_preempt_mode(value: Any) -> str:
    # slurmdbd stores PreemptMode=OFF as `cluster`: the cluster's mode, never "not preemptible".
    if value is None or (isinstance(value, str) and value.lower() == "off"):
        return "cluster"
    return values.choice(value, values.QOS_PREEMPT_MODES)


# Its Description is the mark `gpu-tenants:<tenant>`.
QOS = Kind(
    "QoS",
    (
        SlurmField("name", _required(values.name), replaces=True),
        SlurmField(
            "tenant",
            _required(values.name),
            option=Option("Description", options.FREE_TEXT),
            mark="description",
            marked=values.owner_mark,
        ),
        SlurmField("priority", _required(values.count), option=Option("Priority", options.NUMBER)),
        # GrpTRES=gres/gpu=N
        SlurmField(
            "grp_tres_gpus", values.optional_count, option=Option("GrpTRES", options.GPU_TRES)
        ),
        # [D-]HH:MM:SS; None: no limit
        SlurmField("max_wall", values.optional_time_limit, option=Option("MaxWall", options.WALL)),
        SlurmField("flags", _flags, option=Option("Flags", options.FLAGS)),
        # off (stored by Slurm as `cluster`: the cluster's mode), cancel or requeue
        SlurmField(
            "preempt_mode", _qos_preempt_mode, option=Option("PreemptMode", options.PREEMPT_MODE)
        ),
        # How long a job of this QoS runs before it may be preempted; None: the cluster's
        # (none). What keeps a QoS's jobs from preemption: PreemptMode=OFF does not.
        SlurmField(
            "preempt_exempt_time",
            values.optional_time_limit,
            option=Option("PreemptExemptTime", options.WALL),
        ),
    ),
    lifecycle=True,
)

# --- accounts ------------------------------------------------------------------------------------


def _number(value: Any) -> Any:
    # An account's Fairshare is a number unless someone set `parent` by hand.
    return int(value) if isinstance(value, str) and value.isdigit() else value


# The tenant's account under `root`, or a team sub-account with `parent` set to it. Its
# Organization is the mark (the tenant slug). Unset limits are no limits; the offboarding's
# frozen stage sets grp_jobs and grp_submit_jobs to 0.
ACCOUNT = Kind(
    "account",
    (
        SlurmField("name", _required(values.name), replaces=True),
        SlurmField(
            "parent",
            values.parent,
            replaces=True,
            option=Option("Parent", column="ParentName"),
        ),
        SlurmField(
            "tenant",
            _required(values.name),
            option=Option("Organization", on_record=True),
            mark="organization",
        ),
        SlurmField(
            "description",
            _required(values.text),
            stored=_lower,
            option=Option("Description", options.FREE_TEXT, on_record=True),
        ),
        SlurmField("fairshare", _required(values.count), option=Option("Fairshare"), shown=_number),
        SlurmField(
            "grp_tres_gpus", values.optional_count, option=Option("GrpTRES", options.GPU_TRES)
        ),
        SlurmField("grp_jobs", values.optional_count, option=Option("GrpJobs", options.LIMIT)),
        SlurmField(
            "grp_submit_jobs", values.optional_count, option=Option("GrpSubmitJobs", options.LIMIT)
        ),
        _QOS,
        _DEFAULT_QOS,
    ),
    lifecycle=True,
)

# --- user associations ---------------------------------------------------------------------------


def _fairshare(value: Any) -> str:
    """A user's Fairshare: a number, or `parent` (the user shares the account's)."""
    if isinstance(value, str) and value.lower() == "parent":
        return "parent"
    return str(values.count(int(value) if isinstance(value, str) and value.isdigit() else value))


# A user's association with one of the tenant's accounts.
USER = Kind(
    "user association",
    (
        SlurmField("user", _required(values.user), replaces=True),
        SlurmField("account", _required(values.name), replaces=True, option=Option("Account")),
        SlurmField("tenant", _required(values.name)),
        # The user's, not the association's: `add` sets it for a new user, a command of its own
        # for one who has it already.
        SlurmField(
            "default_account",
            _required(values.name),
            option=Option("DefaultAccount", on_record=True),
            add_only=True,
        ),
        SlurmField(
            "fairshare", _required(_fairshare), default="parent", option=Option("Fairshare")
        ),
        SlurmField("max_jobs", values.optional_count, option=Option("MaxJobs", options.LIMIT)),
        # The GPU-minute budget: GrpTRESMins=gres/gpu=N
        SlurmField(
            "grp_tres_mins_gpus",
            values.optional_count,
            option=Option("GrpTRESMins", options.GPU_TRES),
        ),
        _QOS,
        _DEFAULT_QOS,
    ),
)

# --- partitions ----------------------------------------------------------------------------------


def _hostlist(value: Any) -> str:
    values.expand_hosts(value)
    return str(value)


def _choice(allowed: Sequence[str], default: str) -> Callable[[Any], str]:
    def parse_choice(value: Any) -> str:
        return default if value is None else values.choice(value, allowed)

    return parse_choice


# A tenant partition: a line of SLURM_PARTITIONS_FILE (`partitions` writes its keys), Default=NO.
# `allow_accounts` must include the tenant's account (named by its slug): that is the mark. The
# offboarding's frozen stage sets `state` to DOWN.
PARTITION = Kind(
    "partition",
    (
        SlurmField("name", _required(values.name), replaces=True),
        SlurmField("tenant", _required(values.name)),
        # a hostlist (`gpu-[01-08]`), compared as the set of its hosts
        SlurmField("nodes", _required(_hostlist), stored=values.expand_hosts),
        SlurmField("allow_accounts", _required(values.names)),
        # times are [D-]HH:MM:SS; max_time may be UNLIMITED
        SlurmField("max_time", _required(values.time_limit)),
        SlurmField("default_time", _required(values.time_limit)),
        SlurmField("preempt_mode", _choice(partitions.PREEMPT_MODES, "OFF")),
        SlurmField("oversubscribe", _choice(partitions.OVERSUBSCRIBE, "EXCLUSIVE")),
        SlurmField("state", _choice(partitions.STATES, "UP")),
    ),
    lifecycle=True,
)
