"""sacctmgr, as pure functions: commands built as argv lists, output parsed from text.

Writes use `-i` (no confirmation prompt); reads use `-P -n format=...` and are parsed as
`|`-separated records, with any free text (Description) as the last field so that a `|` inside it
cannot shift the others. The settings classes validate every value on construction, so nothing
reaches sacctmgr that it would split or misread. Records parsed from output are not validated:
they describe what Slurm holds, whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from providers.slurm import values

__all__ = [
    "ACCOUNT_FORMAT",
    "ASSOCIATION_FORMAT",
    "QOS_FLAGS",
    "QOS_FORMAT",
    "QOS_PREEMPT_MODES",
    "USER_FORMAT",
    "AccountRecord",
    "AccountSettings",
    "Association",
    "QosRecord",
    "QosSettings",
    "UserRecord",
    "UserSettings",
    "add_account",
    "add_qos",
    "add_user",
    "delete_account",
    "delete_qos",
    "delete_user",
    "modify_account",
    "modify_qos",
    "modify_user",
    "parse_accounts",
    "parse_associations",
    "parse_qos",
    "parse_users",
    "set_default_account",
    "show_account",
    "show_associations",
    "show_qos",
    "show_user",
]

SACCTMGR = "sacctmgr"
QOS_FORMAT = ("Name", "Priority", "GrpTRES", "MaxWall", "Flags", "PreemptMode", "Description")
ASSOCIATION_FORMAT = (
    "Cluster",
    "Account",
    "User",
    "ParentName",
    "Fairshare",
    "GrpTRES",
    "GrpJobs",
    "GrpSubmitJobs",
    "MaxJobs",
    "GrpTRESMins",
    "QOS",
    "DefaultQOS",
)
# `show account|user ... withassoc`: the record and its associations in one call (each sacctmgr
# call costs several round trips to slurmdbd), one row per association; a record without any
# association prints one row with empty association fields.
ACCOUNT_FORMAT = ("Organization", *ASSOCIATION_FORMAT, "Description")
USER_FORMAT = ("DefaultAccount", *ASSOCIATION_FORMAT)
# The QoS flags of Slurm 22.05 (sacctmgr(1)), spelt as sacctmgr prints them.
QOS_FLAGS = (
    "DenyOnLimit",
    "EnforceUsageThreshold",
    "NoDecay",
    "NoReserve",
    "OverPartQOS",
    "PartitionMaxNodes",
    "PartitionMinNodes",
    "PartitionTimeLimit",
    "RequiresReservation",
    "UsageFactorSafe",
)
# As slurmdbd stores them: PreemptMode=OFF on a QoS is stored (and printed) as `cluster`.
QOS_PREEMPT_MODES = ("cluster", "cancel", "requeue")
GPU = "gres/gpu"


# --- what the provider writes --------------------------------------------------------------------


def _check_qos_list(qos: tuple[str, ...] | None, default_qos: str | None) -> None:
    if qos is not None:
        if not qos:
            raise ValueError("a QoS list must name at least one QoS")
        values.names(qos)
    if default_qos is not None:
        values.name(default_qos)
        if qos is not None and default_qos not in qos:
            raise ValueError(f"DefaultQOS {default_qos!r} is not in the QoS list {list(qos)}")


@dataclass(frozen=True)
class QosSettings:
    description: str
    priority: int
    grp_tres_gpus: int | None = None
    max_wall: str | None = None  # [D-]HH:MM:SS; None: no limit
    flags: tuple[str, ...] = ()
    preempt_mode: str = "cluster"  # one of QOS_PREEMPT_MODES

    def __post_init__(self) -> None:
        values.text(self.description)
        values.count(self.priority)
        values.optional_count(self.grp_tres_gpus)
        values.optional_time_limit(self.max_wall)
        for flag in self.flags:
            values.choice(flag, QOS_FLAGS)
        values.choice(self.preempt_mode, QOS_PREEMPT_MODES)


@dataclass(frozen=True)
class AccountSettings:
    description: str
    organization: str
    fairshare: int
    grp_tres_gpus: int | None = None
    grp_jobs: int | None = None
    grp_submit_jobs: int | None = None
    qos: tuple[str, ...] | None = None  # None: inherited from the parent account
    default_qos: str | None = None  # None: inherited from the parent account

    def __post_init__(self) -> None:
        values.text(self.description)
        values.name(self.organization)
        values.count(self.fairshare)
        for limit in (self.grp_tres_gpus, self.grp_jobs, self.grp_submit_jobs):
            values.optional_count(limit)
        _check_qos_list(self.qos, self.default_qos)


@dataclass(frozen=True)
class UserSettings:
    fairshare: str  # a number, or `parent`
    max_jobs: int | None = None
    grp_tres_mins_gpus: int | None = None
    qos: tuple[str, ...] | None = None
    default_qos: str | None = None

    def __post_init__(self) -> None:
        if self.fairshare != "parent":
            values.count(int(self.fairshare) if self.fairshare.isdigit() else self.fairshare)
        values.optional_count(self.max_jobs)
        values.optional_count(self.grp_tres_mins_gpus)
        _check_qos_list(self.qos, self.default_qos)


def _limit(key: str, value: int | None, clear: bool) -> list[str]:
    # On modify, an absent limit is cleared with -1; on add, it is simply not set.
    if value is None:
        return [f"{key}=-1"] if clear else []
    return [f"{key}={value}"]


def _gpu_tres(key: str, value: int | None, clear: bool) -> list[str]:
    # Only the GPU entry is touched: -1 on one TRES clears that TRES and keeps the others.
    if value is None:
        return [f"{key}={GPU}=-1"] if clear else []
    return [f"{key}={GPU}={value}"]


def _qos_binding(qos: tuple[str, ...] | None, default_qos: str | None) -> list[str]:
    args = [f"QOS={','.join(qos)}"] if qos is not None else []
    return args + ([f"DefaultQOS={default_qos}"] if default_qos is not None else [])


def _qos_args(s: QosSettings, clear: bool) -> list[str]:
    return [
        f"Description={s.description}",
        f"Priority={s.priority}",
        *_gpu_tres("GrpTRES", s.grp_tres_gpus, clear),
        *([f"MaxWall={s.max_wall}"] if s.max_wall else (["MaxWall=-1"] if clear else [])),
        *([f"Flags={','.join(s.flags)}"] if s.flags else (["Flags=-1"] if clear else [])),
        f"PreemptMode={'OFF' if s.preempt_mode == 'cluster' else s.preempt_mode.upper()}",
    ]


def _account_args(s: AccountSettings, clear: bool) -> list[str]:
    return [
        f"Description={s.description}",
        f"Organization={s.organization}",
        f"Fairshare={s.fairshare}",
        *_gpu_tres("GrpTRES", s.grp_tres_gpus, clear),
        *_limit("GrpJobs", s.grp_jobs, clear),
        *_limit("GrpSubmitJobs", s.grp_submit_jobs, clear),
        *_qos_binding(s.qos, s.default_qos),
    ]


def _user_args(s: UserSettings, clear: bool) -> list[str]:
    return [
        f"Fairshare={s.fairshare}",
        *_limit("MaxJobs", s.max_jobs, clear),
        *_gpu_tres("GrpTRESMins", s.grp_tres_mins_gpus, clear),
        *_qos_binding(s.qos, s.default_qos),
    ]


def _show(entity: str, where: Sequence[str], fields: Sequence[str]) -> list[str]:
    return [SACCTMGR, "-P", "-n", "show", entity, "where", *where, f"format={','.join(fields)}"]


def _write(*args: str) -> list[str]:
    return [SACCTMGR, "-i", *args]


def show_qos(name: str) -> list[str]:
    return _show("qos", [f"name={values.name(name)}"], QOS_FORMAT)


def add_qos(name: str, settings: QosSettings) -> list[str]:
    return _write("add", "qos", values.name(name), *_qos_args(settings, clear=False))


def modify_qos(name: str, settings: QosSettings) -> list[str]:
    return _write(
        "modify", "qos", "where", f"name={values.name(name)}", "set", *_qos_args(settings, True)
    )


def delete_qos(name: str) -> list[str]:
    return _write("delete", "qos", "where", f"name={values.name(name)}")


def show_account(name: str, cluster: str | None) -> list[str]:
    """The account record with its associations on `cluster` (None: on every cluster)."""
    where = [f"name={values.name(name)}"]
    if cluster is not None:
        where.append(f"cluster={values.name(cluster)}")
    return _show("account", [*where, "withassoc"], ACCOUNT_FORMAT)


def add_account(name: str, cluster: str, parent: str, settings: AccountSettings) -> list[str]:
    return _write(
        "add",
        "account",
        values.name(name),
        f"Cluster={values.name(cluster)}",
        f"Parent={values.parent(parent)}",
        *_account_args(settings, clear=False),
    )


def modify_account(name: str, cluster: str, settings: AccountSettings) -> list[str]:
    where = [f"name={values.name(name)}", f"cluster={values.name(cluster)}"]
    return _write("modify", "account", "where", *where, "set", *_account_args(settings, True))


def delete_account(name: str, cluster: str | None) -> list[str]:
    """With a cluster: the account's associations there. Without: the account itself, which an
    account with no associations left still is (its Description and Organization)."""
    where = [f"name={values.name(name)}"]
    if cluster is not None:
        where.append(f"cluster={values.name(cluster)}")
    return _write("delete", "account", "where", *where)


def show_associations(
    cluster: str | None,
    *,
    account: str | None = None,
    user: str | None = None,
    parent: str | None = None,
) -> list[str]:
    """Associations on `cluster` (None: on every cluster) that match the other filters."""
    where = [f"cluster={values.name(cluster)}"] if cluster is not None else []
    if account is not None:
        where.append(f"account={values.name(account)}")
    if user is not None:
        where.append(f"user={values.user(user)}")
    if parent is not None:
        where.append(f"parent={values.name(parent)}")
    return _show("association", where, ASSOCIATION_FORMAT)


def show_user(name: str, cluster: str) -> list[str]:
    """The user record with its associations on `cluster`."""
    where = [f"name={values.user(name)}", f"cluster={values.name(cluster)}", "withassoc"]
    return _show("user", where, USER_FORMAT)


def add_user(
    name: str, account: str, cluster: str, default_account: str, settings: UserSettings
) -> list[str]:
    return _write(
        "add",
        "user",
        values.user(name),
        f"Account={values.name(account)}",
        f"Cluster={values.name(cluster)}",
        f"DefaultAccount={values.name(default_account)}",
        *_user_args(settings, clear=False),
    )


def _user_where(name: str, account: str, cluster: str) -> list[str]:
    return [
        f"name={values.user(name)}",
        f"account={values.name(account)}",
        f"cluster={values.name(cluster)}",
    ]


def modify_user(name: str, account: str, cluster: str, settings: UserSettings) -> list[str]:
    where = _user_where(name, account, cluster)
    return _write("modify", "user", "where", *where, "set", *_user_args(settings, True))


def set_default_account(name: str, account: str, cluster: str) -> list[str]:
    # A user's default account belongs to the user, not to one association.
    where = [f"name={values.user(name)}", f"cluster={values.name(cluster)}"]
    return _write(
        "modify", "user", "where", *where, "set", f"DefaultAccount={values.name(account)}"
    )


def delete_user(name: str, account: str, cluster: str) -> list[str]:
    """One association; sacctmgr removes the user too when it was their last."""
    return _write("delete", "user", "where", *_user_where(name, account, cluster))


# --- what Slurm holds ----------------------------------------------------------------------------


@dataclass(frozen=True)
class QosRecord:
    name: str
    description: str
    priority: int
    grp_tres_gpus: int | None
    max_wall: str | None
    flags: tuple[str, ...]
    preempt_mode: str


@dataclass(frozen=True)
class Association:
    cluster: str
    account: str
    user: str  # "" for the account's own association
    parent: str  # "" for a user's association (its parent is its account)
    fairshare: str  # a number or `parent`
    grp_tres_gpus: int | None
    grp_jobs: int | None
    grp_submit_jobs: int | None
    max_jobs: int | None
    grp_tres_mins_gpus: int | None
    qos: tuple[str, ...]
    default_qos: str | None

    def __str__(self) -> str:
        user = f" user {self.user}" if self.user else ""
        return f"account {self.account}{user} on {self.cluster}"


def _find(
    associations: Sequence[Association], cluster: str, account: str, user: str
) -> Association | None:
    return next(
        (a for a in associations if (a.cluster, a.account, a.user) == (cluster, account, user)),
        None,
    )


@dataclass(frozen=True)
class AccountRecord:
    name: str
    organization: str
    description: str
    associations: tuple[Association, ...]  # its own and its users', per cluster

    def association(self, cluster: str) -> Association | None:
        """The account's own association on `cluster`."""
        return _find(self.associations, cluster, self.name, "")


@dataclass(frozen=True)
class UserRecord:
    name: str
    default_account: str
    associations: tuple[Association, ...]

    def association(self, cluster: str, account: str) -> Association | None:
        return _find(self.associations, cluster, account, self.name)


def _rows(text: str, fields: Sequence[str]) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # The last field may hold free text: split only as often as there are separators.
        parts = line.split("|", len(fields) - 1)
        if len(parts) != len(fields):
            raise ValueError(f"expected {len(fields)} fields ({','.join(fields)}), got {line!r}")
        rows.append(parts)
    return rows


def _int(text: str) -> int | None:
    return int(text) if text else None


def _tres(text: str, name: str = GPU) -> int | None:
    """One TRES from a list such as `cpu=4,gres/gpu=64`."""
    for item in text.split(","):
        key, _, count = item.partition("=")
        if key == name:
            return int(count)
    return None


def _list(text: str) -> tuple[str, ...]:
    return tuple(sorted(item for item in text.split(",") if item))


def parse_qos(text: str) -> list[QosRecord]:
    return [
        QosRecord(
            name=name,
            description=description,
            priority=int(priority or 0),
            grp_tres_gpus=_tres(grp_tres),
            max_wall=max_wall or None,
            flags=_list(flags),
            preempt_mode=preempt_mode,
        )
        for name, priority, grp_tres, max_wall, flags, preempt_mode, description in _rows(
            text, QOS_FORMAT
        )
    ]


def _association(row: Sequence[str]) -> Association | None:
    (
        cluster,
        account,
        user,
        parent,
        fairshare,
        grp_tres,
        grp_jobs,
        grp_submit_jobs,
        max_jobs,
        grp_tres_mins,
        qos,
        default_qos,
    ) = row
    if not cluster:
        return None
    return Association(
        cluster=cluster,
        account=account,
        user=user,
        parent=parent,
        fairshare=fairshare,
        grp_tres_gpus=_tres(grp_tres),
        grp_jobs=_int(grp_jobs),
        grp_submit_jobs=_int(grp_submit_jobs),
        max_jobs=_int(max_jobs),
        grp_tres_mins_gpus=_tres(grp_tres_mins),
        qos=_list(qos),
        default_qos=default_qos or None,
    )


def parse_associations(text: str) -> list[Association]:
    return [a for row in _rows(text, ASSOCIATION_FORMAT) if (a := _association(row))]


def parse_accounts(text: str) -> list[AccountRecord]:
    """`show account ... withassoc`: one record per account, its rows' associations gathered."""
    found: dict[str, AccountRecord] = {}
    for organization, *assoc_row, description in _rows(text, ACCOUNT_FORMAT):
        name = assoc_row[1]
        previous = found[name].associations if name in found else ()
        assoc = _association(assoc_row)
        associations = previous + ((assoc,) if assoc else ())
        found[name] = AccountRecord(name, organization, description, associations)
    return list(found.values())


def parse_users(text: str) -> list[UserRecord]:
    """`show user ... withassoc`: one record per user, its rows' associations gathered."""
    found: dict[str, UserRecord] = {}
    for default_account, *assoc_row in _rows(text, USER_FORMAT):
        name = assoc_row[2]
        previous = found[name].associations if name in found else ()
        assoc = _association(assoc_row)
        found[name] = UserRecord(name, default_account, previous + ((assoc,) if assoc else ()))
    return list(found.values())
