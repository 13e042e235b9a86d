"""Stacks made by an earlier release keep working with this code. Pulumi pickles each dynamic
provider by reference (its module and class) at create and update, and `refresh` and `destroy`
unpickle it with the code checked out: a provider moved or renamed would break every existing
stack, including the resources offboarding keeps for years.

tenant-foo is brought up with the code of `BASELINE` (the last release before the providers were
put on one base and the layers split), then, with this checkout's code and its spec migrated
(`storage.delete_without_snapshot` became `lifecycle.rehearsal`): refreshed, previewed (dynamic
resources change only to record the offboarding stage, and the offboarding gate is added; the
Kubernetes objects change only as this release means them to, isolation's included), brought
up, previewed clean, and destroyed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.authentik import props as authentik_props
from providers.slurm import props as slurm_props
from sandbox.layout import SandboxLayout
from sandbox.project import ROOT, STACK_CONFIG_DIR
from tests.backends import pulumi, run_pulumi, weka

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

BASELINE = "01e975db8924ad91307c779de15d47e851addc57"
PROGRAM = ("__main__.py", "tenant_stack", "providers", "Pulumi.prod.yaml")
# What this release changes in an existing tenant's Kubernetes objects: the ownership
# annotation on each (tenant_stack/components/kubernetes_objects.py).
EXPECTED_KUBERNETES_CHANGES = {"metadata"}


def point_project_at(project: Path, code: Path) -> None:
    """Makes `project` run the program in `code` (a checkout), keeping its stacks and specs."""
    for name in PROGRAM:
        link = project / name
        if link.is_symlink():
            link.unlink()
        link.symlink_to(code / name)
    settings = yaml.safe_load((code / "Pulumi.yaml").read_text())
    settings["stackConfigDir"] = STACK_CONFIG_DIR
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))


def test_a_stack_made_by_the_previous_release_refreshes_upgrades_and_destroys(
    tmp_path: Path, pulumi_backend: dict[str, str], sandbox: SandboxLayout
) -> None:
    baseline = tmp_path / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(baseline), BASELINE],
        capture_output=True,
        check=True,
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / STACK_CONFIG_DIR).mkdir()
    (project / "venv").symlink_to(ROOT / "venv")
    # The specs as the previous release wrote them: its strict models refuse a field added since.
    shutil.copytree(baseline / "tenants", project / "tenants")
    spec = project / "tenants" / "tenant-foo.yaml"
    spec.write_text(
        spec.read_text().replace("\nstorage:\n", "\nstorage:\n  delete_without_snapshot: true\n")
    )
    # The baseline read the private CA under the sandbox's name.
    env = {**pulumi_backend, "SANDBOX_CA_FILE": str(sandbox.pki.ca_cert)}

    def foo(*args: str) -> str:
        return run_pulumi(env, project, *args, "--stack", "tenant-foo", timeout=600)

    try:
        point_project_at(project, baseline)
        foo("stack", "init")
        # The baseline did not wait for Weka's background work (issue 44): its stack is made
        # with the emulator finishing that work at once, as the baseline assumed.
        with weka_settling_at_once():
            foo("up", "--yes", "--skip-preview")

        point_project_at(project, ROOT)
        spec.write_text(
            spec.read_text()
            .replace("  delete_without_snapshot: true\n", "")
            .replace("\nlifecycle:\n", "\nlifecycle:\n  rehearsal: true\n")
        )
        foo("refresh", "--yes", "--skip-preview")
        plan = json.loads(foo("preview", "--json"))
        changes = [
            s
            for s in plan["steps"]
            if s["op"] != "same" and not _is_offboarding(s) and not _is_login_access(s)
        ]
        dynamic = [s["urn"] for s in changes if "pulumi-python:dynamic" in s["urn"]]
        assert dynamic == [], f"dynamic resources the new code would change: {dynamic}"
        for step in changes:
            if step["op"] == "update" and _type(step).startswith("kubernetes:"):
                assert set(step.get("diffReasons") or []) <= EXPECTED_KUBERNETES_CHANGES, step
            else:
                assert _is_dropped_read(step) or _is_provider_config(step) or _is_isolation(step), (
                    step
                )
        foo("up", "--yes", "--skip-preview")
        foo("preview", "--expect-no-changes")
        foo("destroy", "--yes", "--skip-preview")
    finally:
        pulumi(
            env, project, "destroy", "--yes", "--skip-preview", "--stack", "tenant-foo", timeout=600
        )
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
            capture_output=True,
            check=False,
        )


def _type(step: dict[str, Any]) -> str:
    return str((step.get("newState") or step.get("oldState") or {}).get("type", ""))


def _is_dropped_read(step: dict[str, Any]) -> bool:
    """The baseline read the LDAP bind Secret as a resource; this release reads it directly."""
    return step["op"] in ("delete", "discard", "read-discard") and step["urn"].endswith(
        "tenant-foo-ldap-bind-source"
    )


# The tenant-level objects that record the offboarding stage, by type.
GATED = {
    "pulumi-python:dynamic/slurm:Qos": slurm_props.QOS,
    "pulumi-python:dynamic/slurm:Account": slurm_props.ACCOUNT,
    "pulumi-python:dynamic/slurm:Partition": slurm_props.PARTITION,
    "pulumi-python:dynamic/authentik:TenantGroup": authentik_props.GROUP,
}


def _is_offboarding(step: dict[str, Any]) -> bool:
    """What this release changes for offboarding: the stage recorded on tenant-level objects
    (and the partition now allows the teams' sub-accounts, which Slurm needs for their users'
    jobs, and a QoS whose jobs are never preempted is exempt for its wall limit), the gate with
    its component, and the (empty) component of what offboarding keeps."""
    if step["op"] == "update" and _type(step) in GATED:
        # A dynamic provider's diff names no properties to the engine: ask its schema, in the
        # backend's stored form, as the provider's own diff does.
        old = (step.get("oldState") or {}).get("outputs") or {}
        new = (step.get("newState") or {}).get("inputs") or {}
        changed = set(GATED[_type(step)].differences(old, new)[0])
        return "lifecycle" in changed and changed <= {
            "lifecycle",
            "allow_accounts",
            "preempt_exempt_time",
        }
    added = (
        "gpu-tenants:offboarding:",
        "gpu-tenants:retention:",
        "pulumi-python:dynamic/offboarding:",
    )
    return step["op"] == "create" and _type(step).startswith(added)


def _is_login_access(step: dict[str, Any]) -> bool:
    """The wait for the login pods to serve SSH, which `up` did not do before, and the policy
    that lets users' SSH in from outside the cluster, which the runbook's policies left out."""
    if step["op"] != "create":
        return False
    if _type(step) == "pulumi-python:dynamic/kubernetes:LoginPodsReady":
        return True
    return str(step["urn"]).endswith("::tenant-foo-login-ssh")


# What this release adds for isolation: the admins' own Role (their RoleBinding, whose roleRef
# cannot change in place, is made again under a name of its own to name it), the tenant's
# admission policy and its binding. (The StorageClass, whose parameters cannot change, keeps the
# Secret names it has; the program warns how to make it again.)
ISOLATION_ADDED = {
    "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
}
ISOLATION_REPLACED = {
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {"roleRef", "metadata"},
}


def _is_isolation(step: dict[str, Any]) -> bool:
    if step["op"] == "create":
        return _type(step) in ISOLATION_ADDED
    if step["op"] in ("replace", "create-replacement", "delete-replaced"):
        replaced = ISOLATION_REPLACED.get(_type(step))
        reasons = {str(r).split(".")[0].split("[")[0] for r in step.get("replaceReasons") or []}
        return replaced is not None and reasons <= replaced
    return False


def _is_provider_config(step: dict[str, Any]) -> bool:
    """The Kubernetes provider's own config (enableSecretMutable) changed."""
    return step["op"] == "update" and _type(step) == "pulumi:providers:kubernetes"


@contextmanager
def weka_settling_at_once() -> Iterator[None]:
    with weka() as api:
        old = api.put("/_emulator/settle", json={"seconds": 0}).json()["data"]["seconds"]
        try:
            yield
        finally:
            api.put("/_emulator/settle", json={"seconds": old}).raise_for_status()
