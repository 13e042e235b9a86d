"""sacctmgr, as pure functions: commands built as argv lists, output parsed from text, both from the
Slurm field table (`fields`): its options are what `add` and `modify ... set` write, and its columns
what `show` prints.

Writes use `-i` (no confirmation prompt); reads use `-P -n format=...` and are parsed as
`|`-separated records, with any free text (Description) as the last field so that a `|` inside it
cannot shift the others. What a write takes is validated and put in canonical form by the table
first, so nothing reaches sacctmgr that it would split or misread. Records parsed from output are
not validated: they describe what Slurm holds, whoever wrote it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.slurm import fields, values
from providers.slurm.fields import Kind

__all__ = [
    "SACCTMGR",
    "AccountRecord",
    "Association",
    "QosRecord",
    "UserRecord",
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
    "show_all_qos",
    "show_associations",
    "show_qos",
    "show_tree",
    "show_user",
]

SACCTMGR = "sacctmgr"


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
    preempt_exempt_time: str | None


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


# --- the columns `show` prints, from the table ---------------------------------------------------


@dataclass(frozen=True)
class _Column:
    name: str  # as `show format=` names it
    key: str  # the record's attribute
    read: Callable[[str], Any]
    last: bool = False


def _columns(schema: Kind, *, on_record: bool = False) -> list[_Column]:
    """The columns of the options `schema` names, kept on the record or on each association."""
    return [
        _Column(f.option.shown_as, f.mark or f.key, f.option.form.read, f.option.form.last)
        for f in schema.fields
        if f.option is not None and f.option.on_record == on_record
    ]


def _ordered(columns: Iterable[_Column]) -> tuple[_Column, ...]:
    """Each column once, free text last."""
    unique: dict[str, _Column] = {}
    for column in columns:
        unique.setdefault(column.name, column)
    return tuple(sorted(unique.values(), key=lambda column: column.last))


# What names an association: its cluster, account and user (an account's own has none).
_ADDRESS = (_Column("Cluster", "cluster", str), _Column("Account", "account", str))
_USER = _Column("User", "user", str)
_QOS_COLUMNS = _ordered([_Column("Name", "name", str), *_columns(fields.QOS)])
_ASSOCIATION_COLUMNS = _ordered(
    [*_ADDRESS, _USER, *_columns(fields.ACCOUNT), *_columns(fields.USER)]
)
# `show account|user ... withassoc`: the record and its associations in one call (each sacctmgr
# call costs several round trips to slurmdbd), one row per association; a record without any
# association prints one row with empty association fields.
_ACCOUNT_COLUMNS = _ordered([*_columns(fields.ACCOUNT, on_record=True), *_ASSOCIATION_COLUMNS])
_USER_COLUMNS = _ordered([*_columns(fields.USER, on_record=True), *_ASSOCIATION_COLUMNS])


# --- commands ------------------------------------------------------------------------------------


def _set(schema: Kind, p: Mapping[str, Any], *, adding: bool) -> list[str]:
    """The options `add` (adding) or `modify ... set` writes for properties `p`, once the table
    has validated and put in canonical form: what `add` alone writes (a field whose change
    replaces the object) is left out of `modify`, and `modify` clears what is unset."""
    found = []
    for field in schema.fields:
        if field.option is None or (field.written_by_add_only and not adding):
            continue
        try:
            value = field.parse(p.get(field.key, field.default))
        except ValueError as error:
            raise ValueError(f"{field.key}: {error}") from None
        found += field.option.form.write(field.option.name, field.marked(value), not adding)
    return found


def _show(entity: str, where: Sequence[str], columns: Sequence[_Column]) -> list[str]:
    fields = ",".join(column.name for column in columns)
    return [SACCTMGR, "-P", "-n", "show", entity, "where", *where, f"format={fields}"]


def _write(*args: str) -> list[str]:
    return [SACCTMGR, "-i", *args]


def _add(entity: str, name: str, kind: Kind, p: Mapping[str, Any], *located: str) -> list[str]:
    return _write("add", entity, name, *located, *_set(kind, p, adding=True))


def _modify(entity: str, where: Sequence[str], kind: Kind, p: Mapping[str, Any]) -> list[str]:
    return _write("modify", entity, "where", *where, "set", *_set(kind, p, adding=False))


def _on(cluster: str | None) -> list[str]:
    return [] if cluster is None else [f"cluster={values.name(cluster)}"]


def _cluster(cluster: str) -> str:
    # Where `add` makes the association; `where` clauses name it `cluster=`.
    return f"Cluster={values.name(cluster)}"


def show_qos(name: str) -> list[str]:
    return _show("qos", [f"name={values.name(name)}"], _QOS_COLUMNS)


def show_all_qos() -> list[str]:
    """Every QoS, as sacctmgr prints it by default (for an archive, not for parsing)."""
    return [SACCTMGR, "-P", "show", "qos"]


def add_qos(p: Mapping[str, Any]) -> list[str]:
    """`p`: the QoS's properties (`fields.QOS`)."""
    return _add("qos", values.name(p["name"]), fields.QOS, p)


def modify_qos(p: Mapping[str, Any]) -> list[str]:
    return _modify("qos", [f"name={values.name(p['name'])}"], fields.QOS, p)


def delete_qos(name: str) -> list[str]:
    return _write("delete", "qos", "where", f"name={values.name(name)}")


def show_account(name: str, cluster: str | None) -> list[str]:
    """The account record with its associations on `cluster` (None: on every cluster)."""
    where = [f"name={values.name(name)}", *_on(cluster), "withassoc"]
    return _show("account", where, _ACCOUNT_COLUMNS)


def add_account(p: Mapping[str, Any], cluster: str) -> list[str]:
    """`p`: the account's properties (`fields.ACCOUNT`)."""
    return _add("account", values.name(p["name"]), fields.ACCOUNT, p, _cluster(cluster))


def modify_account(p: Mapping[str, Any], cluster: str) -> list[str]:
    return _modify("account", [f"name={values.name(p['name'])}", *_on(cluster)], fields.ACCOUNT, p)


def delete_account(name: str, cluster: str | None) -> list[str]:
    """With a cluster: the account's associations there. Without: the account itself, which an
    account with no associations left still is (its Description and Organization)."""
    return _write("delete", "account", "where", f"name={values.name(name)}", *_on(cluster))


def show_associations(
    cluster: str | None,
    *,
    account: str | None = None,
    user: str | None = None,
    parent: str | None = None,
) -> list[str]:
    """Associations on `cluster` (None: on every cluster) that match the other filters."""
    where = _on(cluster)
    if account is not None:
        where.append(f"account={values.name(account)}")
    if user is not None:
        where.append(f"user={values.user(user)}")
    if parent is not None:
        where.append(f"parent={values.name(parent)}")
    return _show("association", where, _ASSOCIATION_COLUMNS)


def show_tree(accounts: Sequence[str]) -> list[str]:
    """The association tree of `accounts`, as sacctmgr prints it by default (for an archive)."""
    listed = ",".join(values.name(account) for account in accounts)
    return [SACCTMGR, "-P", "show", "assoc", "where", f"account={listed}", "tree"]


def show_user(name: str, cluster: str) -> list[str]:
    """The user record with its associations on `cluster`."""
    where = [f"name={values.user(name)}", *_on(cluster), "withassoc"]
    return _show("user", where, _USER_COLUMNS)


def add_user(p: Mapping[str, Any], cluster: str) -> list[str]:
    """`p`: the association's properties (`fields.USER`)."""
    return _add("user", values.user(p["user"]), fields.USER, p, _cluster(cluster))


def _user_where(name: str, account: str, cluster: str) -> list[str]:
    return [f"name={values.user(name)}", f"account={values.name(account)}", *_on(cluster)]


def modify_user(p: Mapping[str, Any], cluster: str) -> list[str]:
    return _modify("user", _user_where(p["user"], p["account"], cluster), fields.USER, p)


def set_default_account(name: str, account: str, cluster: str) -> list[str]:
    # A user's default account belongs to the user, not to one association.
    where = [f"name={values.user(name)}", *_on(cluster)]
    return _write(
        "modify", "user", "where", *where, "set", f"DefaultAccount={values.name(account)}"
    )


def delete_user(name: str, account: str, cluster: str) -> list[str]:
    """One association; sacctmgr removes the user too when it was their last."""
    return _write("delete", "user", "where", *_user_where(name, account, cluster))


# --- parsing -------------------------------------------------------------------------------------


def _rows(text: str, columns: Sequence[_Column]) -> list[dict[str, Any]]:
    """Each line as {attribute: value}."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # The last field may hold free text: split only as often as there are separators.
        parts = line.split("|", len(columns) - 1)
        if len(parts) != len(columns):
            names = ",".join(column.name for column in columns)
            raise ValueError(f"expected {len(columns)} fields ({names}), got {line!r}")
        rows.append({c.key: c.read(part) for c, part in zip(columns, parts, strict=True)})
    return rows


def _association(row: Mapping[str, Any]) -> Association | None:
    if not row["cluster"]:
        return None
    return Association(**{column.key: row[column.key] for column in _ASSOCIATION_COLUMNS})


def parse_qos(text: str) -> list[QosRecord]:
    return [QosRecord(**row) for row in _rows(text, _QOS_COLUMNS)]


def parse_associations(text: str) -> list[Association]:
    return [a for row in _rows(text, _ASSOCIATION_COLUMNS) if (a := _association(row))]


def _gathered(
    text: str, columns: Sequence[_Column], name: str, record: Callable[..., Any]
) -> list[Any]:
    """One record per `name` (the attribute that names it), its rows' associations gathered;
    its own attributes are the columns kept on the record."""
    shared = {column.name for column in _ASSOCIATION_COLUMNS}
    own = [column.key for column in columns if column.name not in shared]
    found: dict[str, Any] = {}
    for row in _rows(text, columns):
        key = row[name]
        previous = found[key].associations if key in found else ()
        assoc = _association(row)
        associations = previous + ((assoc,) if assoc else ())
        found[key] = record(name=key, associations=associations, **{k: row[k] for k in own})
    return list(found.values())


def parse_accounts(text: str) -> list[AccountRecord]:
    """`show account ... withassoc`."""
    return _gathered(text, _ACCOUNT_COLUMNS, "account", AccountRecord)


def parse_users(text: str) -> list[UserRecord]:
    """`show user ... withassoc`."""
    return _gathered(text, _USER_COLUMNS, "user", UserRecord)
