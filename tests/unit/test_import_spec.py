"""`import`'s pure parts, on a tenant as its backends would return it: the runbook's validation
(contradictions refused in its words), the spec inferred with a note per value, and the spec file
with its review comments."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import yaml

from providers.authentik.client import Group, Member, User
from providers.slurm.partitions import Partition
from providers.slurm.sacctmgr import AccountRecord, Association, QosRecord
from providers.weka.mount import DirectoryStat
from providers.weka.records import Quota
from tenant_stack.importing.consistency import contradictions
from tenant_stack.importing.first_up import first_up_changes
from tenant_stack.importing.inferred_spec import Contract, infer_spec
from tenant_stack.importing.live_tenant import (
    LiveIdentity,
    LiveKubernetes,
    LiveSlurm,
    LiveStorage,
    LiveTenant,
    UserHome,
)
from tenant_stack.importing.spec_file import render
from tenant_stack.platform import load_platform
from tenant_stack.spec.models import Found, TenantSpec
from tenant_stack.spec.rules import check_spec

ROOT = Path(__file__).resolve().parents[2]
SLUG = "tenant-kit"
GB = 1000**3
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1vXq8wJ3cFh2kLp9sQe7rTn4yUo6bDz0aVi5xWc1N lea"


def _association(account: str, user: str = "", parent: str = "") -> Association:
    return Association(
        "production", account, user, parent, "parent" if user else "10",
        None if user else 8, None if user else 20, None, 4 if user else None,
        5000 if user else None, ("interactive-kit", "normal-kit"), "normal-kit",
    )  # fmt: skip


def _qos(name: str, wall: str, exempt: str | None = None) -> QosRecord:
    return QosRecord(name, name, 100, 8, wall, ("DenyOnLimit",), "cluster", exempt)


HARD = {
    "requests.nvidia.com/gpu": "8",
    "requests.cpu": "64",
    "requests.memory": "512Gi",
    "limits.memory": "1Ti",
    "persistentvolumeclaims": "5",
    "requests.storage": "1Ti",
}
CONTAINER = {
    "type": "Container",
    "default": {"cpu": "2", "memory": "8Gi"},
    "defaultRequest": {"cpu": "1", "memory": "2Gi"},
}
HOSTNAME = {"external-dns.alpha.kubernetes.io/hostname": f"login.{SLUG}.example.internal"}


def _quota(path: str, hard: int, soft: int) -> Quota:
    return Quota("1", hard * GB, soft * GB, "ACTIVE", path=path)


def _partition(nodes: str) -> Partition:
    return Partition(SLUG, nodes, (SLUG,), "1-00:00:00", "01:00:00", "OFF", "EXCLUSIVE", "UP")


def _tenant() -> LiveTenant:
    """A tenant of one user on one node, built by hand: nothing pinned, no marks."""
    pool = {"matchLabels": {"hardware-pool": "gpu-h100-rack-a"}}
    reservation = {"spec": {"tenant": SLUG, "nodeSelector": pool, "reservedNodes": ["gpu-05"]}}
    kubernetes = LiveKubernetes(
        namespace={"metadata": {"name": SLUG}},
        reservation=reservation,
        quota={"spec": {"hard": HARD}},
        limit_range={"spec": {"limits": [CONTAINER]}},
        release={"spec": {"values": {"replicas": 1, "service": {"annotations": HOSTNAME}}}},
        authorized_keys=None,
        network_policies=[f"{SLUG}-deny-all"],
        claims=[],
        csi_objects=[],
        holders={"gpu-05": {SLUG}},
        objects=[f"Namespace/{SLUG}", f"NetworkPolicy/{SLUG}-deny-all"],
    )
    account = AccountRecord(SLUG, SLUG, "tenant kit", (_association(SLUG, parent="root"),))
    normal = _qos("normal-kit", "1-00:00:00")
    interactive = _qos("interactive-kit", "04:00:00", exempt="04:00:00")
    lea = _association(SLUG, "lea")
    slurm = LiveSlurm("production", account, [], [lea], normal, interactive, _partition("gpu-05"))
    group = Group("g1", 7, SLUG, (), None, {}, (Member(31, "lea", True),))
    attributes = {"ssh_keys": KEY}
    user = User(31, "u1", "lea", "Lea Kit", f"lea@{SLUG}.example", True, attributes, (), None)
    identity = LiveIdentity(group, None, [user], 2000, 4000)
    home = UserHome(DirectoryStat(2031, 4007, "0700"), _quota(f"/{SLUG}/lea", 100, 90))
    home_quota, scratch_quota = _quota(f"/{SLUG}", 500, 0), _quota(f"/{SLUG}", 2000, 1800)
    storage = LiveStorage(
        "directory", None, None, None, None, home_quota, scratch_quota, {"lea": home}, False
    )
    return LiveTenant(SLUG, kubernetes, slurm, identity, storage)


CONTRACT = Contract(date(2026, 1, 1), date(2026, 12, 31))


def test_a_consistent_hand_built_tenant_becomes_a_valid_spec_with_its_numbers_pinned() -> None:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    live = _tenant()
    assert contradictions(live) == []
    inferred = infer_spec(live, platform, CONTRACT, date(2026, 12, 2))
    assert inferred.missing == []
    text = render(inferred.document, inferred.notes, ["header"])
    spec = TenantSpec.model_validate(yaml.safe_load(text))
    assert check_spec(spec, platform) == []
    # The outpost's numbers today: uid_start + pk, gid_start + the group's number.
    assert (spec.users[0].uid, spec.identity.gid) == (2031, 4007)
    assert spec.contract.gpu_minutes == 5000
    # PreemptMode is the cluster's on both; only the exemption for the wall limit is `off`.
    assert (spec.slurm.qos.normal.preempt_mode, spec.slurm.qos.interactive.preempt_mode) == (
        None,
        "off",
    )
    assert spec.imported is not None
    assert spec.imported.adopt
    # What adoption may take over: what import read, the directory's objects by primary key.
    assert spec.imported.found == Found(
        authentik_users={"lea": 31},
        authentik_groups={SLUG: "g1"},
        kubernetes=[f"Namespace/{SLUG}", f"NetworkPolicy/{SLUG}-deny-all"],
        slurm=[f"Account/{SLUG}", f"Partition/{SLUG}", "Qos/interactive-kit", "Qos/normal-kit"],
    )
    notes = {n.location: n.kind for n in inferred.notes}
    assert (notes["users.0.uid"], notes["contract.term"], notes["slurm.fairshare"]) == (
        "inferred",
        "todo",
        "found",
    )
    # Each comment sits right above the value it is about.
    lines = text.splitlines()
    term = lines.index("  term:")
    assert lines[term - 1].startswith("  # TODO: given to import (--term)")
    assert "    uid: 2031" in lines
    changes = "\n".join(first_up_changes(live))
    assert "Slurm QoS 'normal-kit': Description 'normal-kit' becomes 'gpu-tenants:tenant-kit'" in (
        changes
    )
    assert "made: the CSI driver's Weka user 'tenant-kit-csi'" in changes


def test_the_contact_given_to_import_is_written_with_its_todo() -> None:
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    contract = replace(CONTRACT, contact=("Lee Chen", f"lee.chen@{SLUG}.example"))
    inferred = infer_spec(_tenant(), platform, contract, date(2026, 12, 2))
    text = render(inferred.document, inferred.notes, ["header"])
    spec = TenantSpec.model_validate(yaml.safe_load(text))
    assert spec.contract.contact is not None
    assert spec.contract.contact.email == f"lee.chen@{SLUG}.example"
    lines = text.splitlines()
    assert lines[lines.index("  contact:") - 1].startswith("  # TODO: given to import (--contact)")
    # Not given, there is none: no backend holds it.
    assert (
        "contact"
        not in infer_spec(_tenant(), platform, CONTRACT, date(2026, 12, 2)).document["contract"]
    )


def test_contradictions_are_refused_in_the_runbooks_words() -> None:
    live = _tenant()
    slurm = replace(live.slurm, partition=_partition("gpu-[05-06]"))
    home = UserHome(DirectoryStat(2099, 4007, "0700"), live.storage.homes["lea"].quota)
    storage = replace(live.storage, homes={"lea": home})
    held = replace(
        live.kubernetes,
        holders={"gpu-05": {SLUG, "tenant-other"}},
        quota={"spec": {"hard": {**HARD, "requests.nvidia.com/gpu": "16"}}},
    )
    found = contradictions(replace(live, slurm=slurm, storage=storage, kubernetes=held))
    said = [f"{p.location}: {p.message}" for p in found]
    assert said[0].startswith(
        "reservation.nodes: Reservation matches partition matches contract: the node lists do "
        "not match: Slurm partition 'tenant-kit' has gpu-[05-06]"
    )
    assert said[1].startswith("reservation.nodes: node gpu-05 is held by two tenants")
    assert said[2] == (
        "contract.gpus: Reservation matches partition matches contract: the namespace's "
        "ResourceQuota allows 16 GPUs, the Slurm account's GrpTRES gres/gpu=8; make them the "
        "contract's number, then import again"
    )
    assert said[3].startswith(
        "users: User identity consistent everywhere: lea's uid is 2031 in Authentik (as the LDAP "
        "outpost hands it out) but 2099 on their home directory"
    )
    assert len(said) == 4
