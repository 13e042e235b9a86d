"""What the first `up` of an imported tenant adopts: what `import` recorded, and nothing else."""

from __future__ import annotations

from tenant_stack.adoption import adopt_flag
from tenant_stack.spec.models import Found

FOUND = Found(
    authentik_users={"lea": 31},
    authentik_groups={"tenant-kit": "g1"},
    kubernetes=["Namespace/tenant-kit"],
    slurm=["Account/tenant-kit", "Qos/normal-kit"],
)
DYNAMIC = "pulumi-python:dynamic/"


def test_authentik_objects_are_adopted_by_the_primary_key_import_recorded() -> None:
    assert adopt_flag(f"{DYNAMIC}authentik:TenantUser", {"username": "lea"}, FOUND) == "31"
    assert adopt_flag(f"{DYNAMIC}authentik:TenantUser", {"username": "akadmin"}, FOUND) is None
    assert adopt_flag(f"{DYNAMIC}authentik:TenantGroup", {"name": "tenant-kit"}, FOUND) == "g1"
    assert adopt_flag(f"{DYNAMIC}authentik:TenantGroup", {"name": "staff"}, FOUND) is None


def test_slurm_objects_are_adopted_only_by_the_names_import_recorded() -> None:
    assert adopt_flag(f"{DYNAMIC}slurm:Account", {"name": "tenant-kit"}, FOUND) is True
    assert adopt_flag(f"{DYNAMIC}slurm:Account", {"name": "ops"}, FOUND) is None  # a staff account
    assert adopt_flag(f"{DYNAMIC}slurm:Qos", {"name": "normal-kit"}, FOUND) is True
    assert adopt_flag(f"{DYNAMIC}slurm:Partition", {"name": "tenant-kit"}, FOUND) is None
