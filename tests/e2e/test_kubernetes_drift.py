"""Drift in the Kubernetes layer, made as operators make it (kubectl, each command with its own
field manager), on every kind of object the tenant stack makes: both drift commands name it, and
`pulumi up --refresh` takes every field back. A claim grown outside the stack, which `up` could
only bring back by replacing it, is refused instead, and keeps its data."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import file_backend, kubectl_json, pulumi, run_pulumi

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

NS = "tenant-foo"
INTRUDER_KEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMP intruder"
)


def kubectl(*args: str, stdin: str | None = None) -> None:
    subprocess.run(
        ["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=60, check=True
    )


def merge_patch(kind: str, name: str, patch: dict[str, Any], namespace: str | None = NS) -> None:
    where = ["-n", namespace] if namespace else []
    kubectl(*where, "patch", kind, name, "--type=merge", "-p", json.dumps(patch))


def decoded(secret: str, key: str) -> str:
    data = kubectl_json("-n", NS, "get", "secret", secret)["data"]
    return base64.b64decode(data[key]).decode()


@dataclass(frozen=True)
class Drift:
    """One change made behind the stack's back: the resource it drifts (type and name as the
    engine prints them), how kubectl makes it, and the live value that must come back."""

    type: str
    resource: str
    make: Callable[[], None]
    read: Callable[[], Any]


DRIFTS = [
    Drift(
        "kubernetes:core/v1:Namespace",
        "tenant-foo-namespace",
        lambda: kubectl(
            "label", "namespace", NS, "pod-security.kubernetes.io/enforce=privileged", "--overwrite"
        ),
        lambda: kubectl_json("get", "namespace", NS)["metadata"]["labels"][
            "pod-security.kubernetes.io/enforce"
        ],
    ),
    Drift(
        "kubernetes:core/v1:ResourceQuota",
        "tenant-foo-quota",
        lambda: merge_patch(
            "resourcequota",
            "tenant-foo-quota",
            {"spec": {"hard": {"requests.nvidia.com/gpu": "128"}}},
        ),
        lambda: kubectl_json("-n", NS, "get", "resourcequota", "tenant-foo-quota")["spec"]["hard"][
            "requests.nvidia.com/gpu"
        ],
    ),
    Drift(
        "kubernetes:core/v1:LimitRange",
        "tenant-foo-defaults",
        lambda: kubectl(
            "-n",
            NS,
            "patch",
            "limitrange",
            "tenant-foo-defaults",
            "--type=json",
            "-p",
            '[{"op": "replace", "path": "/spec/limits/0/default/cpu", "value": "64"}]',
        ),
        lambda: kubectl_json("-n", NS, "get", "limitrange", "tenant-foo-defaults")["spec"][
            "limits"
        ][0]["default"]["cpu"],
    ),
    Drift(
        "kubernetes:scheduling.example.io/v1alpha1:ReservationBinding",
        "tenant-foo-binding",
        lambda: merge_patch(
            "reservationbinding", "tenant-foo-binding", {"spec": {"injectToleration": False}}
        ),
        lambda: kubectl_json("-n", NS, "get", "reservationbinding", "tenant-foo-binding")["spec"][
            "injectToleration"
        ],
    ),
    Drift(
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        "tenant-foo-deny-all",
        lambda: merge_patch(
            "networkpolicy", "tenant-foo-deny-all", {"spec": {"policyTypes": ["Ingress"]}}
        ),
        lambda: kubectl_json("-n", NS, "get", "networkpolicy", "tenant-foo-deny-all")["spec"][
            "policyTypes"
        ],
    ),
    Drift(
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        "tenant-foo-allow",
        # A server-side apply by another manager that takes over the egress rules.
        lambda: kubectl(
            "apply",
            "--server-side",
            "--field-manager=hand-edit",
            "--force-conflicts",
            "-f",
            "-",
            stdin=json.dumps(
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": {"name": "tenant-foo-allow", "namespace": NS},
                    "spec": {"podSelector": {}, "egress": [{}]},
                }
            ),
        ),
        lambda: len(
            kubectl_json("-n", NS, "get", "networkpolicy", "tenant-foo-allow")["spec"]["egress"]
        ),
    ),
    Drift(
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "tenant-foo-admins",
        lambda: kubectl(
            "-n",
            NS,
            "patch",
            "rolebinding",
            "tenant-foo-tenant-admins",
            "--type=json",
            "-p",
            '[{"op": "replace", "path": "/subjects/0/name", "value": "everyone"}]',
        ),
        lambda: kubectl_json("-n", NS, "get", "rolebinding", "tenant-foo-tenant-admins")[
            "subjects"
        ][0]["name"],
    ),
    Drift(
        "kubernetes:core/v1:Secret",
        "tenant-foo-ldap-bind",
        lambda: merge_patch(
            "secret", "ldap-bind-creds", {"stringData": {"password": "not-the-bind-password"}}
        ),
        lambda: decoded("ldap-bind-creds", "password"),
    ),
    Drift(
        "kubernetes:core/v1:Secret",
        "tenant-foo-authorized-keys",
        lambda: merge_patch(
            "secret", "tenant-foo-authorized-keys", {"stringData": {"alice": INTRUDER_KEY}}
        ),
        lambda: decoded("tenant-foo-authorized-keys", "alice"),
    ),
    Drift(
        "kubernetes:core/v1:Secret",
        "tenant-foo-csi-secret",
        lambda: merge_patch(
            "secret", "weka-tenant-foo-creds", {"stringData": {"username": "someone-else"}}
        ),
        lambda: decoded("weka-tenant-foo-creds", "username"),
    ),
    Drift(
        "kubernetes:helm.example.io/v1:HelmRelease",
        "tenant-foo-release",
        lambda: kubectl(
            "apply",
            "--server-side",
            "--field-manager=helm-by-hand",
            "--force-conflicts",
            "-f",
            "-",
            stdin=json.dumps(
                {
                    "apiVersion": "helm.example.io/v1",
                    "kind": "HelmRelease",
                    "metadata": {"name": "login-tenant-foo", "namespace": NS},
                    "spec": {"values": {"replicas": 5}},
                }
            ),
        ),
        lambda: kubectl_json("-n", NS, "get", "helmrelease", "login-tenant-foo")["spec"]["values"][
            "replicas"
        ],
    ),
    Drift(
        "kubernetes:storage.k8s.io/v1:StorageClass",
        "tenant-foo-storage-class",
        lambda: merge_patch(
            "storageclass", "weka-tenant-foo", {"allowVolumeExpansion": False}, None
        ),
        lambda: kubectl_json("get", "storageclass", "weka-tenant-foo")["allowVolumeExpansion"],
    ),
    Drift(
        "kubernetes:core/v1:PersistentVolumeClaim",
        "tenant-foo-pvc-training-scratch",
        lambda: kubectl(
            "-n",
            NS,
            "annotate",
            "pvc",
            "training-scratch",
            "pulumi.com/skipAwait=false",
            "--overwrite",
        ),
        lambda: kubectl_json("-n", NS, "get", "pvc", "training-scratch")["metadata"]["annotations"][
            "pulumi.com/skipAwait"
        ],
    ),
    Drift(
        "kubernetes:scheduling.example.io/v1alpha1:Reservation",
        "tenant-foo-reservation",
        lambda: merge_patch(
            "reservation", "tenant-foo-reservation", {"spec": {"evictOnRelease": True}}, None
        ),
        lambda: kubectl_json("get", "reservation", "tenant-foo-reservation")["spec"][
            "evictOnRelease"
        ],
    ),
]

# The two drift commands of docs/design.md: would `up` change anything; does the state differ from
# the backends.
DRIFT_COMMANDS = {
    "preview-refresh": ("preview", "--refresh", "--expect-no-changes"),
    "refresh-preview-only": ("refresh", "--preview-only", "--expect-no-changes"),
}


@dataclass(frozen=True)
class FooStack:
    project: Path
    env: dict[str, str]

    def pulumi(self, *args: str) -> subprocess.CompletedProcess[str]:
        return pulumi(self.env, self.project, *args, "--stack", "tenant-foo", timeout=600)

    def must(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", "tenant-foo", timeout=600)


@pytest.fixture(scope="module")
def foo(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[FooStack]:
    """tenant-foo, up once for the module's tests, each of which leaves it as the spec says."""
    work = tmp_path_factory.mktemp("kubernetes-drift")
    stack = FooStack(
        project_copy(work / "project", rehearsals=("tenant-foo",)), file_backend(work / "backend")
    )
    stack.must("stack", "init")
    try:
        stack.must("up", "--yes", "--skip-preview")
        yield stack
    finally:
        stack.must("destroy", "--yes", "--skip-preview")


def drifted_resources(output: str) -> set[tuple[str, str]]:
    """(type, name) of each resource a drift command shows as changing: an update in a preview,
    or a refresh with a diff in a refresh preview."""
    steps = re.findall(
        r"^\s+~\s+(\S+:\S+)\s+(\S+)\s+(?:update|refresh \[diff:)", output, flags=re.MULTILINE
    )
    return set(steps)


@pytest.mark.parametrize("command", DRIFT_COMMANDS)
def test_kubectl_changes_to_each_kind_are_named_and_up_refresh_takes_them_back(
    foo: FooStack, command: str
) -> None:
    check = DRIFT_COMMANDS[command]
    foo.must("up", "--refresh", "--yes", "--skip-preview")  # whatever an earlier test left
    assert foo.pulumi(*check).returncode == 0, "a freshly applied stack is clean"
    expected = [drift.read() for drift in DRIFTS]

    for drift in DRIFTS:
        drift.make()
    assert [drift.read() for drift in DRIFTS] != expected

    found = foo.pulumi(*check)
    assert found.returncode == 7, found.stdout + found.stderr
    assert drifted_resources(found.stdout) == {(d.type, d.resource) for d in DRIFTS}, found.stdout

    foo.must("up", "--refresh", "--yes", "--skip-preview")
    for drift, value in zip(DRIFTS, expected, strict=True):
        assert drift.read() == value, drift.resource
    for other in DRIFT_COMMANDS.values():
        clean = foo.pulumi(*other)
        assert clean.returncode == 0, clean.stdout + clean.stderr


def test_a_claim_grown_outside_the_stack_is_refused_not_replaced(foo: FooStack) -> None:
    foo.must("up", "--refresh", "--yes", "--skip-preview")  # whatever an earlier test left
    # A volume the claim binds to, as the CSI driver would provision it, so the claim can grow.
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "tenant-foo-training-scratch-volume"},
        "spec": {
            "capacity": {"storage": "10Ti"},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "weka-tenant-foo",
            "claimRef": {"namespace": NS, "name": "training-scratch"},
            "csi": {"driver": "csi.weka.io", "volumeHandle": "dir/v1/tenant-foo-scratch/training"},
        },
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(volume))
    try:
        for _ in range(60):
            claim = kubectl_json("-n", NS, "get", "pvc", "training-scratch")
            if claim["status"].get("phase") == "Bound":
                break
            subprocess.run(["sleep", "1"], check=True)
        assert claim["status"]["phase"] == "Bound"
        uid = claim["metadata"]["uid"]
        merge_patch(
            "pvc", "training-scratch", {"spec": {"resources": {"requests": {"storage": "12Ti"}}}}
        )

        for args in (("preview",), ("up", "--refresh", "--yes", "--skip-preview")):
            refused = foo.pulumi(*args)
            assert refused.returncode != 0, refused.stdout
            printed = refused.stdout + refused.stderr
            assert (
                "storage.pvcs.0.size: PersistentVolumeClaim tenant-foo/training-scratch requests "
                "12Ti, more than the 10Ti here" in printed
            ), printed
            assert "Set the size to 12Ti in a pull request" in printed
            assert "Traceback" not in printed
        claim = kubectl_json("-n", NS, "get", "pvc", "training-scratch")
        assert claim["metadata"]["uid"] == uid, "the claim was replaced"
        assert claim["spec"]["resources"]["requests"]["storage"] == "12Ti"
    finally:
        # Back to what the spec says, for the module's other tests and its destroy: a claim that
        # cannot shrink is made again, as an operator would after moving its data.
        kubectl("-n", NS, "delete", "pvc", "training-scratch", "--wait=true")
        kubectl("delete", "pv", str(volume["metadata"]["name"]), "--wait=true")  # type: ignore[index]
        foo.must("up", "--refresh", "--yes", "--skip-preview")
