"""`gpu-tenants new` without a cluster: the users file (CSV and YAML) read with its lines, each
bad input refused at its option or line with nothing written, the nodes and numbers chosen, a
comment on every value chosen, and the spec it writes passing the loader and the fleet's rules.
What is live (nodes, Authentik, stacks) is given as the command would read it."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import typing
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from providers.authentik.client import Group, User
from providers.weka.records import Capacity
from tenant_stack.authoring import new_tenant as authoring
from tenant_stack.authoring.new_tenant import Live, NewTenantReport, Terms, new_tenant
from tenant_stack.authoring.users_file import read_users
from tenant_stack.commands import main
from tenant_stack.live import NodeState
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec
from tenant_stack.spec.fleet import find_collisions, load_fleet
from tests.conftest import ROOT
from tests.unit.test_preflight import node_json

PLATFORM = load_platform(ROOT / "Pulumi.prod.yaml")
SLUG = "tenant-new"
KEY_A = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFs5mWq3Sxh0y8DmOJxJq1z0nE7ZcWRxgr5lYv1Q4mJb ann@laptop"
)
KEY_B = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHh8S7rYQ1dvx3wJk1m3JfVb8yTqv2oWc8mFkhZy0pQd ben@laptop"
)


def _wire(*parts: bytes) -> str:
    return base64.b64encode(b"".join(len(p).to_bytes(4, "big") + p for p in parts)).decode()


def key(comment: str) -> str:
    """A well-formed ed25519 public key of its own for `comment`."""
    return (
        f"ssh-ed25519 {_wire(b'ssh-ed25519', hashlib.sha256(comment.encode()).digest())} {comment}"
    )


# RSA of 1024 bits: it parses, and is too short.
KEY_RSA_SHORT = f"ssh-rsa {_wire(b'ssh-rsa', bytes([1, 0, 1]), bytes([0]) + bytes([255]) * 128)}"
CSV = f"""username,name,email,ssh_keys,team
ann,Ann New,ann@new.example,"{KEY_A}",ml-new
ben,Ben New,ben@new.example,"{KEY_B}",
"""
NO_TEAMS = CSV.replace(",ml-new", ",")
TERMS = Terms(
    slug=SLUG,
    gpu_sku="h100-8x",
    gpus=16,
    partition_type="reserved",
    term=(date(2026, 1, 1), date(2026, 12, 31)),
    wall_limit="24h",
    home="1TB",
    scratch="10TB",
    storage_isolation="directory",
    admins=("ann",),
)


def node(name: str, **changes: object) -> NodeState:
    fields: dict[str, typing.Any] = {
        "name": name,
        "ready": True,
        "cordoned": False,
        "instance_type": "h100-8x",
        "pool": "gpu-h100-rack-a",
        "reserved_by": None,
        "reservation": None,
    }
    fields.update(changes)
    return NodeState(**fields)


def cluster() -> list[NodeState]:
    """The sandbox's nodes: 16 Ready, gpu-17 NotReady, gpu-18 cordoned, both tainted so."""
    nodes = [node(f"gpu-{i:02d}") for i in range(1, 17)]
    nodes.append(node("gpu-17", ready=False, taints=("node.kubernetes.io/not-ready:NoSchedule",)))
    nodes.append(
        node("gpu-18", cordoned=True, taints=("node.kubernetes.io/unschedulable:NoSchedule",))
    )
    return nodes


def live(**changes: object) -> Live:
    fields: dict[str, typing.Any] = {
        "nodes": cluster(),
        "namespace_exists": False,
        "stacks": [],
        "directory_users": [],
        "directory_groups": [],
        "storage": Capacity(total=2 * 10**15, hot_spare=0, unprovisioned=2 * 10**15),
        "organizations": set(),
    }
    fields.update(changes)
    return Live(**fields)


def authentik_user(pk: int, username: str, **attributes: object) -> User:
    return User(pk, f"u{pk}", username, username.title(), f"{username}@staff.example", True,
                dict(attributes), (), None)  # fmt: skip


@pytest.fixture
def tenants(tmp_path: Path) -> Path:
    directory = tmp_path / "tenants"
    shutil.copytree(ROOT / "tenants", directory)
    return directory


def users_file(tmp_path: Path, text: str = CSV, name: str = "users.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def draft(
    tenants: Path, users: Path, terms: Terms = TERMS, now: Live | None = None
) -> NewTenantReport:
    return new_tenant(
        terms, users, tenants, PLATFORM, lambda slug: now or live(), today=date(2026, 12, 4)
    )


def listing(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir()}


# --- the users file ------------------------------------------------------------------------------


def test_a_csv_users_file_gives_each_user_with_its_line_and_keys(tmp_path: Path) -> None:
    text = (
        "username,name,email,ssh_keys,team\n"
        f'ann,Ann New,ann@new.example,"{KEY_A}\n{KEY_B}",ml-new\n'
        "\n"
        f"ben,Ben New,ben@new.example,{KEY_RSA_SHORT.replace('ssh-rsa', 'ssh-ed25519')},\n"
        f"cat,Cat New,cat@new.example,{KEY_B.replace('ben', 'cat')},ml-new\n"
    )
    read = read_users(users_file(tmp_path, text))
    assert [(u.username, u.line) for u in read.users] == [("ann", 2), ("cat", 6)]
    assert read.users[0].ssh_keys == (KEY_A, KEY_B)
    assert read.users[0].team == "ml-new"
    # ann's keys span lines 2 and 3, line 4 is blank: ben is on line 5.
    assert [p.location for p in read.refusals] == [f"{tmp_path / 'users.csv'}:5"]
    assert "ssh_keys 1: the line says ssh-ed25519 but the key data" in read.refusals[0].message


def test_a_spreadsheets_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_bytes(CSV.encode("utf-8-sig"))
    read = read_users(path)
    assert (read.refusals, [u.username for u in read.users]) == ([], ["ann", "ben"])


def test_a_yaml_users_file_takes_a_list_or_a_specs_users_block(tmp_path: Path) -> None:
    listed = f"""- username: ann
  name: Ann New
  email: ann@new.example
  ssh_keys: [{KEY_A}]
  team: ml-new
- username: ben
  name: Ben New
  email: ben@new.example
  ssh_keys: {KEY_B}
"""
    read = read_users(users_file(tmp_path, listed, "users.yaml"))
    assert read.refusals == []
    assert [(u.username, u.line, u.team, u.ssh_keys) for u in read.users] == [
        ("ann", 1, "ml-new", (KEY_A,)),
        ("ben", 6, None, (KEY_B,)),
    ]
    block = "users:\n" + "".join(f"  {line}\n" for line in listed.splitlines())
    again = read_users(users_file(tmp_path, block, "users.yml"))
    assert [(u.username, u.line) for u in again.users] == [("ann", 2), ("ben", 7)]
    assert again.users[1].line_of("email") == 9


@pytest.mark.parametrize(
    ("name", "text", "line", "said"),
    [
        ("u.csv", "username,name,email\nann,Ann,a@b.example\n", 1, "missing column ssh_keys"),
        ("u.csv", f"user,name,email,ssh_keys\nann,Ann,a@b.example,{KEY_A}\n", 1, "unknown column"),
        ("u.csv", f"username,name,email,ssh_keys\nann,Ann,a@b.example,{KEY_A},x\n", 2, "5 cells"),
        ("u.csv", "username,name,email,ssh_keys\nann,Ann,a@b.example,\n", 2, "ssh_keys: none"),
        ("u.csv", f"username,name,email,ssh_keys\nAnn,Ann,a@b.example,{KEY_A}\n", 2, "username"),
        ("u.csv", f"username,name,email,ssh_keys\nann,A:n,a@b.example,{KEY_A}\n", 2, "name:"),
        ("u.yaml", "- username: ann\n  name: [unclosed\n", 3, "not valid YAML"),
        ("u.yaml", "- username: ann\n  username: bob\n", 2, "not valid YAML"),
        ("u.yaml", f"- username: ann\n  name: A\n  mail: a@b.example\n  ssh_keys: {KEY_A}\n", 3,
         "unknown field 'mail'"),
        ("u.yaml", "username: ann\n", 1, "expected a list of users"),
        ("u.yaml", "- username: ann\n  name: Ann\n  ssh_keys: []\n", 1, "email: missing"),
        ("u.txt", "ann\n", None, "name the file .csv, .yaml or .yml"),
    ],
)  # fmt: skip
def test_a_malformed_users_file_is_refused_at_its_line(
    tmp_path: Path, tenants: Path, name: str, text: str, line: int | None, said: str
) -> None:
    path = users_file(tmp_path, text, name)
    before = listing(tenants)
    report = draft(tenants, path)
    assert not report.written
    where = str(path) if line is None else f"{path}:{line}"
    assert any(p.location == where and said in p.message for p in report.refusals), report.refusals
    assert listing(tenants) == before


# --- refusals at an option or a line, nothing written ---------------------------------------


TERMS_AS: dict[str, tuple[dict[str, typing.Any], str, str]] = {
    "unknown SKU": (dict(gpu_sku="b200-8x"), "--gpu-sku", "not in the platform's SKU catalogue"),
    "part nodes": (dict(gpus=12), "--gpus", "12 GPUs are not whole h100-8x nodes"),
    "reserved slug": (dict(slug="prod"), "SLUG", "'prod' is reserved"),
    "kube slug": (dict(slug="kube-lab"), "SLUG", "Kubernetes keeps the namespaces"),
    "not a slug": (dict(slug="Tenant_New"), "SLUG", "is not a slug"),
    "platform name": (dict(slug="auth"), "SLUG", "the namespace of Authentik"),
    "short name": (dict(slug="foo"), "SLUG", "short name 'foo' would be both tenants'"),
    "taken spec": (dict(slug="tenant-bar"), "SLUG", "is a tenant already"),
    "unknown pool": (dict(hardware_pool="rack-z"), "--hardware-pool", "'rack-z' is not a pool"),
    "admin": (dict(admins=("zoe",)), "--admin", "'zoe' is not a user of the users file"),
    "budget": (dict(gpu_minutes=1001), "--gpu-minutes", "does not split evenly between 2 users"),
    "wall": (dict(wall_limit="24:00"), "--wall-limit", "is ambiguous"),
    "interactive": (
        dict(interactive_wall_limit="2d"), "--interactive-wall-limit", "longer than wall_limit"
    ),
    "home": (dict(home="150GB"), "--home", "cannot hold 2 users x 100GB"),
    "size": (dict(scratch="lots"), "--scratch", "is not a size"),
    "term": (dict(term=(date(2026, 5, 1), date(2026, 4, 1))), "--term", "ends (2026-04-01)"),
    "partition type": (dict(partition_type="burst"), "--partition-type", "Input should be"),
    "contact's email": (dict(contact=("Lee Chen", "lee@")), "--contact", "lee@"),
}  # fmt: skip


@pytest.mark.parametrize("case", TERMS_AS, ids=list(TERMS_AS))
def test_bad_terms_are_refused_at_their_option(tmp_path: Path, tenants: Path, case: str) -> None:
    changes, option, said = TERMS_AS[case]
    before = listing(tenants)
    users = users_file(tmp_path, NO_TEAMS)
    report = draft(tenants, users, replace(TERMS, **changes))
    assert not report.written
    assert any(p.location == option and said in p.message for p in report.refusals), report.refusals
    assert listing(tenants) == before


USERS_AS = {
    "a user twice": (CSV + f"ann,Ann Again,ann2@new.example,{KEY_A}x,\n", 4, "already on line 2"),
    "a key that does not parse": (CSV.replace(KEY_B, KEY_B[:60]), 3, "ssh_keys 1:"),
    "a short RSA key": (CSV.replace(KEY_B, KEY_RSA_SHORT), 3, "at least 2048 are required"),
    "a key twice": (CSV.replace(KEY_B, KEY_A), 3, "is already users.0.ssh_keys.0"),
    "an email twice": (CSV.replace("ben@new", "ann@new"), 3, "is already ann's email"),
    "a team of another name": (CSV.replace("ml-new", "research"), 2, "ends in '-new'"),
    "another tenant's user": (CSV.replace("ben,", "alice,"), 3, "username alice is claimed"),
}  # fmt: skip


@pytest.mark.parametrize("case", USERS_AS, ids=list(USERS_AS))
def test_bad_users_are_refused_at_their_line(tmp_path: Path, tenants: Path, case: str) -> None:
    text, line, said = USERS_AS[case]
    path = users_file(tmp_path, text)
    before = listing(tenants)
    report = draft(tenants, path)
    assert not report.written
    assert any(p.location == f"{path}:{line}" and said in p.message for p in report.refusals), (
        report.refusals
    )
    assert listing(tenants) == before


@pytest.mark.parametrize(
    ("now", "said"),
    [
        (
            live(namespace_exists=True),
            f"namespace {SLUG} exists in the cluster; choose another slug",
        ),
        (
            live(stacks=["tenant-foo", SLUG]),
            f"stack {SLUG} exists in the project; choose another slug",
        ),
    ],
)
def test_a_slug_taken_live_is_refused(tmp_path: Path, tenants: Path, now: Live, said: str) -> None:
    report = draft(tenants, users_file(tmp_path), now=now)
    assert [(p.location, p.message) for p in report.refusals] == [("SLUG", said)]
    assert not (tenants / f"{SLUG}.yaml").exists()


def test_a_user_authentik_holds_for_someone_else_is_refused_at_its_line(
    tmp_path: Path, tenants: Path
) -> None:
    path = users_file(tmp_path)
    report = draft(tenants, path, now=live(directory_users=[authentik_user(7, "ben")]))
    assert [p.location for p in report.refusals] == [f"{path}:3"]
    assert "Authentik user 'ben' already exists" in report.refusals[0].message


def test_too_few_free_nodes_are_refused_naming_those_free(tmp_path: Path, tenants: Path) -> None:
    nodes = cluster()
    nodes[12] = node("gpu-13", reserved_by="tenant-hand", taints=("reserved.tenant:NoSchedule",))
    nodes[13] = node("gpu-14", taints=("maintenance=rma:NoExecute",))
    # gpu-01..12 are tenant-foo's and tenant-bar's specs', 13 reserved, 14 tainted, 17 and 18 unfit.
    many = draft(tenants, users_file(tmp_path), replace(TERMS, gpus=24),
                 now=live(nodes=nodes))  # fmt: skip
    assert [(p.location, p.message) for p in many.refusals] == [
        (
            "--gpus",
            "24 GPUs need 3 h100-8x nodes of pool gpu-h100-rack-a, and 2 are free: "
            "gpu-[15-16] (Ready, schedulable, untainted, in no Reservation and named by no "
            "other spec)",
        )
    ]
    assert not (tenants / f"{SLUG}.yaml").exists()


# --- what it chooses -----------------------------------------------------------------------------


def test_nodes_are_the_first_free_of_the_pool_and_named_by_no_spec(
    tmp_path: Path, tenants: Path
) -> None:
    nodes = cluster()
    nodes[12] = node("gpu-13", reserved_by="tenant-hand", taints=("reserved.tenant:NoSchedule",))
    report = draft(tenants, users_file(tmp_path), now=live(nodes=nodes))
    assert report.written, report.refusals
    assert report.chosen("reservation.nodes") == ["gpu-14", "gpu-15"]


def test_numbers_are_above_every_specs_and_authentiks(tmp_path: Path, tenants: Path) -> None:
    # A spec that does not load still pins its numbers and nodes.
    (tenants / "tenant-broken.yaml").write_text(
        "slug: tenant-broken\nidentity: {gid: 4300, admins_gid: 4301}\n"
        "users: [{uid: 2400}, {name: no uid}]\nreservation: {nodes: [gpu-14]}\n"
    )
    staff = authentik_user(3, "staff")  # unpinned: the outpost hands it 2000 + 3
    pinned = authentik_user(9, "robot", uidNumber="2405")
    groups = [
        Group("g1", 5, "tenants", (), None, {}, None),  # 4000 + 5
        Group("g2", 6, "platform", (), None, {"gidNumber": "2406"}, None),
    ]
    now = live(directory_users=[staff, pinned], directory_groups=groups)
    report = draft(tenants, users_file(tmp_path), now=now)
    assert report.written, report.refusals
    uids = [report.chosen("users.0.uid"), report.chosen("users.1.uid")]
    gids = [report.chosen("identity.gid"), report.chosen("identity.admins_gid")]
    # Above 2405 (Authentik's highest uid), skipping 2406 (a group's gid); gids above 4301.
    assert (uids, gids) == ([2407, 2408], [4302, 4303])
    assert report.chosen("reservation.nodes") == ["gpu-13", "gpu-15"]
    specs, _ = load_fleet(tenants, PLATFORM)
    pinned_by_specs = {u.uid for s in specs.values() for u in s.users}
    assert min(uids) > max(pinned_by_specs - set(uids))


def test_budgets_and_qos_caps_follow_the_contract(tmp_path: Path, tenants: Path) -> None:
    report = draft(tenants, users_file(tmp_path))
    spec = load_spec(tenants, SLUG, PLATFORM)
    assert report.written
    assert spec.contract.gpu_minutes == 16 * 365 * 24 * 60
    assert spec.gpu_minutes_per_user == 16 * 365 * 24 * 60 // 2
    assert (spec.slurm.qos.normal.gpus, spec.slurm.qos.interactive.gpus) == (16, 8)
    assert str(spec.contract.interactive_wall_limit) == "4h"
    assert spec.login.hostname == f"login.{SLUG}.example.internal"
    assert spec.lifecycle.retention_days == PLATFORM.retention.copies_days
    assert (spec.storage.home_per_user.soft, spec.storage.scratch.soft) == (90 * 10**9, 9 * 10**12)


def test_an_on_demand_tenant_with_a_stated_budget_reserves_no_node(
    tmp_path: Path, tenants: Path
) -> None:
    three = "username,name,email,ssh_keys\n" + "".join(
        f"{name},{name.title()} Od,{name}@od.example,{key(name)}\n"
        for name in ("dan", "eve", "fay")
    )
    on_demand = replace(
        TERMS, slug="tenant-od", partition_type="on-demand", gpus=4, admins=(), gpu_minutes=30000,
        wall_limit="30m",
    )  # fmt: skip
    report = draft(tenants, users_file(tmp_path, three), on_demand)
    assert report.written, report.refusals
    spec = load_spec(tenants, "tenant-od", PLATFORM)
    assert (spec.reservation.nodes, spec.gpu_minutes_per_user) == ([], 10000)
    assert spec.identity.admins_gid is None
    assert spec.slurm.qos.interactive.gpus == 4  # one node's 8, but the contract has 4
    # The partition's default time and the interactive limit are at most the wall limit.
    assert str(spec.slurm.partition.default_time) == str(spec.contract.interactive_wall_limit)
    assert str(spec.contract.interactive_wall_limit) == "30m"


def test_every_chosen_value_has_its_comment_above_it(tmp_path: Path, tenants: Path) -> None:
    report = draft(tenants, users_file(tmp_path))
    assert report.written, report.refusals
    text = (tenants / f"{SLUG}.yaml").read_text()
    lines = text.splitlines()
    chosen = {c.location for c in report.choices}
    assert {"users.0.uid", "users.1.uid", "identity.gid", "identity.admins_gid",
            "reservation.nodes", "contract.gpu_minutes", "slurm.qos.normal.gpus",
            "slurm.qos.interactive.gpus", "login.hostname", "display_name"} <= chosen  # fmt: skip
    for choice in report.choices:
        key = choice.location.rsplit(".", 1)[-1]
        first_words = f"# {choice.why}"[:40]
        above = [
            next(line for line in lines[i:] if not line.strip().startswith("#"))
            for i, line in enumerate(lines)
            if line.strip().startswith(first_words)
        ]
        assert any(line.strip().removeprefix("- ").startswith(f"{key}:") for line in above), choice
    # What the contract gave carries no comment: the header says so.
    assert "A value without a comment is the contract's, as given" in text
    given = lines.index("  gpus: 16")
    assert not lines[given - 1].strip().startswith("#")


def test_the_spec_written_loads_and_passes_the_fleets_rules(tmp_path: Path, tenants: Path) -> None:
    report = draft(tenants, users_file(tmp_path))
    assert report.written, report.refusals
    spec = load_spec(tenants, SLUG, PLATFORM)
    assert spec.reservation.nodes == ["gpu-13", "gpu-14"]
    assert [u.team for u in spec.users] == ["ml-new", None]
    specs, broken = load_fleet(tenants, PLATFORM)
    assert broken == {}
    assert find_collisions(specs, PLATFORM) == []
    assert not [p for p in tenants.iterdir() if p.name.startswith(".")]  # no temporary left


def test_the_contact_given_is_the_contracts_with_no_comment(tmp_path: Path, tenants: Path) -> None:
    contact = ("Lee Chen", "lee.chen@new.example")
    report = draft(tenants, users_file(tmp_path), replace(TERMS, contact=contact))
    assert report.written, report.refusals
    spec = load_spec(tenants, SLUG, PLATFORM)
    assert spec.contract.contact is not None
    assert (spec.contract.contact.name, spec.contract.contact.email) == (
        "Lee Chen",
        "lee.chen@new.example",
    )
    assert "contract.contact" not in [choice.location for choice in report.choices]


def test_a_spec_that_appears_meanwhile_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / f"{SLUG}.yaml"
    path.write_text("someone else's\n")
    report = NewTenantReport(SLUG, path)
    authoring._write_new(path, "ours\n", report)
    assert not report.written
    assert path.read_text() == "someone else's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{SLUG}.yaml"]


# --- the command ---------------------------------------------------------------------------------


def command(tenants: Path, users: Path, *extra: str) -> list[str]:
    return [
        "new", SLUG, "--users", str(users), "--gpu-sku", "h100-8x", "--gpus", "16",
        "--partition-type", "reserved", "--term", "2026-01-01:2026-12-31", "--wall-limit", "24h",
        "--home", "1TB", "--scratch", "10TB", "--storage-isolation", "directory",
        "--tenants", str(tenants), *extra,
    ]  # fmt: skip


def test_the_command_exits_0_written_1_refused_2_could_not_run(
    tmp_path: Path,
    tenants: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(authoring, "read_live", lambda slug, project: live())
    users = users_file(tmp_path)
    assert main(command(tenants, users, "--gpu-sku", "b200-8x")) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{SLUG}: refused, nothing written:\n  --gpu-sku: 'b200-8x' is not")
    assert main(command(tenants, tmp_path / "missing.csv")) == 2
    assert "--users" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main(command(tenants, users, "--term", "2026-01-01"))
    assert bad.value.code == 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as bad:
        main(command(tenants, users, "--contact", "lee.chen@new.example"))
    assert bad.value.code == 2
    assert "argument --contact: 'lee.chen@new.example' is not NAME <EMAIL>" in (
        capsys.readouterr().err
    )
    contact = "Lee Chen <lee.chen@new.example>"
    assert main(command(tenants, users, "--json", "--contact", contact)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"]
    assert "contact:\n    name: Lee Chen\n    email: lee.chen@new.example\n" in (
        (tenants / f"{SLUG}.yaml").read_text()
    )
    assert {c["field"] for c in report["chosen"]} >= {"reservation.nodes", "users.0.uid"}
    assert main(command(tenants, users)) == 1
    assert "is a tenant already" in capsys.readouterr().out


def test_a_nodes_taints_are_read_as_kubectl_shows_them() -> None:
    cordoned = node_json("gpu-18", unschedulable=True)
    cordoned["spec"]["taints"].append({"key": "maintenance", "value": "rma", "effect": "NoExecute"})
    assert NodeState.from_api(cordoned).taints == (
        "node.kubernetes.io/unschedulable:NoSchedule",
        "maintenance=rma:NoExecute",
    )
    assert NodeState.from_api(node_json("gpu-01")).taints == ()
