"""The dynamic providers of the Slurm resources: runbook step 4 (create, update), the offboarding
runbook's frozen stage (update) and step 6 (delete), and `read` for refresh and drift.

A provider is pickled into the state, so it holds nothing: each call reads `Settings` from the
environment and builds its client. Objects on a cluster are addressed on the cluster recorded
in the outputs at create, so that a later change of SLURM_CLUSTER cannot point a delete at
another cluster.

Ownership: create adopts an object that exists already only when it carries this tenant's mark
(a QoS's Description `gpu-tenants:<tenant>`, an account's Organization, a user association on
one of the tenant's accounts, a partition line whose AllowAccounts names the tenant); delete
refuses an object that no longer carries it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import (
    CreateResult,
    ReadResult,
    UpdateResult,
)

from providers.base import SchemaProvider, adopting, gone
from providers.errors import SlurmError
from providers.slurm import fields, partitions, props, values
from providers.slurm.client import PartitionChange, SlurmClient
from providers.slurm.partition_store import PartitionStore
from providers.slurm.partitions import Partition
from providers.slurm.sacctmgr import AccountRecord, UserRecord
from providers.slurm.settings import Settings

__all__ = [
    "SlurmAccountProvider",
    "SlurmPartitionProvider",
    "SlurmQosProvider",
    "SlurmUserProvider",
]


def _client(recorded: Mapping[str, Any] | None = None) -> tuple[Settings, SlurmClient]:
    settings = Settings.from_environment()
    cluster = (recorded or {}).get("cluster") or settings.cluster
    return settings, settings.client(cluster)


def _not_marked(doing: str, what: str, mark: str, fix: str) -> SlurmError:
    return SlurmError(
        doing,
        f"{what} already exists and is not marked as this tenant's ({mark})",
        f"if it is this tenant's, mark it ({fix}) and run again; otherwise choose another name",
    )


class _SlurmProvider(SchemaProvider):
    error = SlurmError

    def _begin(
        self, inputs: dict[str, Any], doing: str
    ) -> tuple[dict[str, Any], Settings, SlurmClient]:
        """A change's inputs, checked before anything else, and the settings and client to make it
        with."""
        p = self.load(inputs, doing)
        settings, client = _client()
        return p, settings, client

    def _deleting(self, what: str, outputs: dict[str, Any]) -> str:
        """The `doing` of deleting `what`, once offboarding has reached the stage that allows it."""
        doing = f"deleting Slurm {what}"
        self.refuse_before_offboarding(what, outputs, doing)
        return doing


# --- QoS -----------------------------------------------------------------------------------------


class SlurmQosProvider(_SlurmProvider):
    """A QoS (runbook 4c), marked as the tenant's by its Description."""

    schema = props.QOS

    def create(self, inputs: dict[str, Any]) -> CreateResult:
        doing = f"creating Slurm QoS '{inputs.get('name')}'"
        p, _, client = self._begin(inputs, doing)
        name = p["name"]
        # Add first: a new QoS needs no check, and a failed add is decided by reading it back.
        if not client.add_qos(p):
            live = client.qos(name)
            found = live.description if live else ""
            mark = values.owner_mark(p["tenant"])
            unmarked = not found.startswith(values.OWNER_PREFIX)
            if found != mark and not (adopting(inputs) and unmarked):
                raise _not_marked(
                    doing,
                    f"QoS '{name}'",
                    f"its Description is '{found}', not '{mark}'",
                    f"sacctmgr -i modify qos where name={name} set Description={mark}",
                )
            client.modify_qos(p)
        return CreateResult(name, self._outputs(client, p, doing))

    def read(self, id_: str, outputs: dict[str, Any]) -> ReadResult:
        _, client = _client()
        live = client.qos(id_)
        return ReadResult(id_, fields.QOS.outputs(vars(live), outputs)) if live else gone()

    def update(self, id_: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        doing = f"modifying Slurm QoS '{id_}'"
        p, _, client = self._begin(news, doing)
        client.modify_qos(p)
        return UpdateResult(self._outputs(client, p, doing))

    def delete(self, id_: str, outputs: dict[str, Any]) -> None:
        doing = self._deleting(f"QoS '{id_}'", outputs)
        _, client = _client()
        live = client.qos(id_)
        if live is None:
            return
        mark = values.owner_mark(outputs["tenant"])
        if live.description != mark:
            raise SlurmError(
                doing,
                f"it no longer carries this tenant's mark (Description is '{live.description}', "
                f"not '{mark}')",
                "if it is still this tenant's, restore the mark and run again; if it is not, "
                "remove it from this stack with `pulumi state delete`",
            )
        client.delete_qos(id_)

    def _outputs(self, client: SlurmClient, p: Mapping[str, Any], doing: str) -> dict[str, Any]:
        live = client.qos(p["name"])
        if live is None:
            raise SlurmError(doing, f"QoS '{p['name']}' is not there after the write")
        return fields.QOS.outputs(vars(live), p)


# --- accounts ------------------------------------------------------------------------------------


class SlurmAccountProvider(_SlurmProvider):
    """A tenant account, or a team sub-account under it (runbook 4a), with its association's
    limits and QoS binding; marked as the tenant's by its Organization."""

    schema = props.ACCOUNT

    def create(self, inputs: dict[str, Any]) -> CreateResult:
        _, client = _client()
        doing = client.account_doing("creating", inputs.get("name", ""))
        p = self.load(inputs, doing)
        # Read first, unlike a QoS: `add` succeeds on a record left without associations and
        # keeps its Organization, so adding blindly could take over another tenant's account.
        record = self._marked(client, p, doing, adopting(inputs))
        if record is None and not client.add_account(p):
            record = self._marked(client, p, doing, adopting(inputs))
        if record is not None:
            if record.association(client.cluster) is None:
                client.add_account(p)
            # Adopting: the add above keeps the record's old Description; modify sets it all.
            client.modify_account(p)
        return CreateResult(p["name"], self._outputs(client, p, doing))

    @staticmethod
    def _marked(
        client: SlurmClient, p: Mapping[str, Any], doing: str, adopt: bool
    ) -> AccountRecord | None:
        """The existing account if it carries the tenant's mark (or, adopting, if sacctmgr's
        default Organization stands: the account's own name, or its parent's); None if there is
        none."""
        name, tenant = p["name"], p["tenant"]
        record = client.account(name)
        if record is None:
            return None
        defaults = ("", name, p["parent"])
        if record.organization != tenant and not (adopt and record.organization in defaults):
            raise _not_marked(
                doing,
                f"account '{name}'",
                f"its Organization is '{record.organization}', not '{tenant}'",
                f"sacctmgr -i modify account where name={name} set Organization={tenant}",
            )
        assoc = record.association(client.cluster)
        if assoc is not None and assoc.parent != p["parent"]:
            raise SlurmError(
                doing,
                f"account '{name}' exists under parent '{assoc.parent}', not '{p['parent']}'",
                "move it (sacctmgr -i modify account where name=... set parent=...) or correct "
                "the parent, and run again",
            )
        return record

    def read(self, id_: str, outputs: dict[str, Any]) -> ReadResult:
        _, client = _client(outputs)
        live = _account_outputs(client.account(id_), client.cluster, outputs)
        return ReadResult(id_, live) if live else gone()

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        _, client = _client(olds)
        doing = client.account_doing("modifying", id_)
        p = self.load(news, doing)
        client.modify_account(p)
        return UpdateResult(self._outputs(client, p, doing))

    def delete(self, id_: str, outputs: dict[str, Any]) -> None:
        _, client = _client(outputs)
        doing = client.account_doing("deleting", id_)
        self.refuse_before_offboarding(f"account '{id_}'", outputs, doing)
        record = client.account(id_, all_clusters=True)
        if record is None:
            return
        if record.organization != outputs["tenant"]:
            raise SlurmError(
                doing,
                f"it no longer carries this tenant's mark (Organization is "
                f"'{record.organization}', not '{outputs['tenant']}')",
                "if it is still this tenant's, restore the mark and run again; if it is not, "
                "remove it from this stack with `pulumi state delete`",
            )
        # sacctmgr deletes an account's users and sub-accounts with it, without asking. The
        # stack deletes its own first; anything left was made by hand and is not ours to drop.
        left = client.children(record)
        if left:
            raise SlurmError(
                doing,
                f"associations this stack does not manage still hang under it: "
                f"{'; '.join(str(a) for a in left)}",
                f"remove them (`sacctmgr -i delete user where account={id_}`, or delete the "
                "sub-accounts) once their owners agree, and run again",
            )
        client.delete_account(record)

    @staticmethod
    def _outputs(client: SlurmClient, p: Mapping[str, Any], doing: str) -> dict[str, Any]:
        live = _account_outputs(client.account(p["name"]), client.cluster, p)
        if live is None:
            raise SlurmError(doing, f"account '{p['name']}' is not there after the write")
        return live


def _account_outputs(
    record: AccountRecord | None, cluster: str, recorded: Mapping[str, Any]
) -> dict[str, Any] | None:
    assoc = record.association(cluster) if record else None
    if record is None or assoc is None:
        return None
    live = {**vars(record), **vars(assoc)}
    return {**fields.ACCOUNT.outputs(live, recorded), "cluster": cluster}


# --- user associations ---------------------------------------------------------------------------


class SlurmUserProvider(_SlurmProvider):
    """A user's association with one of the tenant's accounts (runbook 4b)."""

    schema = props.USER

    def create(self, inputs: dict[str, Any]) -> CreateResult:
        _, client = _client()
        doing = client.user_doing("creating", inputs.get("user", ""), inputs.get("account", ""))
        p = self.load(inputs, doing)
        user, account = p["user"], p["account"]
        # Adopting needs no other check: an association on one of the tenant's accounts is the
        # tenant's.
        self._require_tenant_account(client, p, doing)
        self._refuse_someone_elses(client, p, doing)
        if not client.add_user(p):
            client.modify_user(p)
        return CreateResult(f"{user}@{account}", self._apply_default_account(client, p, doing))

    @staticmethod
    def _require_tenant_account(client: SlurmClient, p: Mapping[str, Any], doing: str) -> None:
        account, tenant = p["account"], p["tenant"]
        record = client.account(account)
        if record is None:
            raise SlurmError(doing, f"account '{account}' does not exist", "create it first")
        if record.organization != tenant:
            raise SlurmError(
                doing,
                f"account '{account}' is not tenant '{tenant}''s (its Organization is "
                f"'{record.organization}')",
                "associate the user with one of the tenant's accounts",
            )

    @staticmethod
    def _refuse_someone_elses(client: SlurmClient, p: Mapping[str, Any], doing: str) -> None:
        """Refuses a user who already has associations with accounts that are not the tenant's
        (a staff user, another tenant's): `add user` would re-point their DefaultAccount, and
        the tenant's destroy would remove what it thinks is its own."""
        record = client.user(p["user"])
        if record is None:
            return
        accounts = {assoc.account for assoc in record.associations}
        found = {name: client.account(name) for name in accounts}
        foreign = sorted(
            name
            for name, account in found.items()
            if account is None or account.organization != p["tenant"]
        )
        if foreign:
            raise SlurmError(
                doing,
                f"Slurm user '{p['user']}' already has associations with accounts that are not "
                f"tenant '{p['tenant']}''s: {', '.join(foreign)} (DefaultAccount "
                f"'{record.default_account}')",
                "a username belongs to one tenant: choose another username for this tenant, or "
                "remove those associations first if the user really moves here; nothing was "
                "changed",
            )

    @staticmethod
    def _apply_default_account(
        client: SlurmClient, p: Mapping[str, Any], doing: str
    ) -> dict[str, Any]:
        """The outputs, after setting the user's default account if it differs: it belongs to
        the user, and `add user` keeps an existing user's."""
        live = _user_outputs(client.user(p["user"]), client.cluster, p)
        if live is not None and live["default_account"] != p["default_account"]:
            client.set_default_account(p["user"], p["default_account"])
            live = _user_outputs(client.user(p["user"]), client.cluster, p)
        if live is None:
            raise SlurmError(doing, "the association is not there after the write")
        return live

    def read(self, id_: str, outputs: dict[str, Any]) -> ReadResult:
        _, client = _client(outputs)
        live = _user_outputs(client.user(outputs["user"]), client.cluster, outputs)
        return ReadResult(id_, live) if live else gone()

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        _, client = _client(olds)
        doing = client.user_doing("modifying", news.get("user", ""), news.get("account", ""))
        p = self.load(news, doing)
        self._require_tenant_account(client, p, doing)
        client.modify_user(p)
        return UpdateResult(self._apply_default_account(client, p, doing))

    def delete(self, _id: str, outputs: dict[str, Any]) -> None:
        _, client = _client(outputs)
        user, account, tenant = outputs["user"], outputs["account"], outputs["tenant"]
        doing = client.user_doing("deleting", user, account)
        record = client.account(account)
        if record is not None and record.organization != tenant:
            raise SlurmError(
                doing,
                f"account '{account}' no longer carries this tenant's mark (Organization is "
                f"'{record.organization}', not '{tenant}')",
                "restore the mark and run again, or remove the association from this stack "
                "with `pulumi state delete`",
            )
        client.delete_user(user, account)


def _user_outputs(
    record: UserRecord | None, cluster: str, p: Mapping[str, Any]
) -> dict[str, Any] | None:
    assoc = record.association(cluster, p["account"]) if record else None
    if record is None or assoc is None:
        return None
    live = {**vars(record), **vars(assoc)}
    return {**fields.USER.outputs(live, p), "cluster": cluster}


# --- partitions ----------------------------------------------------------------------------------


def _partition(p: Mapping[str, Any]) -> Partition:
    """The line's values: the properties a `Partition` has (Default=NO: the one it keeps)."""
    return Partition(**{f.name: p[f.name] for f in dataclasses.fields(Partition) if f.name in p})


def _refuse_defined_elsewhere(
    client: SlurmClient, store: PartitionStore, name: str, doing: str
) -> None:
    """For a partition without a line in `store`: refuses when slurmctld has it all the same,
    since a line written now would define it twice and a delete would leave it in place."""
    if client.partition(name) is not None:
        raise SlurmError(
            doing,
            f"partition '{name}' exists in slurmctld but not in {store.describe()} (slurm.conf, "
            "another included file, or made live with scontrol)",
            f"move its line into {store.describe()}, or choose another name; then run again",
        )


class SlurmPartitionProvider(_SlurmProvider):
    """A tenant partition (runbook 4d) as a line of SLURM_PARTITIONS_FILE; `state` DOWN is the
    offboarding runbook's frozen stage."""

    schema = props.PARTITION

    def create(self, inputs: dict[str, Any]) -> CreateResult:
        doing = f"creating Slurm partition '{inputs.get('name')}'"
        p, settings, client = self._begin(inputs, doing)
        name = p["name"]
        store = settings.partition_store(doing)

        def adopt_only_marked(line: dict[str, str] | None) -> None:
            if line is not None:
                allowed = line.get("AllowAccounts", "").split(",")
                if p["tenant"] not in allowed and not adopting(inputs):
                    raise _not_marked(
                        doing,
                        f"partition '{name}' in {store.describe()}",
                        f"its AllowAccounts is '{','.join(allowed)}', without '{p['tenant']}'",
                        f"add {p['tenant']} to its AllowAccounts in {store.describe()}",
                    )
            else:
                _refuse_defined_elsewhere(client, store, name, doing)

        client.rewrite_partition(
            store, PartitionChange(name, self._line(p, doing), adopt_only_marked), doing
        )
        return CreateResult(name, self._outputs(client, p, doing))

    def read(self, id_: str, outputs: dict[str, Any]) -> ReadResult:
        _, client = _client()
        live = client.partition(id_)
        if live is None:
            return gone()
        return ReadResult(id_, fields.PARTITION.outputs(vars(live), outputs))

    def update(self, id_: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        doing = f"modifying Slurm partition '{id_}'"
        p, settings, client = self._begin(news, doing)
        store = settings.partition_store(doing)

        def not_elsewhere(line: dict[str, str] | None) -> None:
            if line is None:
                _refuse_defined_elsewhere(client, store, id_, doing)

        # Reconfigured even when the line is unchanged: that undoes live `scontrol update`s.
        client.rewrite_partition(
            store, PartitionChange(id_, self._line(p, doing), not_elsewhere), doing
        )
        return UpdateResult(self._outputs(client, p, doing))

    def delete(self, id_: str, outputs: dict[str, Any]) -> None:
        doing = self._deleting(f"partition '{id_}'", outputs)
        settings, client = _client()
        store = settings.partition_store(doing)
        tenant = outputs["tenant"]

        def only_marked_and_empty(line: dict[str, str] | None) -> None:
            if line is None:
                _refuse_defined_elsewhere(client, store, id_, doing)
                return
            if tenant not in line.get("AllowAccounts", "").split(","):
                raise SlurmError(
                    doing,
                    f"its line in {store.describe()} no longer names '{tenant}' in AllowAccounts",
                    "restore the mark and run again, or remove the partition from this stack "
                    "with `pulumi state delete`",
                )
            jobs = client.jobs(id_, doing)
            if jobs:
                raise SlurmError(
                    doing,
                    f"{len(jobs)} jobs are still in the partition ({', '.join(jobs[:10])})",
                    "drain it first (offboarding step 2), then run again",
                )

        client.rewrite_partition(store, PartitionChange(id_, None, only_marked_and_empty), doing)

    @staticmethod
    def _line(p: Mapping[str, Any], doing: str) -> str:
        try:
            return partitions.render_line(_partition(p))
        except ValueError as error:
            raise SlurmError(doing, f"refusing to write the partition line: {error}") from error

    def _outputs(self, client: SlurmClient, p: Mapping[str, Any], doing: str) -> dict[str, Any]:
        live = client.partition(p["name"])
        if live is None:
            raise SlurmError(doing, "the partition is not there after `scontrol reconfigure`")
        return fields.PARTITION.outputs(vars(live), p)
