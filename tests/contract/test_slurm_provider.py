"""The Slurm providers against the sandbox's real Slurm 22.05, called as the engine calls them:
runbook step 4's objects created, read, updated (the offboarding's frozen stage) and deleted,
and read back with sacctmgr and scontrol themselves. Then drift made behind the providers' back,
adoption and refusal of objects that exist already, and a Slurm that does not answer.

Every test names its objects with a fresh suffix and removes them again: the sandbox is shared.
"""

from __future__ import annotations

import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic import ResourceProvider

from providers.errors import SlurmError
from providers.files import write_atomic
from providers.slurm import partitions
from providers.slurm.provider import (
    SlurmAccountProvider,
    SlurmPartitionProvider,
    SlurmQosProvider,
    SlurmUserProvider,
)
from providers.slurm.transport import SlurmCommandError
from sandbox.layout import SandboxLayout
from tests.backends import show_partition

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def slurm(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def rows(*argv: str) -> list[str]:
    result = slurm(*argv)
    assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
    return result.stdout.splitlines()


@dataclass(frozen=True)
class Tenant:
    """The runbook's names (tenant-foo, ml-team-foo, normal-foo, ...) with a fresh suffix."""

    suffix: str
    partitions_file: Path

    @property
    def slug(self) -> str:
        return f"tenant-{self.suffix}"

    @property
    def team(self) -> str:
        return f"ml-team-{self.suffix}"

    @property
    def normal(self) -> str:
        return f"normal-{self.suffix}"

    @property
    def interactive(self) -> str:
        return f"interactive-{self.suffix}"

    @property
    def user(self) -> str:
        return f"alice-{self.suffix}"

    def inputs(self) -> dict[str, tuple[ResourceProvider, dict[str, Any]]]:
        """Runbook step 4 as the resource classes send it (None: an output to be filled)."""
        both = [self.interactive, self.normal]
        return {
            "normal": (
                SlurmQosProvider(),
                {
                    "name": self.normal, "tenant": self.slug, "priority": 100,
                    "grp_tres_gpus": 64, "max_wall": "24:00:00", "flags": ["DenyOnLimit"],
                    "preempt_mode": None, "preempt_exempt_time": None, "description": None,
                },
            ),
            "interactive": (
                SlurmQosProvider(),
                {
                    "name": self.interactive, "tenant": self.slug, "priority": 200,
                    "grp_tres_gpus": 8, "max_wall": "04:00:00", "flags": [],
                    "preempt_mode": "off", "preempt_exempt_time": "04:00:00",
                    "description": None,
                },
            ),
            "account": (
                SlurmAccountProvider(),
                {
                    "name": self.slug, "parent": "root", "tenant": self.slug,
                    "description": f"Tenant {self.suffix.upper()}", "fairshare": 300,
                    "grp_tres_gpus": 64, "grp_jobs": 200, "grp_submit_jobs": None, "qos": both,
                    "default_qos": self.normal, "organization": None, "cluster": None,
                },
            ),
            "team": (
                SlurmAccountProvider(),
                {
                    "name": self.team, "parent": self.slug, "tenant": self.slug,
                    "description": f"Tenant {self.suffix.upper()} ML Team", "fairshare": 200,
                    "grp_tres_gpus": None, "grp_jobs": None, "grp_submit_jobs": None,
                    "qos": None, "default_qos": None, "organization": None, "cluster": None,
                },
            ),
            "user": (
                SlurmUserProvider(),
                {
                    "user": self.user, "account": self.team, "tenant": self.slug,
                    "default_account": self.team, "fairshare": "parent", "max_jobs": 20,
                    # Pulumi sends every number as a float.
                    "grp_tres_mins_gpus": 240000.0, "qos": both, "default_qos": self.normal,
                    "cluster": None,
                },
            ),
            "partition": (
                SlurmPartitionProvider(),
                {
                    "name": self.slug, "tenant": self.slug, "nodes": "gpu-[01-08]",
                    "allow_accounts": [self.slug], "max_time": "24:00:00",
                    "default_time": "01:00:00", "preempt_mode": "OFF",
                    "oversubscribe": "EXCLUSIVE", "state": "UP",
                },
            ),
        }  # fmt: skip

    def remove_everything(self) -> None:
        """With Slurm's own tools, whatever a test left: users, accounts, QoS, partition."""
        sacctmgr = ("sacctmgr", "-i", "delete")
        slurm(*sacctmgr, "user", "where", f"name={self.user}")
        slurm(*sacctmgr, "account", "where", f"name={self.team}")
        slurm(*sacctmgr, "account", "where", f"name={self.slug}")
        slurm(*sacctmgr, "qos", "where", f"name={self.normal},{self.interactive}")
        with partitions.locked(self.partitions_file):
            text = self.partitions_file.read_text()
            kept = partitions.set_partition(text, self.slug, None)
            if kept != text:
                write_atomic(self.partitions_file, kept)
                slurm("scontrol", "reconfigure")


@pytest.fixture(scope="module")
def partitions_file(sandbox: SandboxLayout) -> Iterator[Path]:
    """The provider's environment for this module: the file form of partitions (the sandbox's
    own partitions file), defaults for the rest (the sandbox fixture exports SLURM_CONF). The
    ConfigMap form is tested in test_slurm_partitions_configmap.py."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_PARTITIONS_FILE", str(sandbox.slurm.partitions_conf))
        for name in (
            "SLURM_TRANSPORT",
            "SLURM_CLUSTER",
            "SLURM_TIMEOUT",
            "SLURM_PARTITIONS_CONFIGMAP",
        ):
            patch.delenv(name, raising=False)
        yield sandbox.slurm.partitions_conf


@contextmanager
def fresh_tenant(partitions_file: Path) -> Iterator[Tenant]:
    made = Tenant(uuid.uuid4().hex[:8], partitions_file)
    try:
        yield made
    finally:
        made.remove_everything()


@pytest.fixture
def tenant(partitions_file: Path) -> Iterator[Tenant]:
    with fresh_tenant(partitions_file) as made:
        yield made


Made = dict[str, tuple[ResourceProvider, dict[str, Any], str, dict[str, Any]]]


@dataclass(frozen=True)
class Onboarded:
    tenant: Tenant
    made: Made  # per object of step 4: (provider, inputs, id, outputs)


def onboard(tenant: Tenant) -> Onboarded:
    """Every object of step 4, created through the providers in the runbook's order."""
    made: Made = {}
    for key, (provider, inputs) in tenant.inputs().items():
        assert provider.check({}, inputs).failures == []
        created = provider.create(inputs)
        assert created.outs is not None
        made[key] = (provider, inputs, created.id, created.outs)
    return Onboarded(tenant, made)


@pytest.fixture(scope="module")
def shared(partitions_file: Path) -> Iterator[Onboarded]:
    """One onboarded tenant for the tests that leave it as they found it (each sacctmgr call
    costs a few round trips to slurmdbd; onboarding takes seconds)."""
    with fresh_tenant(partitions_file) as made:
        yield onboard(made)


@pytest.fixture
def onboarded(tenant: Tenant) -> Onboarded:
    """A tenant of the test's own, for tests that change or delete it."""
    return onboard(tenant)


def test_step_4_reads_back_as_the_runbook_wrote_it(shared: Onboarded) -> None:
    tenant = shared.tenant
    qos = rows(
        "sacctmgr", "-P", "-n", "show", "qos", "where",
        f"name={tenant.normal},{tenant.interactive}",
        "format=Name,Priority,GrpTRES,MaxWall,Flags,PreemptMode,PreemptExemptTime,Description",
    )  # fmt: skip
    mark = f"gpu-tenants:{tenant.slug}"
    assert sorted(qos) == [
        f"{tenant.interactive}|200|gres/gpu=8|04:00:00||cluster|04:00:00|{mark}",
        f"{tenant.normal}|100|gres/gpu=64|1-00:00:00|DenyOnLimit|cluster||{mark}",
    ]
    fields = (
        "format=Account,User,ParentName,Fairshare,GrpTRES,GrpJobs,MaxJobs,GrpTRESMins,"
        "QOS,DefaultQOS"
    )
    both = f"{tenant.interactive},{tenant.normal}"
    assert rows("sacctmgr", "-P", "-n", "show", "assoc", f"account={tenant.slug}", fields) == [
        f"{tenant.slug}||root|300|gres/gpu=64|200|||{both}|{tenant.normal}"
    ]
    assert rows("sacctmgr", "-P", "-n", "show", "assoc", f"account={tenant.team}", fields) == [
        f"{tenant.team}||{tenant.slug}|200|||||{both}|{tenant.normal}",
        f"{tenant.team}|{tenant.user}||parent|||20|gres/gpu=240000|{both}|{tenant.normal}",
    ]
    accounts = rows(
        "sacctmgr", "-P", "-n", "show", "account", "where", f"name={tenant.slug},{tenant.team}",
        "format=Account,Organization,Description",
    )  # fmt: skip
    assert sorted(accounts) == [
        f"{tenant.team}|{tenant.slug}|tenant {tenant.suffix} ml team",
        f"{tenant.slug}|{tenant.slug}|tenant {tenant.suffix}",
    ]
    assert rows("sacctmgr", "-P", "-n", "show", "user", tenant.user, "format=DefaultAccount") == [
        tenant.team
    ]
    partition = show_partition(tenant.slug)
    for expected in (
        "Nodes=gpu-[01-08]",
        f"AllowAccounts={tenant.slug} ",
        "MaxTime=1-00:00:00",
        "DefaultTime=01:00:00",
        "OverSubscribe=EXCLUSIVE",
        "PreemptMode=OFF",
        "State=UP",
        "Default=NO",
        "gres/gpu=64",
    ):
        assert expected in partition
    assert partitions.find_partition(tenant.partitions_file.read_text(), tenant.slug) is not None


def test_nothing_changes_right_after_create(shared: Onboarded) -> None:
    for key, (provider, inputs, id_, outs) in shared.made.items():
        diff = provider.diff(id_, outs, inputs)
        assert (key, diff.changes, diff.replaces) == (key, False, [])
        read = provider.read(id_, outs)
        assert (key, read.id, read.outs) == (key, id_, outs)


def test_drift_shows_in_read_and_diff_and_update_restores_it(shared: Onboarded) -> None:
    tenant = shared.tenant
    rows("sacctmgr", "-i", "modify", "account", tenant.slug, "set", "GrpJobs=5")
    provider, inputs, id_, outs = shared.made["account"]
    drifted = provider.read(id_, outs).outs
    assert drifted is not None
    assert drifted["grp_jobs"] == 5
    diff = provider.diff(id_, drifted, inputs)
    assert (diff.changes, diff.replaces) == (True, [])
    provider.update(id_, drifted, inputs)
    restored = rows(
        "sacctmgr", "-P", "-n", "show", "assoc", f"account={tenant.slug}", "format=GrpJobs"
    )
    assert restored == ["200"]

    # A live `scontrol update` is drift too, and the next reconfigure undoes it.
    rows("scontrol", "update", f"PartitionName={tenant.slug}", "State=DOWN")
    provider, inputs, id_, outs = shared.made["partition"]
    down = provider.read(id_, outs).outs
    assert down is not None
    assert down["state"] == "DOWN"
    assert provider.diff(id_, down, inputs).changes is True
    provider.update(id_, down, inputs)
    assert "State=UP" in show_partition(tenant.slug)


def test_frozen_stage_then_delete_in_reverse_order(onboarded: Onboarded) -> None:
    tenant = onboarded.tenant
    # Offboarding stage 1 (frozen): caps to zero on the account and the sub-account, partition
    # DOWN; all updates in place.
    for key in ("account", "team"):
        provider, inputs, id_, outs = onboarded.made[key]
        frozen = {**inputs, "grp_jobs": 0, "grp_submit_jobs": 0}
        diff = provider.diff(id_, outs, frozen)
        assert (diff.changes, diff.replaces) == (True, [])
        provider.update(id_, outs, frozen)
    provider, inputs, id_, outs = onboarded.made["partition"]
    provider.update(id_, outs, {**inputs, "state": "DOWN"})
    caps = rows(
        "sacctmgr", "-P", "-n", "show", "assoc", f"account={tenant.slug},{tenant.team}",
        "format=Account,User,GrpJobs,GrpSubmitJobs",
    )  # fmt: skip
    assert sorted(caps) == [
        f"{tenant.team}|{tenant.user}||",
        f"{tenant.team}||0|0",
        f"{tenant.slug}||0|0",
    ]
    assert "State=DOWN" in show_partition(tenant.slug)
    assert "State=DOWN" in tenant.partitions_file.read_text()

    # Step 6: users, sub-account, account, QoS, partition; each delete twice (idempotent).
    for key in ("user", "team", "account", "normal", "interactive", "partition"):
        provider, _, id_, outs = onboarded.made[key]
        provider.delete(id_, outs)
        provider.delete(id_, outs)
        gone = provider.read(id_, outs)
        assert (key, gone.id) == (key, "")
    names = f"name={tenant.slug},{tenant.team}"
    assert rows("sacctmgr", "-P", "-n", "show", "account", "where", names) == []
    assert rows("sacctmgr", "-P", "-n", "show", "assoc", f"account={tenant.slug}") == []
    assert rows("sacctmgr", "-P", "-n", "show", "user", tenant.user) == []
    qos = f"name={tenant.normal},{tenant.interactive}"
    assert rows("sacctmgr", "-P", "-n", "show", "qos", "where", qos) == []
    assert "not found" in show_partition(tenant.slug)
    assert tenant.slug not in tenant.partitions_file.read_text()


def test_a_qos_still_in_use_is_kept_and_the_error_names_its_users(shared: Onboarded) -> None:
    tenant = shared.tenant
    provider, _, id_, outs = shared.made["normal"]
    with pytest.raises(SlurmCommandError) as refused:
        provider.delete(id_, outs)
    message = str(refused.value)
    assert f"deleting Slurm QoS '{tenant.normal}' failed" in message
    assert "Default QOS" in message  # sacctmgr's own words
    assert f"account {tenant.slug} on production" in message
    assert f"account {tenant.team} user {tenant.user} on production" in message
    assert refused.value.returncode == 1
    assert len(rows("sacctmgr", "-P", "-n", "show", "qos", "where", f"name={tenant.normal}")) == 1


def test_objects_that_exist_without_the_mark_are_refused(tenant: Tenant) -> None:
    inputs = tenant.inputs()
    rows("sacctmgr", "-i", "add", "qos", tenant.normal, "Description=made by hand")
    rows("sacctmgr", "-i", "add", "account", tenant.slug, "Organization=someone-else")
    line = f"PartitionName={tenant.slug} Nodes=gpu-[01-02] AllowAccounts=someone-else\n"
    with partitions.locked(tenant.partitions_file):
        before = tenant.partitions_file.read_text()
        write_atomic(tenant.partitions_file, before + line)
    for key in ("normal", "account", "partition"):
        provider, props = inputs[key]
        with pytest.raises(SlurmError, match="not marked as this tenant's") as refused:
            provider.create(props)
        assert "mark it" in str(refused.value)
    assert rows("sacctmgr", "-P", "-n", "show", "qos", tenant.normal, "format=Description") == [
        "made by hand"
    ]
    assert rows("sacctmgr", "-P", "-n", "show", "account", tenant.slug, "format=Organization") == [
        "someone-else"
    ]
    assert tenant.partitions_file.read_text() == before + line


def test_marked_objects_are_adopted_not_duplicated(tenant: Tenant) -> None:
    mark = f"Description=gpu-tenants:{tenant.slug}"
    rows("sacctmgr", "-i", "add", "qos", tenant.normal, mark, "Priority=1")
    rows("sacctmgr", "-i", "add", "qos", tenant.interactive, mark)
    org = f"Organization={tenant.slug}"
    rows("sacctmgr", "-i", "add", "account", tenant.slug, org, "Description=old", "GrpJobs=7")
    rows("sacctmgr", "-i", "add", "account", tenant.team, f"parent={tenant.slug}", org)
    rows("sacctmgr", "-i", "add", "user", tenant.user, f"account={tenant.team}", "MaxJobs=1")
    line = f"PartitionName={tenant.slug} Nodes=gpu-[01-02] AllowAccounts={tenant.slug}\n"
    with partitions.locked(tenant.partitions_file):
        write_atomic(tenant.partitions_file, tenant.partitions_file.read_text() + line)

    for key, (provider, props) in tenant.inputs().items():
        created = provider.create(props)
        assert created.outs is not None
        assert (key, provider.diff(created.id, created.outs, props).changes) == (key, False)

    assert rows("sacctmgr", "-P", "-n", "show", "qos", tenant.normal, "format=Priority") == ["100"]
    assert rows("sacctmgr", "-P", "-n", "show", "account", tenant.slug, "format=Description") == [
        f"tenant {tenant.suffix}"
    ]
    assert rows(
        "sacctmgr", "-P", "-n", "show", "assoc", f"account={tenant.slug}", "format=User,GrpJobs"
    ) == ["|200"]
    assert rows(
        "sacctmgr", "-P", "-n", "show", "assoc", f"user={tenant.user}", "format=Account,MaxJobs"
    ) == [f"{tenant.team}|20"]
    text = tenant.partitions_file.read_text()
    assert [e.name for e in partitions.parse_file(text)].count(tenant.slug) == 1
    assert "Nodes=gpu-[01-08]" in show_partition(tenant.slug)


def test_an_account_left_without_associations_is_adopted(tenant: Tenant) -> None:
    # What `delete account where cluster=...` leaves: a record holding the old Description and
    # the mark. sacctmgr's `add` then makes the association but keeps that Description.
    inputs = tenant.inputs()
    for key in ("normal", "interactive"):
        provider, props = inputs[key]
        provider.create(props)
    org = f"Organization={tenant.slug}"
    rows("sacctmgr", "-i", "add", "account", tenant.slug, org, "Description=old")
    rows(
        "sacctmgr", "-i", "delete", "account", "where", f"name={tenant.slug}", "cluster=production"
    )
    provider, props = inputs["account"]
    created = provider.create(props)
    assert created.outs is not None
    assert created.outs["description"] == f"tenant {tenant.suffix}"
    assert provider.diff(created.id, created.outs, props).changes is False


def test_a_user_on_another_tenants_account_is_refused(tenant: Tenant) -> None:
    rows("sacctmgr", "-i", "add", "account", tenant.team, "Organization=someone-else")
    provider, props = tenant.inputs()["user"]
    with pytest.raises(SlurmError, match=r"is not tenant .* Organization is 'someone-else'"):
        provider.create(props)
    assert rows("sacctmgr", "-P", "-n", "show", "assoc", f"user={tenant.user}") == []


def test_a_user_with_associations_outside_the_tenant_is_refused_not_repointed(
    tenant: Tenant,
) -> None:
    # A staff user of the platform's own account, made before the tenant (its name reused).
    staff = f"ops-{tenant.suffix}"
    rows("sacctmgr", "-i", "add", "account", staff, "Organization=platform")
    rows("sacctmgr", "-i", "add", "user", tenant.user, f"account={staff}")
    try:
        for key in ("normal", "interactive", "account", "team"):
            provider, props = tenant.inputs()[key]
            provider.create(props)
        before = rows("sacctmgr", "-P", "-n", "show", "user", tenant.user, "withassoc",
                      "format=User,DefaultAccount,Account")  # fmt: skip
        provider, props = tenant.inputs()["user"]
        with pytest.raises(SlurmError) as refused:
            provider.create(props)
        assert (
            f"Slurm user '{tenant.user}' already has associations with accounts that are not "
            f"tenant '{tenant.slug}''s: {staff} (DefaultAccount '{staff}')"
        ) in str(refused.value)
        after = rows("sacctmgr", "-P", "-n", "show", "user", tenant.user, "withassoc",
                     "format=User,DefaultAccount,Account")  # fmt: skip
        assert after == before == [f"{tenant.user}|{staff}|{staff}"]
    finally:
        slurm("sacctmgr", "-i", "delete", "user", "where", f"name={tenant.user}")
        slurm("sacctmgr", "-i", "delete", "account", "where", f"name={staff}")


def test_objects_that_are_gone_read_as_an_empty_id(tenant: Tenant) -> None:
    for key, (provider, props) in tenant.inputs().items():
        id_ = props.get("name") or f"{tenant.user}@{tenant.team}"
        assert (key, provider.read(id_, props).id) == (key, "")


def test_an_unknown_node_is_refused_before_the_file_is_written(tenant: Tenant) -> None:
    provider, props = tenant.inputs()["partition"]
    before = tenant.partitions_file.read_bytes()
    with pytest.raises(SlurmError, match="gpu-17") as refused:
        provider.create({**props, "nodes": "gpu-[15-17]"})
    assert "left unchanged" in str(refused.value)
    assert tenant.partitions_file.read_bytes() == before
    assert "not found" in show_partition(tenant.slug)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unreachable_conf(sandbox: SandboxLayout, directory: Path) -> Path:
    """The sandbox's slurm.conf with slurmdbd and slurmctld on ports where nothing listens."""
    port = _closed_port()
    lines = []
    for line in sandbox.slurm.slurm_conf.read_text().splitlines():
        if line.startswith(("AccountingStoragePort=", "SlurmctldPort=")):
            line = f"{line.split('=')[0]}={port}"
        lines.append(line)
    conf = directory / "slurm.conf"
    conf.write_text("\n".join(lines) + "\n")
    (directory / "gres.conf").write_text(sandbox.slurm.gres_conf.read_text())
    return conf


def test_an_unreachable_slurmdbd_is_a_slurm_error_in_sacctmgrs_words(
    tenant: Tenant, sandbox: SandboxLayout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(_unreachable_conf(sandbox, tmp_path)))
    provider, props = tenant.inputs()["normal"]
    with pytest.raises(SlurmCommandError) as failed:
        provider.create(props)
    error = failed.value
    assert error.doing == f"reading Slurm QoS '{tenant.normal}'"
    assert "Connection refused" in error.backend_says
    assert error.returncode == 1
    assert error.argv[:4] == ("sacctmgr", "-P", "-n", "show")
    assert "sacctmgr ping" in str(error)


def test_a_controller_that_does_not_answer_times_out(
    tenant: Tenant, sandbox: SandboxLayout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(_unreachable_conf(sandbox, tmp_path)))
    monkeypatch.setenv("SLURM_TIMEOUT", "0.5")
    provider, props = tenant.inputs()["partition"]
    with pytest.raises(SlurmCommandError, match=r"no answer within 0\.5 s") as failed:
        provider.read(tenant.slug, props)
    assert failed.value.returncode is None
