"""The Slurm provider's pure parts: parsers on output captured from the sandbox's Slurm 22.05
(runbook step 4 applied with this provider's own commands), command building, partition lines,
diffs in Slurm's stored forms, and the values refused before anything runs."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from providers.command import CommandResult, KubectlExecTransport
from providers.errors import SlurmError
from providers.slurm import partitions, props, sacctmgr, usage, values
from providers.slurm.accounting_export import tenant_lines, wait_for_accounting
from providers.slurm.client import SlurmClient
from providers.slurm.partition_store import ConfigMapStore, FileStore
from providers.slurm.partitions import Partition
from providers.slurm.provider import SlurmAccountProvider, SlurmPartitionProvider, SlurmQosProvider
from providers.slurm.settings import Settings

# --- captured from the sandbox -------------------------------------------------------------------

SHOW_QOS_NORMAL = (
    "normal-foo|100|gres/gpu=64|1-00:00:00|DenyOnLimit|cluster||gpu-tenants:tenant-foo\n"
)
SHOW_QOS_INTERACTIVE = (
    "interactive-foo|200|gres/gpu=8|04:00:00||cluster|04:00:00|gpu-tenants:tenant-foo\n"
)
# `show account|user ... withassoc`: the record and its associations, one row per association.
SHOW_ACCOUNT = (
    "tenant-foo|production|tenant-foo||root|300|gres/gpu=64|200||normal-foo|normal-foo|||"
    "tenant foo\n"
)
SHOW_TEAM = (
    "tenant-foo|production|ml-team-foo||tenant-foo|200||||normal-foo|normal-foo|||"
    "tenant foo ml team\n"
    "tenant-foo|production|ml-team-foo|alice||parent||||normal-foo|normal-foo|20|gres/gpu=240000|"
    "tenant foo ml team\n"
)
# What `delete account where name=... cluster=...` leaves: the record, without associations.
SHOW_TEAM_WITHOUT_ASSOCIATIONS = "tenant-foo||ml-team-foo|||0||0|0|||0||tenant foo ml team\n"
SHOW_USER = (
    "ml-team-foo|production|ml-team-foo|alice||parent||||normal-foo|normal-foo|20|gres/gpu=240000\n"
)
# `show association where parent=tenant-foo`: the sub-account, with the QoS it inherits.
SHOW_SUBACCOUNTS = (
    "production|ml-team-foo||tenant-foo|200||||interactive-foo,normal-foo|normal-foo||\n"
)
SHOW_PARTITION = (
    "PartitionName=tenant-foo AllowGroups=ALL AllowAccounts=tenant-foo AllowQos=ALL "
    "AllocNodes=ALL Default=NO QoS=N/A DefaultTime=01:00:00 DisableRootJobs=NO ExclusiveUser=NO "
    "GraceTime=0 Hidden=NO MaxNodes=UNLIMITED MaxTime=1-00:00:00 MinNodes=0 LLN=NO "
    "MaxCPUsPerNode=UNLIMITED Nodes=gpu-[01-08] PriorityJobFactor=1 PriorityTier=1 RootOnly=NO "
    "ReqResv=NO OverSubscribe=EXCLUSIVE OverTimeLimit=NONE PreemptMode=OFF State=UP "
    "TotalCPUs=1792 TotalNodes=8 SelectTypeParameters=NONE JobDefaults=(null) "
    "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED "
    "TRES=cpu=1792,mem=15625G,node=8,billing=1792,gres/gpu=64\n"
)
SHOW_NODES = (
    "NodeName=gpu-01 CoresPerSocket=56  CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=N/A "
    "AvailableFeatures=h100 ActiveFeatures=h100 Gres=gpu:8 NodeAddr=gpu-01 NodeHostName=gpu-01  "
    "RealMemory=2000000 State=IDLE+CLOUD+POWERED_DOWN Partitions=platform  BootTime=None\n"
    "NodeName=gpu-02 CoresPerSocket=56  CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=N/A "
    "AvailableFeatures=h100 ActiveFeatures=h100 Gres=gpu:8 NodeAddr=gpu-02 NodeHostName=gpu-02  "
    "RealMemory=2000000 State=IDLE+CLOUD+POWERED_DOWN Partitions=platform  BootTime=None\n"
)
PARTITIONS_FILE = (
    "# Tenant partitions (runbook step 4d), written by the Slurm provider.\n"
    "PartitionName=tenant-bar Nodes=gpu-[09-10] AllowAccounts=tenant-bar \\\n"
    "    MaxTime=04:00:00   DefaultTime=01:00:00 # written by hand\n"
)

RUNBOOK_LINE = (
    "PartitionName=tenant-foo Nodes=gpu-[01-08] AllowAccounts=tenant-foo Default=NO State=UP "
    "MaxTime=1-00:00:00 DefaultTime=01:00:00 PreemptMode=OFF OverSubscribe=EXCLUSIVE\n"
)


def runbook_partition(**changes: str) -> Partition:
    fields = {
        "name": "tenant-foo",
        "nodes": "gpu-[01-08]",
        "max_time": "24:00:00",
        "default_time": "01:00:00",
        "preempt_mode": "OFF",
        "oversubscribe": "EXCLUSIVE",
        "state": "UP",
        **changes,
    }
    return Partition(allow_accounts=("tenant-foo",), **fields)


NORMAL = {
    "name": "normal-foo",
    "tenant": "tenant-foo",
    "priority": 100,
    "grp_tres_gpus": 64,
    "max_wall": "24:00:00",
    "flags": ["DenyOnLimit"],
}
TENANT_ACCOUNT = {
    "name": "tenant-foo",
    "tenant": "tenant-foo",
    "description": "Tenant Foo",
    "fairshare": 300,
    "grp_tres_gpus": 64,
    "grp_jobs": 200,
    "qos": ["interactive-foo", "normal-foo"],
    "default_qos": "normal-foo",
}
ALICE = {
    "user": "alice",
    "account": "ml-team-foo",
    "tenant": "tenant-foo",
    "default_account": "ml-team-foo",
    "fairshare": "parent",
    "max_jobs": 20,
    "grp_tres_mins_gpus": 240000,
    "qos": ["interactive-foo", "normal-foo"],
    "default_qos": "normal-foo",
}

# --- parsers -------------------------------------------------------------------------------------


def test_qos_records_are_parsed_in_slurms_stored_forms() -> None:
    [normal] = sacctmgr.parse_qos(SHOW_QOS_NORMAL)
    assert normal == sacctmgr.QosRecord(
        name="normal-foo",
        description="gpu-tenants:tenant-foo",
        priority=100,
        grp_tres_gpus=64,
        max_wall="1-00:00:00",
        flags=("DenyOnLimit",),
        preempt_mode="cluster",
        preempt_exempt_time=None,
    )
    [interactive] = sacctmgr.parse_qos(SHOW_QOS_INTERACTIVE)
    assert (interactive.grp_tres_gpus, interactive.flags) == (8, ())
    assert interactive.preempt_exempt_time == "04:00:00"
    assert sacctmgr.parse_qos("") == []


def test_accounts_with_their_associations() -> None:
    [tenant] = sacctmgr.parse_accounts(SHOW_ACCOUNT)
    assert (tenant.name, tenant.organization, tenant.description) == (
        "tenant-foo",
        "tenant-foo",
        "tenant foo",
    )
    own = tenant.association("production")
    assert own is not None
    assert (own.parent, own.fairshare, own.grp_tres_gpus, own.grp_jobs) == ("root", "300", 64, 200)
    assert (own.grp_submit_jobs, own.qos, own.default_qos) == (None, ("normal-foo",), "normal-foo")
    assert tenant.association("staging") is None
    [team] = sacctmgr.parse_accounts(SHOW_TEAM)
    assert [a.user for a in team.associations] == ["", "alice"]
    assert str(team.associations[1]) == "account ml-team-foo user alice on production"
    [left] = sacctmgr.parse_accounts(SHOW_TEAM_WITHOUT_ASSOCIATIONS)
    assert (left.organization, left.associations) == ("tenant-foo", ())


def test_users_and_subaccounts() -> None:
    [alice] = sacctmgr.parse_users(SHOW_USER)
    assert alice.default_account == "ml-team-foo"
    assoc = alice.association("production", "ml-team-foo")
    assert assoc is not None
    assert (assoc.parent, assoc.fairshare, assoc.max_jobs, assoc.grp_tres_mins_gpus) == (
        "",
        "parent",
        20,
        240000,
    )
    assert alice.association("production", "tenant-foo") is None
    [team] = sacctmgr.parse_associations(SHOW_SUBACCOUNTS)
    assert (team.account, team.parent, team.qos) == (
        "ml-team-foo",
        "tenant-foo",
        ("interactive-foo", "normal-foo"),
    )
    assert sacctmgr.parse_users("") == []


def test_free_text_is_the_last_field_so_a_bar_inside_it_shifts_nothing() -> None:
    row = ["someone", "production", "other", "", "root", "1", *[""] * 3, "normal", "", "", ""]
    [record] = sacctmgr.parse_accounts("|".join([*row, "made | by hand"]) + "\n")
    assert (record.description, record.organization) == ("made | by hand", "someone")


def test_output_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="expected 8 fields"):
        sacctmgr.parse_qos("normal-foo|100\n")


def test_tres_lists_yield_the_gpu_entry() -> None:
    [assoc] = sacctmgr.parse_associations("production|a||root|1|cpu=4,gres/gpu=16|||normal|||\n")
    assert (assoc.grp_tres_gpus, assoc.default_qos) == (16, None)


# --- command building ----------------------------------------------------------------------------


def test_qos_commands_are_the_runbooks() -> None:
    assert sacctmgr.add_qos(NORMAL) == [
        "sacctmgr", "-i", "add", "qos", "normal-foo", "Description=gpu-tenants:tenant-foo",
        "Priority=100", "GrpTRES=gres/gpu=64", "MaxWall=1-00:00:00", "Flags=DenyOnLimit",
        "PreemptMode=OFF",
    ]  # fmt: skip
    assert sacctmgr.show_qos("normal-foo") == [
        "sacctmgr", "-P", "-n", "show", "qos", "where", "name=normal-foo",
        "format=Name,Priority,GrpTRES,MaxWall,Flags,PreemptMode,PreemptExemptTime,Description",
    ]  # fmt: skip
    assert sacctmgr.delete_qos("normal-foo") == [
        "sacctmgr", "-i", "delete", "qos", "where", "name=normal-foo",
    ]  # fmt: skip


def test_modify_clears_what_is_unset_with_minus_one() -> None:
    bare = {"name": "q", "tenant": "tenant-foo", "priority": 5}
    assert sacctmgr.modify_qos(bare)[-7:] == [
        "Description=gpu-tenants:tenant-foo", "Priority=5", "GrpTRES=gres/gpu=-1",
        "MaxWall=-1", "Flags=-1", "PreemptMode=OFF", "PreemptExemptTime=-1",
    ]  # fmt: skip
    assert "GrpTRES=gres/gpu=-1" not in sacctmgr.add_qos(bare)


def test_account_and_user_commands() -> None:
    # The Description stays one argv element: no shell, so no quoting.
    assert sacctmgr.add_account(TENANT_ACCOUNT, "production") == [
        "sacctmgr", "-i", "add", "account", "tenant-foo", "Cluster=production", "Parent=root",
        "Organization=tenant-foo", "Description=Tenant Foo", "Fairshare=300",
        "GrpTRES=gres/gpu=64", "GrpJobs=200", "QOS=interactive-foo,normal-foo",
        "DefaultQOS=normal-foo",
    ]  # fmt: skip
    frozen = {
        "name": "tenant-foo", "tenant": "tenant-foo", "description": "Tenant Foo",
        "fairshare": 300, "grp_jobs": 0, "grp_submit_jobs": 0,
    }  # fmt: skip
    assert sacctmgr.modify_account(frozen, "production") == [
        "sacctmgr", "-i", "modify", "account", "where", "name=tenant-foo", "cluster=production",
        "set", "Organization=tenant-foo", "Description=Tenant Foo", "Fairshare=300",
        "GrpTRES=gres/gpu=-1", "GrpJobs=0", "GrpSubmitJobs=0",
    ]  # fmt: skip
    assert sacctmgr.add_user(ALICE, "production") == [
        "sacctmgr", "-i", "add", "user", "alice", "Cluster=production", "Account=ml-team-foo",
        "DefaultAccount=ml-team-foo", "Fairshare=parent", "MaxJobs=20",
        "GrpTRESMins=gres/gpu=240000", "QOS=interactive-foo,normal-foo", "DefaultQOS=normal-foo",
    ]  # fmt: skip
    assert sacctmgr.delete_user("alice", "ml-team-foo", "production")[-3:] == [
        "name=alice", "account=ml-team-foo", "cluster=production",
    ]  # fmt: skip
    assert sacctmgr.delete_account("tenant-foo", None)[-1] == "name=tenant-foo"
    assert sacctmgr.show_account("tenant-foo", "production") == [
        "sacctmgr", "-P", "-n", "show", "account", "where", "name=tenant-foo",
        "cluster=production", "withassoc",
        "format=Organization,Cluster,Account,User,ParentName,Fairshare,GrpTRES,GrpJobs,"
        "GrpSubmitJobs,QOS,DefaultQOS,MaxJobs,GrpTRESMins,Description",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: sacctmgr.add_account({**TENANT_ACCOUNT, "description": "A, B"}, "c"), "misread"),
        (
            lambda: sacctmgr.add_account({**TENANT_ACCOUNT, "description": 'say "hi"'}, "c"),
            "misread",
        ),
        (lambda: sacctmgr.modify_account({**TENANT_ACCOUNT, "description": "-i"}, "c"), "misread"),
        (lambda: sacctmgr.add_qos({**NORMAL, "priority": -1}), "outside"),
        (lambda: sacctmgr.modify_qos({**NORMAL, "max_wall": "24:00"}), "not a time limit"),
        (lambda: sacctmgr.add_qos({**NORMAL, "flags": ["Bogus"]}), "not one of"),
        (lambda: sacctmgr.add_user({**ALICE, "fairshare": "half"}, "c"), "not a whole number"),
        (lambda: sacctmgr.show_qos("normal foo"), "not a Slurm name"),
        (lambda: sacctmgr.show_qos("a=b"), "not a Slurm name"),
        (lambda: sacctmgr.show_qos("a|b"), "not a Slurm name"),
        (lambda: sacctmgr.show_qos("Normal"), "not a Slurm name"),
        (lambda: sacctmgr.show_user("alice,bob", "production"), "not a Slurm user name"),
        (lambda: sacctmgr.delete_account("root", None), "reserved"),
    ],
)
def test_values_sacctmgr_would_misread_are_refused(build: Callable[[], object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        build()


# --- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu-[01-03,05]", ("gpu-01", "gpu-02", "gpu-03", "gpu-05")),
        ("gpu-07", ("gpu-07",)),
        ("gpu-01,gpu-[09-10]", ("gpu-01", "gpu-09", "gpu-10")),
        ("n[8-10]", ("n10", "n8", "n9")),
    ],
)
def test_hostlists_expand(text: str, hosts: tuple[str, ...]) -> None:
    assert values.expand_hosts(text) == hosts


@pytest.mark.parametrize("text", ["", "gpu-[08-01]", "gpu-[01-", "gpu 01", "gpu-[a-b]"])
def test_bad_hostlists_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a (hostlist|host|range)"):
        values.expand_hosts(text)


def test_time_limits_take_slurms_printed_form() -> None:
    assert values.time_limit("24:00:00") == "1-00:00:00"
    assert values.time_limit("1-00:00:00") == "1-00:00:00"
    assert values.time_limit("04:00:00") == "04:00:00"
    assert values.time_limit("unlimited") == "UNLIMITED"
    assert values.optional_time_limit("") is None
    for ambiguous in ("24:00", "90", "01:00:30", 86400):
        with pytest.raises(ValueError, match=r"not a time limit|whole minutes"):
            values.time_limit(ambiguous)


def test_counts_accept_pulumis_floats_only_when_whole() -> None:
    assert values.count(64.0) == 64
    for bad in (64.5, True, "64", -1):
        with pytest.raises(ValueError, match=r"not a whole number|outside"):
            values.count(bad)


# --- partition lines -----------------------------------------------------------------------------


def test_the_runbook_partition_renders_as_one_line() -> None:
    line = partitions.render_line(runbook_partition())
    assert line == RUNBOOK_LINE.replace("1-00:00:00", "24:00:00")
    assert partitions.parse_line(line) == runbook_partition().pairs()


def test_setting_a_partition_keeps_every_other_line_byte_for_byte() -> None:
    added = partitions.set_partition(PARTITIONS_FILE, "tenant-foo", RUNBOOK_LINE)
    assert added == PARTITIONS_FILE + RUNBOOK_LINE
    down = RUNBOOK_LINE.replace("State=UP", "State=DOWN")
    replaced = partitions.set_partition(added, "tenant-foo", down)
    assert replaced == PARTITIONS_FILE + down
    assert partitions.set_partition(replaced, "tenant-foo", None) == PARTITIONS_FILE
    assert partitions.set_partition(PARTITIONS_FILE, "absent", None) == PARTITIONS_FILE


def test_a_file_without_final_newline_gets_one_before_the_new_line() -> None:
    assert partitions.set_partition("# x", "tenant-foo", RUNBOOK_LINE) == "# x\n" + RUNBOOK_LINE


def test_continued_lines_and_comments_are_read_as_slurm_does() -> None:
    entries = partitions.parse_file(PARTITIONS_FILE)
    assert [e.name for e in entries] == [None, "tenant-bar"]
    bar = partitions.find_partition(PARTITIONS_FILE, "tenant-bar")
    assert bar is not None
    assert (bar["AllowAccounts"], bar["MaxTime"]) == ("tenant-bar", "04:00:00")
    assert partitions.find_partition(PARTITIONS_FILE, "tenant-foo") is None
    # slurm.conf keys are case-insensitive.
    assert partitions.parse_line("partitionname=x nodes=gpu-01")["Nodes"] == "gpu-01"


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"nodes": "gpu-01 gpu-02"}, "not a host"),
        ({"nodes": "gpu-[01-08]#"}, "not a host"),
        ({"state": "DRAIN"}, "not one of"),
        ({"oversubscribe": "FORCE"}, "not one of"),
        ({"default_time": "UNLIMITED"}, "not UNLIMITED"),
        ({"default_time": "2-00:00:00"}, "longer than MaxTime"),
        ({"name": "default"}, "reserved"),
        ({"max_time": "24:00"}, "not a time limit"),
    ],
)
def test_partition_lines_that_would_not_parse_back_are_refused(
    changes: dict[str, str], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        partitions.render_line(runbook_partition(**changes))


def test_show_partition_and_nodes() -> None:
    live = partitions.parse_show_partition(SHOW_PARTITION)
    assert live == Partition(
        name="tenant-foo",
        nodes="gpu-[01-08]",
        allow_accounts=("tenant-foo",),
        max_time="1-00:00:00",
        default_time="01:00:00",
        preempt_mode="OFF",
        oversubscribe="EXCLUSIVE",
        state="UP",
        default="NO",
    )
    assert partitions.parse_show_partition("Partition nope not found\n") is None
    assert partitions.parse_node_names(SHOW_NODES) == {"gpu-01", "gpu-02"}


def test_unknown_nodes_are_found_in_every_partition_of_the_file() -> None:
    text = PARTITIONS_FILE + RUNBOOK_LINE
    known = {f"gpu-{n:02d}" for n in range(1, 9)}
    assert partitions.unknown_nodes(text, known) == {"tenant-bar": ["gpu-09", "gpu-10"]}
    assert partitions.unknown_nodes(RUNBOOK_LINE, known) == {}


# --- provider logic without Slurm ----------------------------------------------------------------

QOS_INPUTS = {
    "name": "normal-foo",
    "tenant": "tenant-foo",
    "priority": 100.0,
    "grp_tres_gpus": 64.0,
    "max_wall": "24:00:00",
    "flags": ["DenyOnLimit"],
    "preempt_mode": None,
    "preempt_exempt_time": None,
}


def test_diff_compares_in_slurms_stored_form() -> None:
    [record] = sacctmgr.parse_qos(SHOW_QOS_NORMAL)
    outputs = {**QOS_INPUTS, **vars(record), "flags": list(record.flags)}
    result = SlurmQosProvider().diff("normal-foo", outputs, QOS_INPUTS)
    assert (result.changes, result.replaces) == (False, [])
    off = SlurmQosProvider().diff("normal-foo", outputs, {**QOS_INPUTS, "preempt_mode": "off"})
    assert off.changes is False


def test_diff_says_what_replaces_and_what_updates() -> None:
    outputs = {**QOS_INPUTS, "description": "gpu-tenants:tenant-foo"}
    provider = SlurmQosProvider()
    renamed = provider.diff("normal-foo", outputs, {**QOS_INPUTS, "name": "normal-bar"})
    assert (renamed.changes, renamed.replaces, renamed.delete_before_replace) == (
        True,
        ["name"],
        False,
    )
    wider = provider.diff("normal-foo", outputs, {**QOS_INPUTS, "max_wall": "48:00:00"})
    assert (wider.changes, wider.replaces) == (True, [])
    unmarked = provider.diff("normal-foo", {**outputs, "description": "by hand"}, QOS_INPUTS)
    assert unmarked.changes is True


def test_an_account_moved_to_another_parent_is_deleted_before_it_is_made_again() -> None:
    inputs = {
        "name": "ml-team-foo",
        "parent": "tenant-foo",
        "tenant": "tenant-foo",
        "description": "Tenant Foo ML Team",
        "fairshare": 200,
    }
    outputs = {**inputs, "description": "tenant foo ml team", "organization": "tenant-foo"}
    provider = SlurmAccountProvider()
    assert provider.diff("ml-team-foo", outputs, inputs).changes is False
    # Unset QoS are inherited from the parent: what Slurm shows is not a change.
    inherited = {**outputs, "qos": ["normal-foo"], "default_qos": "normal-foo"}
    assert provider.diff("ml-team-foo", inherited, inputs).changes is False
    moved = provider.diff("ml-team-foo", outputs, {**inputs, "parent": "root"})
    assert (moved.replaces, moved.delete_before_replace) == (["parent"], True)


def test_partition_nodes_compare_as_sets() -> None:
    inputs = {
        "name": "tenant-foo",
        "tenant": "tenant-foo",
        "nodes": "gpu-01,gpu-02,gpu-[03-08]",
        "allow_accounts": ["tenant-foo"],
        "max_time": "24:00:00",
        "default_time": "01:00:00",
    }
    live = partitions.parse_show_partition(SHOW_PARTITION)
    assert live is not None
    outputs = {**vars(live), "tenant": "tenant-foo", "allow_accounts": ["tenant-foo"]}
    assert SlurmPartitionProvider().diff("tenant-foo", outputs, inputs).changes is False
    down = SlurmPartitionProvider().diff("tenant-foo", outputs, {**inputs, "state": "DOWN"})
    assert (down.changes, down.replaces) == (True, [])


def test_check_lists_every_problem_and_skips_unknown_values() -> None:
    failures = (
        SlurmQosProvider()
        .check({}, {**QOS_INPUTS, "name": "Normal Foo", "priority": -1, "max_wall": "24:00"})
        .failures
    )
    assert sorted(f.property for f in failures) == ["max_wall", "name", "priority"]
    unknown = props.QOS.problems({**QOS_INPUTS, "name": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"})
    assert unknown == []
    unmarked = props.PARTITION.problems(
        {
            "name": "tenant-foo",
            "tenant": "tenant-foo",
            "nodes": "gpu-[01-08]",
            "allow_accounts": ["someone-else"],
            "max_time": "04:00:00",
            "default_time": "08:00:00",
        }
    )
    assert [key for key, _ in unmarked] == ["allow_accounts", "default_time"]


def test_account_rules_across_fields() -> None:
    inputs = {
        "name": "tenant-foo",
        "tenant": "tenant-foo",
        "description": "Tenant Foo",
        "fairshare": 300,
        "qos": ["normal-foo"],
        "default_qos": "interactive-foo",
    }
    assert [key for key, _ in props.ACCOUNT.problems(inputs)] == ["default_qos"]


# --- transports and settings ---------------------------------------------------------------------


def test_kubectl_transport_runs_in_the_controller_pod_as_the_runbooks_do() -> None:
    transport = Settings.from_environment({"SLURM_TRANSPORT": "kubectl"}).make_transport()
    assert transport.command(["sacctmgr", "-P", "-n", "show", "qos"]) == [
        "kubectl", "-n", "slurm-control", "exec", "deploy/slurmctld", "--",
        "sacctmgr", "-P", "-n", "show", "qos",
    ]  # fmt: skip


def test_settings_come_from_the_environment() -> None:
    settings = Settings.from_environment(
        {"SLURM_TRANSPORT": "kubectl", "SLURM_TIMEOUT": "3", "SLURM_CLUSTER": "staging"}
    )
    assert (settings.cluster, settings.partitions_file) == ("staging", None)
    assert settings.transport.timeout == 3.0
    assert settings.drain_poll == 5.0  # production's: one squeue a drain every 5 s
    assert Settings.from_environment({"SLURM_DRAIN_POLL_SECONDS": "1"}).drain_poll == 1.0
    assert isinstance(settings.make_transport(), KubectlExecTransport)
    with pytest.raises(SlurmError, match="SLURM_PARTITIONS_FILE is not set"):
        settings.partition_store("creating Slurm partition 'x'")
    bad_settings = (
        {"SLURM_TRANSPORT": "ssh"},
        {"SLURM_TIMEOUT": "soon"},
        {"SLURM_TIMEOUT": "0"},
        {"SLURM_PARTITIONS_CONFIGMAP": "slurm-partitions"},
        {"SLURM_PARTITIONS_SYNC_TIMEOUT": "later"},
        {"SLURM_WRITE_LEASE": "slurm-control/"},
        {"SLURM_DRAIN_POLL_SECONDS": "0"},
    )
    for bad in bad_settings:
        with pytest.raises(SlurmError, match=next(iter(bad))):
            Settings.from_environment(bad)


def test_writes_hold_a_lease_only_when_one_is_set() -> None:
    assert Settings.from_environment({}).client().write_lock is None
    settings = Settings.from_environment(
        {"SLURM_WRITE_LEASE": "slurm-control/sacctmgr-writes", "SLURM_TIMEOUT": "20"}
    )
    lock = settings.client().write_lock
    assert lock is not None
    assert (lock.namespace, lock.name) == ("slurm-control", "sacctmgr-writes")
    # Longer than any one write may take: a holder that died is taken over after it.
    assert lock.duration > settings.transport.timeout


def test_partitions_go_to_the_file_or_to_the_slurm_operators_configmap() -> None:
    file_form = Settings.from_environment({"SLURM_PARTITIONS_FILE": "/etc/slurm/partitions.conf"})
    assert file_form.partition_store("x") == FileStore(Path("/etc/slurm/partitions.conf"))
    configmap_form = Settings.from_environment(
        {
            "SLURM_TRANSPORT": "kubectl",
            "SLURM_PARTITIONS_FILE": "/etc/slurm/partitions.conf",
            "SLURM_PARTITIONS_CONFIGMAP": "slurm-control/slurm-partitions",
            "SLURM_PARTITIONS_SYNC_TIMEOUT": "90",
        }
    )
    store = configmap_form.partition_store("x")
    assert isinstance(store, ConfigMapStore)
    assert (store.namespace, store.name, store.key) == (
        "slurm-control",
        "slurm-partitions",
        "partitions.conf",
    )
    # The controller's view of the mounted key is read where slurmctld runs.
    assert (store.controller_path, store.sync_timeout) == ("/etc/slurm/partitions.conf", 90.0)
    assert store.poll_seconds == 2.0  # a kubectl exec each: a kubelet's copy takes a minute
    sandbox_form = Settings.from_environment(
        {
            "SLURM_PARTITIONS_FILE": "/etc/slurm/partitions.conf",
            "SLURM_PARTITIONS_CONFIGMAP": "slurm-control/slurm-partitions",
            "SLURM_PARTITIONS_POLL_SECONDS": "0.2",
        }
    )
    sandbox_store = sandbox_form.partition_store("x")
    assert isinstance(sandbox_store, ConfigMapStore)
    assert sandbox_store.poll_seconds == 0.2
    assert isinstance(store.controller, KubectlExecTransport)
    assert store.describe() == "ConfigMap slurm-control/slurm-partitions (key partitions.conf)"


class _Reconfiguring:
    """A transport whose slurmctld is rereading its configuration for the first `busy` calls,
    saying `said` to each."""

    def __init__(self, busy: int, said: str) -> None:
        self.busy = busy
        self.said = said
        self.calls: list[tuple[str, ...]] = []

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(tuple(argv))
        if len(self.calls) <= self.busy:
            return CommandResult(tuple(argv), 1, "", f"slurm_load_partitions error: {self.said}")
        line = (
            "PartitionName=t Nodes=gpu-01 AllowAccounts=t MaxTime=1-00:00:00 DefaultTime=01:00:00"
        )
        return CommandResult(
            tuple(argv), 0, line + " PreemptMode=OFF OverSubscribe=NO State=UP\n", ""
        )


@pytest.mark.parametrize(
    "said", ["Unexpected missing socket error", "Zero Bytes were transmitted or received"]
)
def test_a_read_that_meets_a_reconfigure_is_retried_a_few_times(
    monkeypatch: pytest.MonkeyPatch, said: str
) -> None:
    monkeypatch.setattr("providers.slurm.transport._READ_BACKOFF", 0.0)
    transport = _Reconfiguring(busy=2, said=said)
    partition = SlurmClient(transport, cluster="c").partition("t")
    assert partition is not None
    assert partition.max_time == "1-00:00:00"
    assert len(transport.calls) == 3
    # Still busy after every attempt: the error names the command's own words.
    with pytest.raises(SlurmError, match=said):
        SlurmClient(_Reconfiguring(busy=9, said=said), cluster="c").partition("t")


def test_gpu_usage_is_read_from_squeue_json_and_sshare() -> None:
    assert usage.gpus_of("cpu=2,mem=4G,node=1,billing=2,gres/gpu=2") == 2
    assert usage.gpus_of("cpu=2,gres/gpu=3,gres/gpu:h100=3") == 6
    assert usage.gpus_of("") == 0
    squeue = {
        "jobs": [
            {"job_id": 7, "account": "team-a", "user_name": "ann", "job_state": "RUNNING",
             "tres_alloc_str": "cpu=1,node=1,gres/gpu=2"},
            {"job_id": 8, "account": "team-a", "user_name": "ben", "job_state": "PENDING",
             "tres_alloc_str": ""},
        ]
    }  # fmt: skip
    assert usage.parse_running(json.dumps(squeue)) == [usage.RunningJob(7, "team-a", "ann", 2)]
    sshare = "tenant-a|||cpu=9,gres/gpu=120\n team-a|ann|gres/gpu=5000|cpu=3,gres/gpu=40\n"
    assert usage.parse_sshare(sshare) == [
        usage.GpuMinutes("tenant-a", "", 120, None),
        usage.GpuMinutes("team-a", "ann", 40, 5000),
    ]
    with pytest.raises(ValueError, match="squeue --json printed something else"):
        usage.parse_running('{"meta": {}}')


# Lines as slurmctld and slurmd 22.05 write them, two tenants' jobs on one node among them.
CLUSTER_LOG = """\
[2026-12-03T05:10:01.123] _slurm_rpc_submit_batch_job: JobId=41 InitPrio=4294901757 usec=1024
[2026-12-03T05:10:01.456] sched: Allocate JobId=41 NodeList=gpu-14 #CPUs=1 Partition=tenant-bar
[2026-12-03T05:10:01.500] launch task StepId=41.0 request from UID:2201 GID:4102 HOST:127.0.0.1
[2026-12-03T05:10:01.600] [41.batch] task/linuxproc: running
[2026-12-03T05:10:02.789] _job_complete: JobId=41 WEXITSTATUS 0
[2026-12-03T05:11:00.000] sched: Allocate JobId=42 NodeList=gpu-14 #CPUs=1 Partition=tenant-foo
[2026-12-03T05:11:00.100] _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=42 uid 0
[2026-12-03T05:11:00.200] [42.extern] done with job
[2026-12-03T05:11:00.300] sched: Allocate JobId=43_2(45) NodeList=gpu-14 Partition=tenant-bar
[2026-12-03T05:12:00.000] update_part: setting state=DOWN for partition tenant-bar
[2026-12-03T05:12:00.000] update_part: setting state=DOWN for partition tenant-foo
[2026-12-03T05:13:00.000] Node gpu-14 now responding
[2026-12-03T05:13:00.000] Node gpu-140 now responding
[2026-12-03T05:14:00.000] SchedulerParameters=default_queue_depth=100
"""


def test_a_tenants_log_archive_holds_its_own_lines_and_none_of_another_tenants_jobs() -> None:
    names = {"tenant-bar", "gpu-14"}
    kept = tenant_lines(CLUSTER_LOG.splitlines(), {"41", "43", "45"}, names, {"dave": "2201"})
    assert [line.split("] ", 1)[1] for line in kept] == [
        "_slurm_rpc_submit_batch_job: JobId=41 InitPrio=4294901757 usec=1024",
        "sched: Allocate JobId=41 NodeList=gpu-14 #CPUs=1 Partition=tenant-bar",
        "launch task StepId=41.0 request from UID:2201 GID:4102 HOST:127.0.0.1",
        "[41.batch] task/linuxproc: running",
        "_job_complete: JobId=41 WEXITSTATUS 0",
        "sched: Allocate JobId=43_2(45) NodeList=gpu-14 Partition=tenant-bar",
        "update_part: setting state=DOWN for partition tenant-bar",
        "Node gpu-14 now responding",
    ]
    assert not any("JobId=42" in line or "[42." in line for line in kept)


USERS_LOG = """\
error: slurm_receive_msg [127.0.0.1:41234]: Zero Bytes were transmitted or received
launch failed requeuing batch job
error: Security violation, REQUEST_UPDATE_PARTITION RPC from uid=2301
_job_create: invalid account or partition for user 2301, account 'tenant-bar'
error: User 2202 not in any group
sched: reserved for user=launch until 12:00
job_submit/lua: error(2301) asked for 9 GPUs
job_submit/lua: launch(2302) asked for 9 GPUs
uid 23010 did something
"""


def test_a_username_that_is_an_ordinary_word_keeps_only_the_lines_naming_that_user() -> None:
    users = {"error": "2301", "launch": "2302"}
    kept = tenant_lines(USERS_LOG.splitlines(), set(), set(), users)
    assert kept == [
        "error: Security violation, REQUEST_UPDATE_PARTITION RPC from uid=2301",
        "_job_create: invalid account or partition for user 2301, account 'tenant-bar'",
        "sched: reserved for user=launch until 12:00",
        "job_submit/lua: error(2301) asked for 9 GPUs",
        "job_submit/lua: launch(2302) asked for 9 GPUs",
    ]


class _Accounting:
    """A transport whose slurmctld holds `queued[i]` records for slurmdbd at the i-th `sdiag`,
    knows the jobs `known` (squeue's id|state|submit|nodes lines) and whose slurmdbd holds
    `held[i]` (sacct's JobID|Submit|End|NodeList lines) at the i-th `sacct`; the last of each
    stays."""

    def __init__(self, *queued: int, known: str = "", held: Sequence[str] = ("",)) -> None:
        self.queued = list(queued)
        self.known = known
        self.held = list(held)
        self.calls: list[tuple[str, ...]] = []

    def command(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(tuple(argv))
        if argv[0] == "squeue":
            return CommandResult(tuple(argv), 0, self.known, "")
        if argv[0] == "sacct":
            held = self.held.pop(0) if len(self.held) > 1 else self.held[0]
            return CommandResult(tuple(argv), 0, held, "")
        size = self.queued.pop(0) if len(self.queued) > 1 else self.queued[0]
        said = f"Agent queue size:     0\nAgent count:          0\nDBD Agent queue size: {size}\n"
        return CommandResult(tuple(argv), 0, said, "")


def test_an_export_waits_for_the_records_slurmctld_has_not_sent_to_slurmdbd() -> None:
    transport = _Accounting(3, 1, 0)
    slept: list[float] = []
    wait_for_accounting(transport, "exporting", ["tenant-bar"], sleep=slept.append)
    assert [call[0] for call in transport.calls] == ["sdiag", "sdiag", "sdiag", "squeue"]
    assert len(slept) == 2


def test_an_export_refuses_when_slurmdbd_never_takes_the_records() -> None:
    with pytest.raises(SlurmError) as refused:
        wait_for_accounting(_Accounting(5), "exporting", timeout=0.0, sleep=lambda _: None)
    said = str(refused.value)
    assert "still holds 5 records for slurmdbd" in said
    assert "nothing was archived" in said


# What slurmctld knows: a two-node job and one cancelled before it started, both ended, and the
# tasks to come of a pending array.
KNOWN = (
    "41|COMPLETED|2026-12-04T10:00:00|gpu-[14-15]\n"
    "42|CANCELLED|2026-12-04T10:01:00|\n"
    "43_[2-5]|PENDING|2026-12-04T10:01:00|\n"
)
EARLIER_42 = "42|2026-11-01T08:00:00|2026-11-01T08:05:00|gpu-15\n"  # the same id, given before
HELD_41 = "41|2026-12-04T10:00:00|2026-12-04T10:00:05|gpu-[14-15]\n"


def test_an_export_waits_until_slurmdbd_holds_each_job_slurmctld_knows_with_its_end() -> None:
    # The queue is empty throughout. slurmdbd holds 41's end before its start's two nodes (what
    # 22.05 does for a job started from the queue); then, as an earlier wait would have found
    # it, 42's earlier run only, then 42's run without its end.
    held_42 = "42|2026-12-04T10:01:00|2026-12-04T10:01:00|None assigned\n"
    held = (
        f"41|2026-12-04T10:00:00|2026-12-04T10:00:05|gpu-14\n{held_42}",
        f"{HELD_41}{EARLIER_42}",
        f"{HELD_41}42|2026-12-04T10:01:00|Unknown|None assigned\n",
        f"{HELD_41}{held_42}",
    )
    transport = _Accounting(0, known=KNOWN, held=held)
    slept: list[float] = []
    wait_for_accounting(transport, "exporting", ["tenant-bar", "ml-team"], sleep=slept.append)
    assert len(slept) == 3
    sacct = [call for call in transport.calls if call[0] == "sacct"]
    assert "--accounts=tenant-bar,ml-team" in sacct[0]
    assert "--starttime=2026-12-04T10:00:00" in sacct[0]  # from the earliest job slurmctld knows
    assert "--duplicates" in sacct[0]


def test_an_export_names_the_jobs_slurmdbd_lacks_once_its_wait_is_over() -> None:
    transport = _Accounting(0, known=KNOWN, held=(EARLIER_42,))
    with pytest.raises(SlurmError) as refused:
        wait_for_accounting(
            transport, "exporting", ["tenant-bar"], timeout=0.0, sleep=lambda _: None
        )
    said = str(refused.value)
    assert "slurmdbd still lacks 2 jobs of accounts tenant-bar that slurmctld knows" in said
    assert "41 (completed, submitted 2026-12-04T10:00:00)" in said
    assert "42 (cancelled, submitted 2026-12-04T10:01:00)" in said
    assert "--jobs=41,42 " in said
    assert "nothing was archived" in said


def test_sacct_is_not_asked_while_slurmctld_still_queues_records() -> None:
    transport = _Accounting(2, 0, known=KNOWN)
    with pytest.raises(SlurmError):
        wait_for_accounting(
            transport, "exporting", ["tenant-bar"], timeout=0.0, sleep=lambda _: None
        )
    assert [call[0] for call in transport.calls] == ["sdiag"]
