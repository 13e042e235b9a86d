"""Slurm as the runbooks drive it: every sacctmgr and scontrol call goes through the one runner
(`transport.SlurmRunner`), and every failure becomes a `SlurmCommandError` that says what was
being done and quotes Slurm.

Writes are idempotent by reading state, not by return code: sacctmgr answers "Nothing new added"
and "Nothing deleted" with rc=1, so after a failed add or delete the object is read back, and
the outcome is whatever Slurm now holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.command import Transport
from providers.errors import SlurmError
from providers.kubernetes.lease import LeaseLock
from providers.slurm import commands, partitions, sacctmgr
from providers.slurm.partition_store import PartitionStore, StaleWriteError
from providers.slurm.partitions import Partition
from providers.slurm.sacctmgr import AccountRecord, Association, QosRecord, UserRecord
from providers.slurm.transport import SlurmCommandError, SlurmRunner, unreachable

__all__ = ["PartitionChange", "SlurmClient"]

# Tries of one partition change while other writers keep changing the ConfigMap under it.
_WRITE_ATTEMPTS = 5


@dataclass(frozen=True)
class PartitionChange:
    """Partition `name`'s new line (None removes it). `guard` sees the line there now (its
    values; None: no line) and raises to refuse the change."""

    name: str
    line: str | None
    guard: Callable[[dict[str, str] | None], None]


class SlurmClient:
    """Reads and writes Slurm objects on one cluster through a transport."""

    def __init__(
        self, transport: Transport, *, cluster: str, write_lock: LeaseLock | None = None
    ) -> None:
        self.runner = SlurmRunner(transport, write_lock)
        self.cluster = cluster

    @property
    def write_lock(self) -> LeaseLock | None:
        return self.runner.write_lock

    def _add(self, argv: Sequence[str], doing: str, exists: Callable[[], bool]) -> bool:
        """True if this call added the object; False if it was there already (someone else made
        it meanwhile, or sacctmgr found nothing new to add): the caller then adopts or refuses."""
        result = self.runner.run(argv, doing)
        if result.ok:
            return True
        if exists():
            return False
        raise SlurmCommandError(doing, result)

    def _delete(self, argv: Sequence[str], doing: str, exists: Callable[[], bool]) -> None:
        result = self.runner.run(argv, doing)
        if not result.ok and exists():
            raise SlurmCommandError(doing, result)

    def _write(self, argv: Sequence[str], doing: str) -> None:
        # A write sacctmgr refuses says why in its own words; the daemons did answer.
        self.runner.must(argv, doing, "")

    # --- QoS -------------------------------------------------------------------------------------

    def qos(self, name: str) -> QosRecord | None:
        doing = f"reading Slurm QoS '{name}'"
        found = self.runner.read(sacctmgr.show_qos(name), doing, sacctmgr.parse_qos)
        return next((q for q in found if q.name == name), None)

    def add_qos(self, p: Mapping[str, Any]) -> bool:
        """`p`: the QoS's properties (`props.QOS`)."""
        name = p["name"]
        doing = f"creating Slurm QoS '{name}'"
        return self._add(sacctmgr.add_qos(p), doing, lambda: bool(self.qos(name)))

    def modify_qos(self, p: Mapping[str, Any]) -> None:
        self._write(sacctmgr.modify_qos(p), f"modifying Slurm QoS '{p['name']}'")

    def delete_qos(self, name: str) -> None:
        doing = f"deleting Slurm QoS '{name}'"
        result = self.runner.run(sacctmgr.delete_qos(name), doing)
        if result.ok or self.qos(name) is None:
            return
        users = [
            str(a) for a in self.associations(doing=doing) if a.default_qos == name or name in a.qos
        ]
        next_step = (
            f"associations still use it: {'; '.join(users)}; delete them or bind them to "
            "another QoS first (a tenant's accounts and users are deleted before its QoS)"
            if users
            else ""
        )
        raise SlurmCommandError(doing, result, next_step)

    # --- accounts and associations ---------------------------------------------------------------

    def account(self, name: str, *, all_clusters: bool = False) -> AccountRecord | None:
        """The account record with its associations on this cluster (or on every cluster)."""
        doing = f"reading Slurm account '{name}'"
        argv = sacctmgr.show_account(name, None if all_clusters else self.cluster)
        found = self.runner.read(argv, doing, sacctmgr.parse_accounts)
        return next((a for a in found if a.name == name), None)

    def associations(self, *, doing: str, parent: str | None = None) -> list[Association]:
        """Associations on this cluster; with `parent`, the sub-accounts of that account."""
        argv = sacctmgr.show_associations(self.cluster, parent=parent)
        return self.runner.read(argv, doing, sacctmgr.parse_associations)

    def children(self, record: AccountRecord) -> list[Association]:
        """What deleting the account would delete with it: its users and sub-accounts here."""
        doing = f"reading what hangs under Slurm account '{record.name}' on '{self.cluster}'"
        users = [a for a in record.associations if a.user and a.cluster == self.cluster]
        subaccounts = self.associations(doing=doing, parent=record.name)
        return users + [a for a in subaccounts if a.account != record.name and not a.user]

    def _has_association(self, name: str) -> bool:
        record = self.account(name)
        return record is not None and record.association(self.cluster) is not None

    def account_doing(self, verb: str, name: str) -> str:
        return f"{verb} Slurm account '{name}' on cluster '{self.cluster}'"

    def add_account(self, p: Mapping[str, Any]) -> bool:
        """`p`: the account's properties (`props.ACCOUNT`)."""
        name = p["name"]
        argv = sacctmgr.add_account(p, self.cluster)
        return self._add(
            argv, self.account_doing("creating", name), lambda: self._has_association(name)
        )

    def modify_account(self, p: Mapping[str, Any]) -> None:
        argv = sacctmgr.modify_account(p, self.cluster)
        self._write(argv, self.account_doing("modifying", p["name"]))

    def delete_account(self, record: AccountRecord) -> None:
        """`record` as read on every cluster. An account without associations is still a record
        (Description, Organization: the mark), so when only this cluster has associations, the
        whole account goes, as the runbook deletes it; otherwise only this cluster's part."""
        elsewhere = any(a.cluster != self.cluster for a in record.associations)
        argv = sacctmgr.delete_account(record.name, self.cluster if elsewhere else None)
        doing = self.account_doing("deleting", record.name)
        self._delete(argv, doing, lambda: self._has_association(record.name))

    # --- users -----------------------------------------------------------------------------------

    def user(self, name: str) -> UserRecord | None:
        """The user with their associations on this cluster."""
        doing = f"reading Slurm user '{name}' on cluster '{self.cluster}'"
        argv = sacctmgr.show_user(name, self.cluster)
        found = self.runner.read(argv, doing, sacctmgr.parse_users)
        return next((u for u in found if u.name == name), None)

    def user_doing(self, verb: str, name: str, account: str) -> str:
        return (
            f"{verb} the Slurm association of user '{name}' on account '{account}' "
            f"(cluster '{self.cluster}')"
        )

    def add_user(self, p: Mapping[str, Any]) -> bool:
        """`p`: the association's properties (`props.USER`)."""
        name, account = p["user"], p["account"]
        doing = self.user_doing("creating", name, account)
        argv = sacctmgr.add_user(p, self.cluster)
        return self._add(argv, doing, lambda: self._has_user_association(name, account))

    def modify_user(self, p: Mapping[str, Any]) -> None:
        doing = self.user_doing("modifying", p["user"], p["account"])
        self._write(sacctmgr.modify_user(p, self.cluster), doing)

    def set_default_account(self, name: str, account: str) -> None:
        doing = f"setting Slurm user '{name}''s default account to '{account}'"
        self._write(sacctmgr.set_default_account(name, account, self.cluster), doing)

    def delete_user(self, name: str, account: str) -> None:
        doing = self.user_doing("deleting", name, account)
        argv = sacctmgr.delete_user(name, account, self.cluster)
        self._delete(argv, doing, lambda: self._has_user_association(name, account))

    def _has_user_association(self, name: str, account: str) -> bool:
        user = self.user(name)
        return user is not None and user.association(self.cluster, account) is not None

    # --- partitions ------------------------------------------------------------------------------

    def partition(self, name: str) -> Partition | None:
        doing = f"reading Slurm partition '{name}'"
        argv = commands.show_partition(name)
        result = self.runner.run(argv, doing)
        if result.ok:
            return partitions.parse_show_partition(result.stdout)
        # scontrol has no quiet form: "not found" is told apart from a failure by its words.
        if f"Partition {name} not found" in result.words:
            return None
        raise SlurmCommandError(doing, result, unreachable(argv))

    def node_names(self, doing: str) -> set[str]:
        return self.runner.read(commands.show_nodes(), doing, partitions.parse_node_names)

    def jobs(self, partition: str, doing: str) -> list[str]:
        return self.runner.must(commands.jobs_in_partition(partition), doing).stdout.split()

    def rewrite_partition(self, store: PartitionStore, change: PartitionChange, doing: str) -> None:
        """Makes `change` in `store` and applies it with `scontrol reconfigure`. Its guard runs
        first; then nodes are checked, the text written (read and redone if someone else wrote
        meanwhile) and, once slurmctld would read the line, the controller reconfigured. If that
        fails, the partition's previous line is put back (other writers' lines kept), so a failed
        change leaves nothing behind."""
        try:
            for _ in range(_WRITE_ATTEMPTS):
                if self._rewrite_once(store, change, doing):
                    return
        except OSError as error:
            # The file form's lock, read and write: one place for them all.
            raise SlurmError(doing, f"{store.describe()}: {error}") from error
        raise SlurmError(
            doing,
            f"{store.describe()} kept changing under this write ({_WRITE_ATTEMPTS} tries)",
            "run again once the other writers are done",
        )

    def _rewrite_once(self, store: PartitionStore, change: PartitionChange, doing: str) -> bool:
        """One read-check-write-reconfigure; False when someone else wrote since the read."""
        name, line = change.name, change.line
        with store.lock():
            read = store.read(doing)
            change.guard(partitions.find_partition(read.text, name))
            new = partitions.set_partition(read.text, name, line)
            if line is None and new == read.text:
                return True
            unknown = partitions.unknown_nodes(new, self.node_names(doing))
            if unknown:
                listed = "; ".join(f"{p}: {', '.join(n)}" for p, n in unknown.items())
                raise SlurmError(
                    doing,
                    f"nodes slurmctld does not know (`scontrol show node`): {listed}",
                    f"{store.describe()} was left unchanged: slurmctld exits on reconfigure "
                    "when a partition names an unknown node; correct the node list",
                )
            try:
                store.write(new, read, doing)
            except StaleWriteError:
                return False
            previous = partitions.line_of(read.text, name)
            try:
                store.wait_visible(name, line, doing)
            except SlurmError as error:
                # Never applied by us: put the old line back, and leave slurmctld to the next
                # reconfigure (waiting for the copy again would double a wait that failed).
                put_back = self._put_back(store, name, previous, doing)
                raise SlurmError(
                    doing, error.backend_says, f"{put_back}; {error.next_step}"
                ) from None
            self._reconfigure(store, name, previous, doing)
            return True

    def _put_back(self, store: PartitionStore, name: str, previous: str | None, doing: str) -> str:
        """Restores partition `name`'s line to `previous` (None: no line) in `store`, keeping what
        other writers wrote since. Returns what it did, for the error being raised; raises
        SlurmError when the store kept changing under it."""
        where = store.describe()
        for _ in range(_WRITE_ATTEMPTS):
            current = store.read(doing)
            try:
                store.write(partitions.set_partition(current.text, name, previous), current, doing)
            except StaleWriteError:
                continue
            return f"partition {name}'s previous line was put back in {where}"
        raise SlurmError(
            doing,
            f"{where} kept changing, so partition {name}'s previous line was not put back",
            f"check {where} and slurmctld (`scontrol ping`, its log)",
        )

    def _reconfigure(
        self, store: PartitionStore, name: str, previous: str | None, doing: str
    ) -> None:
        # Whatever came of it, an answer or none: a timeout must restore the partitions too.
        result = self.runner.result(commands.reconfigure())
        if result.ok:
            return
        put_back = self._put_back(store, name, previous, doing)
        store.wait_visible(name, previous, doing)
        again = self.runner.result(commands.reconfigure())
        restored = (
            f"{put_back} and applied"
            if again.ok
            else f"{put_back}, but applying it failed too ({again.words}); "
            "check slurmctld (`scontrol ping`, its log)"
        )
        raise SlurmCommandError(doing, result, restored)
