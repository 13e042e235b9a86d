"""The tenant spec: the examples load, derived values, and every bad input is reported at its
field path with a message that says what is wrong."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tenant_stack.errors import Problem, SpecError
from tenant_stack.platform import Platform, load_platform
from tenant_stack.spec import (
    Duration,
    hostlist,
    load_spec,
    parse_cpu,
    parse_duration,
    parse_size,
    parse_ssh_key,
)
from tenant_stack.strict_yaml import parse_yaml
from tests.conftest import ROOT

TENANTS = ROOT / "tenants"
DELETE = object()


@pytest.fixture(scope="module")
def platform() -> Platform:
    return load_platform(ROOT / "Pulumi.prod.yaml")


def _foo() -> dict[str, Any]:
    data = parse_yaml((TENANTS / "tenant-foo.yaml").read_text())
    assert isinstance(data, dict)
    return data


FOO = _foo()


def _edit(data: Any, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        data = data[int(part)] if isinstance(data, list) else data[part]
    if isinstance(data, list):
        data[int(last)] = value
    elif value is DELETE:
        del data[last]
    else:
        data[last] = value


def _problems(
    tmp_path: Path, platform: Platform, edits: dict[str, Any], stack: str = "tenant-foo"
) -> list[Problem]:
    data = copy.deepcopy(FOO)
    for dotted, value in edits.items():
        _edit(data, dotted, value)
    (tmp_path / f"{stack}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path, stack, platform)
    return list(caught.value.problems)


# --- SSH keys built from their wire format, so each can be damaged in one precise way ---


def _wire(*parts: bytes) -> str:
    return base64.b64encode(b"".join(len(p).to_bytes(4, "big") + p for p in parts)).decode()


def _rsa(bits: int) -> str:
    modulus = ((1 << (bits - 1)) | 1).to_bytes(bits // 8 + 1, "big")
    return "ssh-rsa " + _wire(b"ssh-rsa", (65537).to_bytes(3, "big"), modulus) + " x@host"


ED25519 = _wire(b"ssh-ed25519", bytes(range(32)))
P256 = _wire(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" + bytes(64))
ALICE_KEY = FOO["users"][0]["ssh_keys"][0]
SIGNED = {
    "by": "Ops Lead",
    "date": "2027-01-05",
    "ticket": "OPS-1234",
    "confirmation": {"kind": "customer", "by": "Lee Chen"},
}


def test_both_examples_load(platform: Platform) -> None:
    foo = load_spec(TENANTS, "tenant-foo", platform)
    bar = load_spec(TENANTS, "tenant-bar", platform)
    assert [u.username for u in foo.users] == ["alice", "bob", "carol"]
    assert [u.uid for u in foo.users] == [2147, 2148, 2149]
    assert foo.identity.gid == 4099
    assert bar.storage.isolation == "directory"
    assert bar.nodelist == "gpu-[09-12]"
    assert bar.contract.wall_limit.slurm() == "UNLIMITED"
    assert bar.user_account(bar.users[0]) == "tenant-bar"


def test_derived_values_of_tenant_foo(platform: Platform) -> None:
    foo = load_spec(TENANTS, "tenant-foo", platform)
    assert foo.gpu_minutes_per_user == 240000
    assert foo.nodelist == "gpu-[01-08]"
    assert (foo.qos_normal, foo.qos_interactive) == ("normal-foo", "interactive-foo")
    assert foo.account == foo.partition == foo.namespace == "tenant-foo"
    assert foo.reservation_name == "tenant-foo-reservation"
    assert foo.admins_group == "tenant-foo-admins"
    assert foo.user_account(foo.users[1]) == "ml-team-foo"
    assert foo.contract.wall_limit.slurm() == "1-00:00:00"
    assert foo.contract.interactive_wall_limit.slurm() == "04:00:00"
    assert foo.storage.home_per_user.hard == 100 * 10**9
    assert foo.storage.scratch.soft == 45 * 10**12
    assert foo.storage.pvcs[0].size == 10 * 2**40
    assert foo.kubernetes.quota.requests_cpu == 1_024_000
    assert foo.kubernetes.container_defaults.limit.memory == 16 * 2**30


BAD_INPUTS: list[tuple[str, dict[str, Any], str, str]] = [
    # (case, edits, location, phrase) --- fields on their own
    ("slug-format", {"slug": "Tenant_Foo"}, "slug", "is not a slug"),
    ("slug-reserved", {"slug": "prod"}, "slug", "reserved"),
    ("unknown-field", {"contract.gpu_count": 64}, "contract.gpu_count", "unknown field"),
    ("missing-field", {"identity.gid": DELETE}, "identity.gid", "required field is missing"),
    ("quoted-number", {"contract.gpus": "64"}, "contract.gpus", "valid integer, got '64'"),
    ("string-bool", {"lifecycle.legal_hold": "no"}, "lifecycle.legal_hold", "valid boolean"),
    (
        "partition-type",
        {"contract.partition_type": "dedicated"},
        "contract.partition_type",
        "'reserved', 'on-demand' or 'spot'",
    ),
    ("date", {"contract.term.start": "next monday"}, "contract.term.start", "valid date"),
    ("wall-mm-ss", {"contract.wall_limit": "24:00"}, "contract.wall_limit", "ambiguous"),
    ("wall-bare-number", {"contract.wall_limit": 24}, "contract.wall_limit", "bare number"),
    ("wall-seconds", {"contract.wall_limit": "90s"}, "contract.wall_limit", "whole minutes"),
    ("wall-words", {"contract.wall_limit": "a day"}, "contract.wall_limit", "not a duration"),
    (
        "evict",
        {"reservation.evict_on_release": True},
        "reservation.evict_on_release",
        "must be false",
    ),
    ("display-pipe", {"display_name": "Foo|Bar"}, "display_name", "sacctmgr would misread"),
    ("display-dash", {"display_name": "-Foo"}, "display_name", "reads as an option"),
    ("display-newline", {"display_name": "Foo\nBar"}, "display_name", "on one line"),
    (
        "team-quote",
        {"slurm.teams.0.description": 'ML "team"'},
        "slurm.teams.0.description",
        "sacctmgr would misread",
    ),
    (
        "team-comma",
        {"slurm.teams.0.description": "ML, team"},
        "slurm.teams.0.description",
        "sacctmgr would misread",
    ),
    (
        "team-name",
        {"slurm.teams.0.name": "ML=team"},
        "slurm.teams.0.name",
        "not a Slurm account name",
    ),
    ("username", {"users.0.username": "Alice"}, "users.0.username", "not a username"),
    ("username-system", {"users.0.username": "root"}, "users.0.username", "system account"),
    # The login image's own accounts, which its nsswitch finds before LDAP's.
    ("username-sshd", {"users.0.username": "sshd"}, "users.0.username", "system account"),
    ("username-nslcd", {"users.0.username": "nslcd"}, "users.0.username", "system account"),
    ("username-games", {"users.0.username": "games"}, "users.0.username", "system account"),
    ("email", {"users.0.email": "alice-at-example"}, "users.0.email", "not an email"),
    ("uid-too-big", {"users.0.uid": 2**31}, "users.0.uid", "less than or equal to 2147483647"),
    ("name-colon", {"users.0.name": "Alice: R"}, "users.0.name", "passwd"),
    ("no-keys", {"users.0.ssh_keys": []}, "users.0.ssh_keys", "at least 1 item"),
    ("key-dsa", {"users.0.ssh_keys.0": "ssh-dss AAAAB3NzaC1kc3M= x"}, "users.0.ssh_keys.0", "DSA"),
    (
        "key-type",
        {"users.0.ssh_keys.0": f"ssh-foo {ED25519}"},
        "users.0.ssh_keys.0",
        "unknown key type",
    ),
    (
        "key-base64",
        {"users.0.ssh_keys.0": "ssh-ed25519 AAAA!!!!"},
        "users.0.ssh_keys.0",
        "not base64",
    ),
    (
        "key-mismatch",
        {"users.0.ssh_keys.0": f"ssh-rsa {ED25519}"},
        "users.0.ssh_keys.0",
        "the line says ssh-rsa but the key data is a 'ssh-ed25519' key",
    ),
    (
        "key-rsa-short",
        {"users.0.ssh_keys.0": _rsa(1024)},
        "users.0.ssh_keys.0",
        "1024 bits; at least 2048",
    ),
    (
        "key-ed25519-short",
        {"users.0.ssh_keys.0": "ssh-ed25519 " + _wire(b"ssh-ed25519", bytes(31))},
        "users.0.ssh_keys.0",
        "32 bytes",
    ),
    (
        "key-truncated",
        {"users.0.ssh_keys.0": "ssh-ed25519 " + ED25519[:-8]},
        "users.0.ssh_keys.0",
        "truncated",
    ),
    (
        "key-trailing",
        {"users.0.ssh_keys.0": "ssh-ed25519 " + _wire(b"ssh-ed25519", bytes(32), b"x")},
        "users.0.ssh_keys.0",
        "bytes after the key",
    ),
    (
        "key-curve",
        {
            "users.0.ssh_keys.0": "ecdsa-sha2-nistp256 "
            + _wire(b"ecdsa-sha2-nistp256", b"nistp384", bytes(97))
        },
        "users.0.ssh_keys.0",
        "curve other than nistp256",
    ),
    (
        "key-options",
        {"users.0.ssh_keys.0": f'from="10.0.0.1" ssh-ed25519 {ED25519}'},
        "users.0.ssh_keys.0",
        "options",
    ),
    (
        "key-bare-type",
        {"users.0.ssh_keys.0": "ssh-ed25519"},
        "users.0.ssh_keys.0",
        "expected one line",
    ),
    (
        "size-bare-number",
        {"storage.home_per_user.hard": 100},
        "storage.home_per_user.hard",
        "with its unit",
    ),
    ("size-unit", {"storage.scratch.hard": "50 tera"}, "storage.scratch.hard", "not a size"),
    (
        "size-fraction",
        {"storage.scratch.soft": "1.5B"},
        "storage.scratch.soft",
        "whole number of bytes",
    ),
    ("isolation", {"storage.isolation": "shared"}, "storage.isolation", "'org' or 'directory'"),
    (
        "cpu",
        {"kubernetes.container_defaults.limit.cpu": "four"},
        "kubernetes.container_defaults.limit.cpu",
        "not a CPU quantity",
    ),
    ("network", {"network.isolation": "vlan"}, "network.isolation", "'networkpolicy' or 'pkey'"),
    ("pkey-default", {"network.pkey": 0x7FFF}, "network.pkey", "less than or equal to 32766"),
    ("hostname", {"login.hostname": "Login_Foo"}, "login.hostname", "DNS name"),
    ("replicas", {"login.replicas": 0}, "login.replicas", "greater than or equal to 1"),
    ("stage", {"lifecycle.stage": "deleted"}, "lifecycle.stage", "'snapshotted' or 'destroy'"),
    (
        "drain-unbounded",
        {"lifecycle.drain_timeout": "UNLIMITED"},
        "lifecycle.drain_timeout",
        "must be bounded",
    ),
    (
        "retention",
        {"lifecycle.retention_days": 0},
        "lifecycle.retention_days",
        "greater than or equal to 1",
    ),
    (
        "ticket",
        {
            "lifecycle.stage": "destroy",
            "lifecycle.sign_off": {**SIGNED, "ticket": "ticket 5"},
        },
        "lifecycle.sign_off.ticket",
        "change ticket",
    ),
    (
        "unconfirmed",
        {
            "lifecycle.stage": "destroy",
            "lifecycle.sign_off": {k: v for k, v in SIGNED.items() if k != "confirmation"},
        },
        "lifecycle.sign_off.confirmation",
        "required field is missing",
    ),
    (
        "self-escalated",
        {
            "lifecycle.stage": "destroy",
            "lifecycle.sign_off": {
                **SIGNED,
                "confirmation": {"kind": "escalation", "by": "ops lead"},
            },
        },
        "lifecycle.sign_off.confirmation.by",
        "a second person's, not Ops Lead's own",
    ),
    (
        "confirmed-how",
        {
            "lifecycle.stage": "destroy",
            "lifecycle.sign_off": {**SIGNED, "confirmation": {"kind": "email", "by": "Lee Chen"}},
        },
        "lifecycle.sign_off.confirmation.kind",
        "'customer' or 'escalation'",
    ),
    (
        "qos-flag",
        {"slurm.qos.normal.flags": ["NoSuchFlag"]},
        "slurm.qos.normal.flags.0",
        "'NoSuchFlag' is not a Slurm 22.05 QoS flag; use one of DenyOnLimit,",
    ),
    (
        "qos-flag-twice",
        {"slurm.qos.normal.flags": ["DenyOnLimit", "DenyOnLimit"]},
        "slurm.qos.normal.flags",
        "more than once",
    ),
    # --- rules across fields and against the platform
    ("slug-not-stack", {"slug": "tenant-bar"}, "slug", "is not the stack name 'tenant-foo'"),
    (
        "gpus-vs-nodes",
        {"contract.gpus": 56},
        "contract.gpus",
        "8 nodes x 8 GPUs per h100-8x node = 64",
    ),
    ("sku-unknown", {"contract.gpu_sku": "b200-8x"}, "contract.gpu_sku", "SKU catalogue"),
    (
        "sku-vs-pool",
        {"contract.gpu_sku": "a100-8x"},
        "reservation.hardware_pool",
        "holds h100-8x nodes but contract.gpu_sku is a100-8x",
    ),
    (
        "pool-unknown",
        {"reservation.hardware_pool": "gpu-b200-rack-z"},
        "reservation.hardware_pool",
        "not a node pool",
    ),
    (
        "node-not-in-pool",
        {"reservation.nodes.7": "gpu-99"},
        "reservation.nodes.7",
        "not a node of pool gpu-h100-rack-a",
    ),
    (
        "node-twice",
        {"reservation.nodes.7": "gpu-01"},
        "reservation.nodes.7",
        "listed twice (reservation.nodes.0)",
    ),
    (
        "on-demand-nodes",
        {"contract.partition_type": "on-demand"},
        "reservation.nodes",
        "reserves no nodes",
    ),
    ("reserved-no-nodes", {"reservation.nodes": []}, "reservation.nodes", "needs the named nodes"),
    (
        "over-inventory",
        {"contract.partition_type": "spot", "reservation.nodes": [], "contract.gpus": 200},
        "contract.gpus",
        "the fleet has 144",
    ),
    (
        "budget-split",
        {"contract.gpu_minutes": 720001},
        "contract.gpu_minutes",
        "720001 GPU-minutes do not split evenly between 3 users",
    ),
    (
        "interactive-wall",
        {"contract.interactive_wall_limit": "2d"},
        "contract.interactive_wall_limit",
        "2d is longer than wall_limit 1d",
    ),
    (
        "term",
        {"contract.term.end": "2025-12-31"},
        "contract.term.end",
        "is not after term.start 2026-01-05",
    ),
    (
        "uid-twice",
        {"users.1.uid": 2147},
        "users.1.uid",
        "2147 is already alice's uid (users.0.uid)",
    ),
    (
        "username-twice",
        {"users.1.username": "alice"},
        "users.1.username",
        "already users.0.username",
    ),
    (
        "email-twice",
        {"users.2.email": "ALICE@tenant-foo.example"},
        "users.2.email",
        "already alice's email (users.0.email)",
    ),
    ("uid-low", {"users.0.uid": 1999}, "users.0.uid", "below the platform's uid_start_number 2000"),
    ("gid-low", {"identity.gid": 3999}, "identity.gid", "below the platform's gid_start_number"),
    ("admin-unknown", {"identity.admins": ["dave"]}, "identity.admins.0", "not a user"),
    ("admins-gid-missing", {"identity.admins_gid": None}, "identity.admins_gid", "required when"),
    ("admins-gid-is-gid", {"identity.admins_gid": 4099}, "identity.admins_gid", "already identity"),
    ("team-unknown", {"users.0.team": "ml-team-bar"}, "users.0.team", "not a team in slurm.teams"),
    ("team-suffix", {"slurm.teams.0.name": "ml-team"}, "slurm.teams.0.name", "ends in '-foo'"),
    (
        "max-jobs",
        {"slurm.max_jobs_per_user": 500},
        "slurm.max_jobs_per_user",
        "more than the tenant's grp_jobs 200",
    ),
    (
        "qos-gpus",
        {"slurm.qos.interactive.gpus": 128},
        "slurm.qos.interactive.gpus",
        "more than the contract's 64 GPUs",
    ),
    (
        "qos-priority",
        {"slurm.qos.normal.priority": 2**31 - 1},
        "slurm.qos.normal.priority",
        "above the platform's cap 1000",
    ),
    (
        "qos-over-shared-partition",
        {"contract.partition_type": "on-demand", "slurm.qos.normal.flags": ["OverPartQOS"]},
        "slurm.qos.normal.flags",
        "OverPartQOS lets this QoS override the limits of the shared pool's partition",
    ),
    (
        "qos-time-over-shared-partition",
        {"contract.partition_type": "spot", "slurm.qos.interactive.flags": ["PartitionTimeLimit"]},
        "slurm.qos.interactive.flags",
        "PartitionTimeLimit lets this QoS override",
    ),
    (
        "spot-qos-unpreemptible",
        {"contract.partition_type": "spot", "slurm.qos.interactive.preempt_mode": "off"},
        "slurm.qos.interactive.preempt_mode",
        "unpreemptible",
    ),
    (
        "never-preempted-without-a-wall-limit",
        {"contract.interactive_wall_limit": "UNLIMITED"},
        "slurm.qos.interactive.preempt_mode",
        "PreemptExemptTime, which cannot be unlimited",
    ),
    (
        "spot-partition-unpreemptible",
        {"contract.partition_type": "spot", "slurm.partition.preempt_mode": "off"},
        "slurm.partition.preempt_mode",
        "unpreemptible",
    ),
    (
        "default-time",
        {"slurm.partition.default_time": "48h"},
        "slurm.partition.default_time",
        "longer than contract.wall_limit",
    ),
    (
        "soft-above-hard",
        {"storage.scratch.soft": "60TB"},
        "storage.scratch.soft",
        "above the hard limit 50TB",
    ),
    (
        "home-capacity",
        {"storage.home_capacity": "200GB"},
        "storage.home_capacity",
        "cannot hold 3 users",
    ),
    (
        "pvcs-vs-scratch",
        {"storage.pvcs.0.size": "60TB"},
        "storage.pvcs",
        "more than the scratch hard limit",
    ),
    (
        "quota-memory",
        {"kubernetes.quota.requests_memory": "12Ti"},
        "kubernetes.quota.requests_memory",
        "above limits_memory",
    ),
    (
        "default-request",
        {"kubernetes.container_defaults.request.cpu": 8},
        "kubernetes.container_defaults.request.cpu",
        "above limit.cpu",
    ),
    ("pkey-missing", {"network.isolation": "pkey"}, "network.pkey", "needs the partition key"),
    ("pkey-unused", {"network.pkey": 0x0102}, "network.pkey", "only with isolation pkey"),
    (
        "login-domain",
        {"login.hostname": "login.tenant-foo.other.example"},
        "login.hostname",
        "under the platform's domain example.internal",
    ),
    ("destroy-unsigned", {"lifecycle.stage": "destroy"}, "lifecycle.sign_off", "needs a sign-off"),
    (
        "abandoned-offboarding",
        {"lifecycle.stage": "frozen", "lifecycle.abandoned": True},
        "lifecycle.abandoned",
        "rolls back an onboarding, at stage active",
    ),
    (
        "no-contact",
        {"lifecycle.stage": "frozen", "contract.contact": DELETE},
        "contract.contact",
        "stage frozen sends the customer the offboarding notice",
    ),
    (
        "contact-email",
        {"contract.contact.email": "lee at tenant-foo"},
        "contract.contact.email",
        "email",
    ),
    (
        "stale-sign-off",
        {"lifecycle.sign_off": SIGNED},
        "lifecycle.sign_off",
        "authorises stage destroy only",
    ),
    (
        "hard-drain",
        {"lifecycle.drain_mode": "hard"},
        "lifecycle.drain_timeout",
        "outside 1m..1h for a hard drain",
    ),
    (
        "key-shared",
        {"users.1.ssh_keys.0": ALICE_KEY},
        "users.1.ssh_keys.0",
        "is already users.0.ssh_keys.0",
    ),
]


@pytest.mark.parametrize(
    ("edits", "location", "phrase"),
    [pytest.param(edits, where, phrase, id=case) for case, edits, where, phrase in BAD_INPUTS],
)
def test_a_bad_input_is_reported_at_its_field(
    tmp_path: Path, platform: Platform, edits: dict[str, Any], location: str, phrase: str
) -> None:
    problems = _problems(tmp_path, platform, edits)
    at_location = [p.message for p in problems if p.location == location]
    assert at_location, f"nothing reported at {location}; got {problems}"
    assert any(phrase in message for message in at_location), at_location


def test_every_case_is_distinct() -> None:
    assert len({case for case, *_ in BAD_INPUTS}) == len(BAD_INPUTS) >= 30


def test_pkey_isolation_needs_the_platforms_infiniband_network(
    tmp_path: Path, platform: Platform
) -> None:
    """A partition key declared on a platform that gives pods no InfiniBand network would
    isolate nothing: refused, naming the platform's key."""
    without = platform.model_copy(update={"infiniband": None})
    problems = _problems(tmp_path, without, {"network.isolation": "pkey", "network.pkey": 0x0104})
    assert [(p.location, p.message) for p in problems] == [
        (
            "network.isolation",
            "pkey needs the platform's InfiniBand network for pods (Pulumi.prod.yaml "
            "infiniband), which this platform does not declare: use networkpolicy",
        )
    ]


def test_cross_field_problems_are_reported_together(tmp_path: Path, platform: Platform) -> None:
    problems = _problems(
        tmp_path,
        platform,
        {
            "contract.gpus": 56,
            "users.1.uid": 2147,
            "storage.scratch.soft": "60TB",
            "lifecycle.stage": "destroy",
        },
    )
    assert [p.location for p in problems] == [
        "contract.gpus",
        "users.1.uid",
        "slurm.qos.normal.gpus",  # 64 is now more than the contract's 56
        "storage.scratch.soft",
        "lifecycle.sign_off",
    ]


def test_field_errors_are_reported_together_and_before_rules(
    tmp_path: Path, platform: Platform
) -> None:
    problems = _problems(
        tmp_path,
        platform,
        {
            "slug": "tenant-bar",
            "users.0.email": "nope",
            "users.2.ssh_keys.0": "ssh-ed25519 AAAA",
            "storage.scratch.hard": "lots",
            "contract.gpus": 56,  # a rule across fields: waits until the fields are valid
        },
    )
    assert [p.location for p in problems] == [
        "slug",
        "users.0.email",
        "users.2.ssh_keys.0",
        "storage.scratch.hard",
    ]


def test_the_message_lists_each_problem_with_file_and_path(
    tmp_path: Path, platform: Platform
) -> None:
    data = copy.deepcopy(FOO)
    _edit(data, "users.1.uid", 2147)
    path = tmp_path / "tenant-foo.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path, "tenant-foo", platform)
    assert str(caught.value).splitlines() == [
        f"tenant spec {path} has 1 problem:",
        f"{path}: users.1.uid: 2147 is already alice's uid (users.0.uid); pin an unused uid",
    ]


def test_a_slug_other_than_the_stack_name_stops_before_the_rules(
    tmp_path: Path, platform: Platform
) -> None:
    problems = _problems(tmp_path, platform, {"slug": "tenant-bar"})
    assert [p.location for p in problems] == ["slug"]
    assert "'tenant-bar' is not the stack name 'tenant-foo'" in problems[0].message


def test_a_missing_spec_names_the_file_it_looked_for(tmp_path: Path, platform: Platform) -> None:
    (tmp_path / "tenant-foo.yaml").write_text("slug: tenant-foo\n")
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path, "tenant-baz", platform)
    message = str(caught.value)
    assert f"looked for {tmp_path / 'tenant-baz.yaml'}" in message
    assert "specs that exist: tenant-foo.yaml" in message


def test_a_missing_tenants_directory_is_named(tmp_path: Path, platform: Platform) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "tenants", "tenant-foo", platform)


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("slug: tenant-foo\nusers: [\n", "line 3, column 1: not valid YAML"),
        ("slug: tenant-foo\nslug: tenant-foo\n", "line 2, column 1: not valid YAML"),
        ("", "the file is empty"),
        ("- slug: tenant-foo\n", "found a list"),
    ],
)
def test_unreadable_files(tmp_path: Path, platform: Platform, text: str, phrase: str) -> None:
    (tmp_path / "tenant-foo.yaml").write_text(text)
    with pytest.raises(SpecError, match=phrase):
        load_spec(tmp_path, "tenant-foo", platform)


@pytest.mark.parametrize(
    ("replace", "by", "expected"),
    [
        (
            "end: 2028-01-04",
            "end: 2027-02-29",
            "contract.term.end: '2027-02-29' (line 11) is not a valid date: "
            "day is out of range for month",
        ),
        ("end: 2028-01-04", "end: 2027-13-01", "contract.term.end: '2027-13-01' (line 11) is not"),
        ("uid: 2147", "uid: !!int twenty", "users.0.uid: 'twenty' (line "),
    ],
)
def test_values_yaml_cannot_build_are_named_at_their_field(
    tmp_path: Path, platform: Platform, replace: str, by: str, expected: str
) -> None:
    text = (TENANTS / "tenant-foo.yaml").read_text()
    assert replace in text
    (tmp_path / "tenant-foo.yaml").write_text(text.replace(replace, by, 1))
    with pytest.raises(SpecError) as raised:
        load_spec(tmp_path, "tenant-foo", platform)
    assert f"{tmp_path / 'tenant-foo.yaml'}: {expected}" in str(raised.value)
    assert "Traceback" not in str(raised.value)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ([f"gpu-{i:02d}" for i in range(1, 9)], "gpu-[01-08]"),
        (["gpu-05"], "gpu-05"),
        (["gpu-03", "gpu-01", "gpu-02", "gpu-05"], "gpu-[01-03,05]"),
        (["gpu-09", "gpu-10", "gpu-11", "gpu-12"], "gpu-[09-12]"),
        (["gpu-02", "cpu-1", "gpu-01"], "cpu-1,gpu-[01-02]"),
        (["login", "gpu-9", "gpu-10"], "login,gpu-9,gpu-10"),
        ([], ""),
    ],
)
def test_hostlist(nodes: list[str], expected: str) -> None:
    assert hostlist(nodes) == expected


@pytest.mark.parametrize(
    ("text", "seconds", "slurm"),
    [
        ("24h", 86400, "1-00:00:00"),
        ("4h", 14400, "04:00:00"),
        ("1-00:00:00", 86400, "1-00:00:00"),
        ("24:00:00", 86400, "1-00:00:00"),
        ("2-12", 216000, "2-12:00:00"),
        ("1d12h30m", 131400, "1-12:30:00"),
        ("UNLIMITED", None, "UNLIMITED"),
    ],
)
def test_durations(text: str, seconds: int | None, slurm: str) -> None:
    duration = parse_duration(text)
    assert duration == Duration(seconds)
    assert duration.slurm() == slurm
    assert parse_duration(str(duration)) == duration


def test_unlimited_is_longer_than_any_limit() -> None:
    assert parse_duration("9999d") < parse_duration("UNLIMITED")
    assert parse_duration("4h") <= parse_duration("240m")


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("100GB", 100 * 10**9),
        ("50TB", 50 * 10**12),
        ("10Ti", 10 * 2**40),
        ("16GiB", 16 * 2**30),
        ("1.5TB", 15 * 10**11),
        ("100G", 100 * 10**9),
        ("512 B", 512),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(("value", "millicores"), [(4, 4000), ("1.5", 1500), ("500m", 500)])
def test_cpu(value: object, millicores: int) -> None:
    assert parse_cpu(value) == millicores


@pytest.mark.parametrize(
    "line",
    [
        f"ssh-ed25519 {ED25519} alice@laptop",
        f"ecdsa-sha2-nistp256 {P256}",
        _rsa(2048),
        "sk-ssh-ed25519@openssh.com "
        + _wire(b"sk-ssh-ed25519@openssh.com", bytes(32), b"ssh:")
        + " yubikey",
        "sk-ecdsa-sha2-nistp256@openssh.com "
        + _wire(b"sk-ecdsa-sha2-nistp256@openssh.com", b"nistp256", b"\x04" + bytes(64), b"ssh:"),
        ALICE_KEY,
    ],
)
def test_good_ssh_keys_parse(line: str) -> None:
    key = parse_ssh_key(line)
    assert line.startswith(key.key_type)
    assert key.fingerprint().startswith("SHA256:")


@pytest.mark.parametrize(
    ("slug", "phrase"),
    [
        ("auth", "the namespace of Authentik and the LDAP bind Secret"),
        ("slurm-control", "Slurm's namespace"),
        ("reservation-operator", "the reservation operator's namespace"),
        ("tenants", "the Authentik group every tenant's group is under"),
        ("production", "the Slurm cluster"),
        ("cluster-home", "the shared home filesystem"),
        ("retention", "Weka's object store bucket"),
        ("weka-s2o", "the retention store's prefix of every tenant's uploaded snapshots"),
    ],
)
def test_a_slug_that_is_a_platform_name_is_refused_at_slug(
    tmp_path: Path, platform: Platform, slug: str, phrase: str
) -> None:
    problems = _problems(tmp_path, platform, {"slug": slug}, stack=slug)
    at_slug = [p.message for p in problems if p.location == "slug"]
    assert any(phrase in message and f"{slug!r}" in message for message in at_slug), problems


@pytest.mark.parametrize(
    ("slug", "phrase"),
    [
        ("kube-system", "Kubernetes keeps the namespaces 'kube-*'"),
        ("kube-public", "Kubernetes keeps the namespaces 'kube-*'"),
        ("default", "Kubernetes' default namespace"),
        ("root", "Slurm's root account"),
        # Groups of the login pods' image, which their nsswitch finds before LDAP's.
        ("staff", "a group of the login pods' system"),
        ("users", "a group of the login pods' system"),
        ("slurm", "a group of the login pods' system"),
    ],
)
def test_a_system_name_is_refused_as_a_slug(
    tmp_path: Path, platform: Platform, slug: str, phrase: str
) -> None:
    problems = _problems(tmp_path, platform, {"slug": slug}, stack=slug)
    assert [p.location for p in problems] == ["slug"]
    assert phrase in problems[0].message


def test_a_team_named_as_the_platforms_slurm_cluster_is_refused(
    tmp_path: Path, platform: Platform
) -> None:
    problems = _problems(
        tmp_path, platform, {"slurm.teams.0.name": "production", "users.0.team": "production"}
    )
    messages = [p.message for p in problems if p.location == "slurm.teams.0.name"]
    assert any("'production', which is the Slurm cluster" in m for m in messages), problems
