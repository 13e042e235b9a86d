"""`import <slug>` on a tenant onboarded by hand in the tests' sandbox, never by this program: the
runbook's kubectl manifests, sacctmgr and scontrol on the controller host, the Authentik API and
the Weka REST API with the mount host for what the `weka` CLI does. The tenant keeps the names
its operator chose (a team not ending in the short name) and leaves its numbers to the LDAP
outpost, as the runbook does.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tenant_stack.fleet.actions import Action, actions_of
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec
from tenant_stack.spec.fleet import find_collisions, load_fleet
from tests.backends import (
    ROOT,
    authentik,
    file_backend,
    fresh_ledger,
    mounted,
    operator_command,
    run,
    run_pulumi,
    sacctmgr,
    wait_for,
    weka,
)

SLUG = "tenant-hand"
NODES = ("gpu-13", "gpu-15")
USERS = {
    "hana": (
        "Hana Hand",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFs5mWq3Sxh0y8DmOJxJq1z0nE7ZcWRxgr5lYv1Q4mJb hana",
    ),
    "ivo": (
        "Ivo Hand",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHh8S7rYQ1dvx3wJk1m3JfVb8yTqv2oWc8mFkhZy0pQd ivo",
    ),
}
GiB, GB = 1024**3, 1000**3
TERM = "2026-02-01:2027-01-31"
SIGN_OFF = {
    "by": "Ida Operator",
    "date": "2026-12-01",
    "ticket": "OPS-5150",
    "confirmation": {"kind": "escalation", "by": "Sam Lead"},
}
PARTITION_LINE = (
    f"PartitionName={SLUG} Nodes=gpu-[13,15] AllowAccounts={SLUG},research Default=NO State=UP "
    "MaxTime=24:00:00 DefaultTime=01:00:00 PreemptMode=OFF OverSubscribe=EXCLUSIVE\n"
)

MANIFESTS = f"""
apiVersion: scheduling.example.io/v1alpha1
kind: Reservation
metadata: {{name: {SLUG}-reservation, labels: {{tenant: {SLUG}}}}}
spec:
  tenant: {SLUG}
  nodeSelector: {{matchLabels: {{hardware-pool: gpu-h100-rack-a}}}}
  reservedNodes: [{", ".join(NODES)}]
  applyTaint: true
  taintEffect: NoSchedule
  evictOnRelease: false
---
apiVersion: v1
kind: Namespace
metadata:
  name: {SLUG}
  labels:
    tenant: {SLUG}
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/audit: restricted
    pod-security.kubernetes.io/warn: restricted
---
apiVersion: v1
kind: ResourceQuota
metadata: {{name: {SLUG}-quota, namespace: {SLUG}}}
spec:
  hard:
    requests.nvidia.com/gpu: "16"
    requests.cpu: "256"
    requests.memory: 2Ti
    limits.memory: 3Ti
    persistentvolumeclaims: "10"
    requests.storage: 20Ti
---
apiVersion: v1
kind: LimitRange
metadata: {{name: {SLUG}-defaults, namespace: {SLUG}}}
spec:
  limits:
    - type: Container
      default: {{cpu: "2", memory: 8Gi}}
      defaultRequest: {{cpu: 500m, memory: 2Gi}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: {SLUG}-deny-all, namespace: {SLUG}}}
spec: {{podSelector: {{}}, policyTypes: [Ingress, Egress]}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: {SLUG}-allow, namespace: {SLUG}}}
spec:
  podSelector: {{}}
  policyTypes: [Ingress, Egress]
  ingress:
    - from:
        - namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {SLUG}}}}}
        - namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: slurm-control}}}}
  egress:
    - to: [namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {SLUG}}}}}]
    - to: [namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: slurm-control}}}}]
      ports:
        - {{port: 6817, protocol: TCP}}
        - {{port: 6818, protocol: TCP}}
        - {{port: 6819, protocol: TCP}}
    - to: [namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: auth}}}}]
      ports: [{{port: 636, protocol: TCP}}, {{port: 443, protocol: TCP}}]
    - to: [namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: kube-system}}}}]
      ports: [{{port: 53, protocol: UDP}}, {{port: 53, protocol: TCP}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: {SLUG}-admins, namespace: {SLUG}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: {SLUG}-admins}}]
---
apiVersion: scheduling.example.io/v1alpha1
kind: ReservationBinding
metadata: {{name: {SLUG}-binding, namespace: {SLUG}}}
spec:
  reservationName: {SLUG}-reservation
  podSelector: {{matchLabels: {{app.kubernetes.io/managed-by: {SLUG}}}}}
  injectAffinity: true
  injectToleration: true
---
apiVersion: helm.example.io/v1
kind: HelmRelease
metadata: {{name: login-{SLUG}, namespace: {SLUG}}}
spec:
  chart: {{name: sunk-login, version: 1.4.x}}
  values:
    tenant: {SLUG}
    replicas: 1
    runtimeClassName: gpu-tenants-login
    service:
      type: LoadBalancer
      annotations: {{external-dns.alpha.kubernetes.io/hostname: login.{SLUG}.example.internal}}
    homeMount: {{type: weka, filesystem: cluster-home/{SLUG}, path: /home}}
    scratchMount: {{type: weka, filesystem: cluster-scratch, path: /scratch}}
    ldap:
      uri: ldaps://authentik-ldap-outpost.auth.svc:636
      baseDN: dc=auth,dc=example,dc=internal
      bindDN: cn=ldap-bind,ou=users,dc=auth,dc=example,dc=internal
      bindPasswordSecret: ldap-bind-creds
    slurm: {{controllerHost: slurmctld.slurm-control.svc}}
    sshKeysSecret: {SLUG}-authorized-keys
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: shared-data, namespace: {SLUG}}}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: weka-{SLUG}
  resources: {{requests: {{storage: 2Ti}}}}
"""


@dataclass(frozen=True)
class HandBuilt:
    group_number: int  # the tenant group's num_pk, which the outpost numbers its gid from
    admins_number: int
    user_pks: dict[str, int]


def _kubectl(*args: str, stdin: str | None = None) -> None:
    subprocess.run(["kubectl", *args], input=stdin, text=True, check=True, capture_output=True)


def _build_kubernetes() -> None:
    _kubectl("apply", "-f", "-", stdin=MANIFESTS)
    # The LDAP bind Secret copied from auth (the runbook's sidebar), and the users' keys.
    bind = json.loads(
        run("kubectl", "get", "secret", "-n", "auth", "ldap-bind-creds", "-o", "json")
    )
    keys = {user: f"{key}\n" for user, (_, key) in USERS.items()}
    for name, data in (("ldap-bind-creds", bind["data"]), (f"{SLUG}-authorized-keys", None)):
        secret: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque"}
        secret["metadata"] = {"name": name, "namespace": SLUG}
        secret.update({"data": data} if data else {"stringData": keys})
        _kubectl("apply", "-f", "-", stdin=json.dumps(secret))
    wait_for(
        "the reservation operator to label the tenant's nodes",
        lambda: (
            sorted(
                n["metadata"]["name"]
                for n in json.loads(
                    run("kubectl", "get", "nodes", "-l", f"reserved.tenant={SLUG}", "-o", "json")
                )["items"]
            )
            == list(NODES)
        ),
    )


def _build_slurm() -> None:
    """Runbook 4a to 4d, as its operator types them (the users bound to the tenant's QoS)."""
    sacctmgr("-i", "add", "qos", "normal-hand", "Priority=100", "GrpTRES=gres/gpu=16",
             "MaxWall=24:00:00", "Flags=DenyOnLimit")  # fmt: skip
    sacctmgr("-i", "add", "qos", "interactive-hand", "Priority=200", "GrpTRES=gres/gpu=8",
             "MaxWall=04:00:00", "PreemptMode=OFF")  # fmt: skip
    cluster = os.environ.get("SLURM_CLUSTER", "production")
    sacctmgr("-i", "add", "account", SLUG, "Description=Tenant Hand", f"Organization={SLUG}",
             f"Cluster={cluster}", "Fairshare=100", "GrpTRES=gres/gpu=16",
             "GrpJobs=40")  # fmt: skip
    sacctmgr("-i", "add", "account", "research", f"parent={SLUG}",
             "Description=Hand Research", "Fairshare=60", f"Cluster={cluster}")  # fmt: skip
    sacctmgr("-i", "modify", "account", SLUG, "set", "qos=normal-hand,interactive-hand",
             "DefaultQOS=normal-hand")  # fmt: skip
    for user in USERS:
        sacctmgr("-i", "add", "user", user, "Account=research", "DefaultAccount=research",
                 f"Cluster={cluster}", "Fairshare=parent", "DefaultQOS=normal-hand",
                 "qos=normal-hand,interactive-hand", "MaxJobs=8",
                 "GrpTRESMins=gres/gpu=50000")  # fmt: skip
    _partition_lines(PARTITION_LINE)


def _partition_lines(line: str | None) -> None:
    """Runbook 4d: the tenant's line added to (or, with None, removed from) the Slurm
    operator's ConfigMap, and the controller reconfigured once its copy shows the change."""
    namespace, name = os.environ["SLURM_PARTITIONS_CONFIGMAP"].split("/")
    configmap = json.loads(run("kubectl", "get", "configmap", "-n", namespace, name, "-o", "json"))
    text = "".join(
        kept
        for kept in configmap["data"]["partitions.conf"].splitlines(keepends=True)
        if not kept.startswith(f"PartitionName={SLUG} ")
    ) + (line or "")
    patch = json.dumps({"data": {"partitions.conf": text}})
    _kubectl("patch", "configmap", "-n", namespace, name, "--type=merge", "-p", patch)
    copy = Path(os.environ["SLURM_PARTITIONS_FILE"])
    wait_for("the controller's copy of the ConfigMap", lambda: copy.read_text() == text)
    run("scontrol", "reconfigure")


def _build_authentik(parent: str) -> HandBuilt:
    """Runbook 2a and 2b: groups and users with no numbers pinned, left to the outpost."""
    with authentik() as api:
        tenants = api.get("/core/groups/", params={"name": parent}).json()["results"][0]
        group = api.post("/core/groups/", json={"name": SLUG, "parent": tenants["pk"]})
        admins = api.post("/core/groups/", json={"name": f"{SLUG}-admins", "parent": tenants["pk"]})
        group.raise_for_status()
        admins.raise_for_status()
        pks = {}
        for username, (name, key) in USERS.items():
            member_of = [group.json()["pk"]] + ([admins.json()["pk"]] if username == "ivo" else [])
            made = api.post(
                "/core/users/",
                json={
                    "username": username,
                    "name": name,
                    "email": f"{username}@{SLUG}.example",
                    "groups": member_of,
                    "attributes": {"ssh_keys": key},
                },
            )
            made.raise_for_status()
            pks[username] = made.json()["pk"]
    return HandBuilt(group.json()["num_pk"], admins.json()["num_pk"], pks)


def _build_weka(built: HandBuilt) -> None:
    """Directory isolation (runbook 4e and 6): the tenant's directories on the shared
    filesystems, made on the mount host, and their quotas through the REST API."""
    gid = 4000 + built.group_number
    home, scratch = mounted("Root", "cluster-home", SLUG), mounted("Root", "cluster-scratch", SLUG)
    directories = [(home, 0, 0o750), (scratch, 0, 0o2770)]
    directories += [(home / user, 2000 + pk, 0o700) for user, pk in built.user_pks.items()]
    for directory, uid, mode in directories:
        directory.mkdir()
        os.chown(directory, uid, gid)
        os.chmod(directory, mode)
    with weka() as api:
        for filesystem, path, soft, hard in (
            ("cluster-home", f"/{SLUG}", 0, 2000 * GB),
            *(("cluster-home", f"/{SLUG}/{u}", 180 * GB, 200 * GB) for u in USERS),
            ("cluster-scratch", f"/{SLUG}", 9000 * GB, 10000 * GB),
        ):
            fs = api.get("/fileSystems", params={"name": filesystem}).json()["data"][0]
            inode = api.get(f"/fileSystems/{fs['uid']}/resolvePath", params={"path": path})
            body = {"hard_limit_bytes": hard, "soft_limit_bytes": soft, "grace_seconds": 0}
            api.put(f"/fileSystems/{fs['uid']}/quota/{inode.json()['data']['inode_id']}",
                    json=body).raise_for_status()  # fmt: skip


def _tear_down() -> None:
    _partition_lines(None)
    for user in USERS:
        subprocess.run(["sacctmgr", "-i", "delete", "user", user], capture_output=True)
    for name in ("research", SLUG):
        subprocess.run(["sacctmgr", "-i", "delete", "account", name], capture_output=True)
    for name in ("normal-hand", "interactive-hand"):
        subprocess.run(["sacctmgr", "-i", "delete", "qos", name], capture_output=True)
    with authentik() as api:
        for user in USERS:
            for found in api.get("/core/users/", params={"username": user}).json()["results"]:
                api.delete(f"/core/users/{found['pk']}/")
        for name in (SLUG, f"{SLUG}-admins"):
            for found in api.get("/core/groups/", params={"name": name}).json()["results"]:
                api.delete(f"/core/groups/{found['pk']}/")
    with weka() as api:
        for user in api.get("/users").json()["data"]:
            if user["username"] == f"{SLUG}-csi":
                api.delete(f"/users/{user['uid']}")
        for filesystem in ("cluster-home", "cluster-scratch"):
            fs = api.get("/fileSystems", params={"name": filesystem}).json()["data"][0]
            for quota in api.get(f"/fileSystems/{fs['uid']}/quota").json()["data"]:
                if quota["path"].startswith(f"/{SLUG}"):
                    api.delete(f"/fileSystems/{fs['uid']}/quota/{quota['inode_id']}")
            shutil.rmtree(mounted("Root", filesystem, SLUG), ignore_errors=True)
    subprocess.run(["kubectl", "delete", "namespace", SLUG, "--timeout=90s"], capture_output=True)
    subprocess.run(["kubectl", "delete", "reservation", f"{SLUG}-reservation"], capture_output=True)
    subprocess.run(["kubectl", "delete", "storageclass", f"weka-{SLUG}"], capture_output=True)


@pytest.fixture(scope="module")
def hand_built(sandbox: SandboxLayout) -> Iterator[HandBuilt]:
    _tear_down()  # what a killed run of this module left
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    _build_kubernetes()
    _build_slurm()
    built = _build_authentik(platform.authentik.tenants_group)
    _build_weka(built)
    yield built
    _tear_down()


def _backends() -> dict[str, Any]:
    """Everything of the tenant each backend holds, to compare before and after."""
    with authentik() as api:
        found = [api.get("/core/users/", params={"username": u}).json() for u in USERS]
        for group in (SLUG, f"{SLUG}-admins"):
            found.append(api.get("/core/groups/", params={"name": group}).json())
    quotas = {}
    with weka() as api:
        for name in ("cluster-home", "cluster-scratch"):
            fs = api.get("/fileSystems", params={"name": name}).json()["data"][0]
            quotas[name] = api.get(f"/fileSystems/{fs['uid']}/quota").json()
    associations = "account,user,parentname,fairshare,grptres,grpjobs,maxjobs,grptresmins,qos"
    kinds = "resourcequota,limitrange,networkpolicy,rolebinding,reservationbinding,helmrelease"
    inside = run("kubectl", "get", "-n", SLUG, f"{kinds},secret,pvc", "-o", "json")
    outside = run(
        "kubectl", "get", f"namespace/{SLUG}", f"reservation/{SLUG}-reservation", "-o", "json"
    )
    return {
        "slurm": [
            *sacctmgr("show", "assoc", f"account={SLUG},research", f"format={associations}"),
            *sacctmgr(
                "show", "account", SLUG, "research", "format=account,description,organization"
            ),
            *(
                f"qos:{line}"
                for line in sacctmgr(
                    "show", "qos", "normal-hand,interactive-hand", "format=name,description"
                )
            ),
            *(
                f"qos-limits:{line}"
                for line in sacctmgr(
                    "show",
                    "qos",
                    "normal-hand,interactive-hand",
                    "format=name,priority,grptres,maxwall,flags,preempt",
                )
            ),
            run("scontrol", "show", "partition", SLUG, "-o"),
        ],
        "authentik": found,
        "weka": quotas,
        "kubernetes": json.loads(inside)["items"] + json.loads(outside)["items"],
    }


def _tenants(tmp_path: Path) -> Path:
    """The project's specs, beside which the imported one must pass the fleet's rules."""
    tenants = tmp_path / "tenants"
    shutil.copytree(ROOT / "tenants", tenants)
    return tenants


def test_import_writes_a_spec_that_passes_every_rule(hand_built: HandBuilt, tmp_path: Path) -> None:
    tenants = _tenants(tmp_path)
    before = _backends()
    done = operator_command("import", SLUG, "--term", TERM, "--tenants", tenants, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["written"], report
    assert not report["refused"]
    assert _backends() == before  # read-only on every backend

    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    spec = load_spec(tenants, SLUG, platform)
    specs, broken = load_fleet(tenants, platform)
    assert not broken
    assert not find_collisions(specs, platform)

    # Numbers the runbook left to the outpost are pinned to what it hands out.
    assert spec.identity.gid == 4000 + hand_built.group_number
    assert spec.identity.admins_gid == 4000 + hand_built.admins_number
    assert {u.username: u.uid for u in spec.users} == {
        u: 2000 + pk for u, pk in hand_built.user_pks.items()
    }
    assert spec.identity.admins == ["ivo"]
    # The team keeps its hand-made name, which the spec's rules allow an imported tenant.
    assert [t.name for t in spec.slurm.teams] == ["research"]
    assert {u.team for u in spec.users} == {"research"}
    assert spec.imported is not None
    assert spec.imported.weka_org_admin is None
    assert (spec.contract.gpus, spec.contract.gpu_minutes) == (16, 100000)
    assert str(spec.contract.wall_limit) == "1d"
    assert str(spec.contract.interactive_wall_limit) == "4h"
    assert spec.reservation.nodes == list(NODES)
    assert spec.slurm.qos.normal.flags == ["DenyOnLimit"]
    assert (spec.slurm.partition.default_time.seconds, spec.slurm.partition.oversubscribe) == (
        3600,
        "exclusive",
    )
    assert spec.storage.isolation == "directory"
    assert (spec.storage.home_capacity, spec.storage.home_per_user.hard) == (2000 * GB, 200 * GB)
    assert (spec.storage.scratch.soft, spec.storage.scratch.hard) == (9000 * GB, 10000 * GB)
    assert [(c.name, c.size) for c in spec.storage.pvcs] == [("shared-data", 2 * 1024**4)]
    assert spec.kubernetes.container_defaults.request.cpu == 500
    assert spec.login.hostname == f"login.{SLUG}.example.internal"
    assert [u.ssh_keys for u in spec.users] == [[k] for _, k in USERS.values()]

    text = (tenants / f"{SLUG}.yaml").read_text()
    assert "# TODO: given to import (--term)" in text
    assert "# inferred: pinned to what the LDAP outpost hands out today" in text
    notes = {n["field"]: n["kind"] for n in report["notes"]}
    assert notes["contract.term"] == "todo"
    assert notes["users.0.uid"] == "inferred"

    again = operator_command("import", SLUG, "--term", TERM, "--tenants", tenants)
    assert again.returncode == 1
    assert "is managed already" in again.stdout


def test_a_partition_that_is_not_the_reservation_is_refused(
    hand_built: HandBuilt, tmp_path: Path
) -> None:
    tenants = _tenants(tmp_path)
    run("scontrol", "update", f"PartitionName={SLUG}", "Nodes=gpu-13")
    try:
        done = operator_command("import", SLUG, "--term", TERM, "--tenants", tenants)
    finally:
        run("scontrol", "update", f"PartitionName={SLUG}", "Nodes=gpu-[13,15]")
    assert done.returncode == 1
    assert "Reservation matches partition matches contract" in done.stdout
    assert "gpu-13" in done.stdout
    assert not (tenants / f"{SLUG}.yaml").exists()


def test_a_home_owned_by_another_uid_is_refused(hand_built: HandBuilt, tmp_path: Path) -> None:
    tenants = _tenants(tmp_path)
    home = mounted("Root", "cluster-home", f"{SLUG}/hana")
    uid = 2000 + hand_built.user_pks["hana"]
    os.chown(home, uid + 1, -1)
    try:
        done = operator_command("import", SLUG, "--term", TERM, "--tenants", tenants)
    finally:
        os.chown(home, uid, -1)
    assert done.returncode == 1
    assert "User identity consistent everywhere: hana's uid is" in done.stdout
    assert f"but {uid + 1} on their home directory" in done.stdout
    assert not (tenants / f"{SLUG}.yaml").exists()


def test_a_node_in_another_tenants_reservation_is_refused(
    hand_built: HandBuilt, tmp_path: Path
) -> None:
    tenants = _tenants(tmp_path)
    other = yaml.safe_load(MANIFESTS.split("---")[0])
    other["metadata"]["name"] = "tenant-other-reservation"
    other["spec"].update(tenant="tenant-other", reservedNodes=["gpu-15"])
    _kubectl("apply", "-f", "-", stdin=json.dumps(other))
    try:
        done = operator_command("import", SLUG, "--term", TERM, "--tenants", tenants)
    finally:
        _kubectl("delete", "reservation", "tenant-other-reservation")
    assert done.returncode == 1
    assert "node gpu-15 is held by two tenants (tenant-hand and tenant-other)" in done.stdout


# What adoption may change in a backend: the ownership marks and the numbers pinned to what
# the outpost already hands out (and the Kubernetes objects' control annotations).
MARK_ATTRIBUTES = ("gpu_tenants_tenant", "tenant_slug", "uidNumber", "gidNumber")
# What the hand-built tenant lacks and the first `up` makes: the CSI driver's credentials (a Weka
# user of its own, whose password the stack holds, and their Secret) and the StorageClass.
# And the admins' binding to a Role of the tenant's own: the runbook's RoleBinding gave them
# ClusterRole `edit`, which lets them write NetworkPolicies (import's report says to delete it).
# What the stack adds to a tenant made by the runbook: the Weka Secret, the admins' binding under
# its own name, and the policy that lets users' SSH reach the login pods from outside.
MADE = {
    ("Secret", f"weka-{SLUG}-creds"),
    ("RoleBinding", f"{SLUG}-tenant-admins"),
    ("NetworkPolicy", f"{SLUG}-login-ssh"),
}
MARK_ANNOTATIONS = (
    "pulumi.com/",
    "gpu-tenants.example.io/",
    "kubectl.kubernetes.io/",
    # Kubernetes' own volume controller names the provisioner on the claim once its
    # StorageClass exists.
    "volume.beta.kubernetes.io/",
    "volume.kubernetes.io/",
)


def _unmarked(backends: dict[str, Any]) -> dict[str, Any]:
    """`backends` less the marks adoption adds."""
    directory = []
    for found in backends["authentik"]:
        for item in found["results"]:
            attributes = {k: v for k, v in item["attributes"].items() if k not in MARK_ATTRIBUTES}
            kept = {
                k: v for k, v in item.items() if k not in ("attributes", "users_obj", "groups_obj")
            }
            directory.append({**kept, "attributes": attributes})
    quotas = {
        fs: sorted(
            (q["path"], q["soft_limit_bytes"], q["hard_limit_bytes"])
            for q in found["data"]
            if q["path"].startswith(f"/{SLUG}")
        )
        for fs, found in backends["weka"].items()
    }
    objects = []
    for item in backends["kubernetes"]:
        metadata = item["metadata"]
        annotations = {
            k: v
            for k, v in (metadata.get("annotations") or {}).items()
            if not k.startswith(MARK_ANNOTATIONS)
        }
        rest = {k: v for k, v in item.items() if k not in ("metadata", "status")}
        if (item["kind"], metadata["name"]) not in MADE:
            objects.append(
                (item["kind"], metadata["name"], metadata.get("labels"), annotations, rest)
            )
    slurm = [
        # Slurm keeps AllowAccounts in the order written; the provider writes it sorted.
        re.sub(r"AllowAccounts=(\S+)", lambda m: ",".join(sorted(m[1].split(","))), line)
        for line in backends["slurm"]
        if not line.startswith("qos:")
    ]
    return {"slurm": slurm, "authentik": directory, "weka": quotas, "kubernetes": objects}


@dataclass
class Adopted:
    project: Path
    env: dict[str, str]
    before: dict[str, Any]  # the backends before the first `up`
    after: dict[str, Any]
    up: str  # what it said
    reviewed: list[Action]  # its preview, as the pull-request review words it

    @property
    def spec_file(self) -> Path:
        return self.project / "tenants" / f"{SLUG}.yaml"

    def edit(self, change: Callable[[dict[str, Any]], None]) -> None:
        """A pull request on the imported spec (its comments go, as an editor's might)."""
        spec = yaml.safe_load(self.spec_file.read_text())
        change(spec)
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def pulumi(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=900)


@pytest.fixture(scope="module")
def adopted(
    hand_built: HandBuilt, tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout
) -> Adopted:
    """The hand-built tenant imported into a project of its own and adopted by its first `up`;
    the tests after share its stack, in the file's order."""
    work = tmp_path_factory.mktemp("adopted")
    project = project_copy(work / "project")
    # A ledger of its own (the sandbox's keeps earlier runs' entries, Object Lock), where import
    # records what it found and the first `up` reads it.
    ledger = fresh_ledger(sandbox)
    done = operator_command(
        "import", SLUG, "--term", TERM, "--tenants", project / "tenants", env=ledger
    )
    assert done.returncode == 0, done.stdout + done.stderr
    env = {**file_backend(work / "state"), **ledger}
    run_pulumi(env, project, "stack", "init", SLUG)
    run_pulumi(env, project, "config", "set", "drain_wait_seconds", "15", "--stack", SLUG)
    before = _backends()
    preview = json.loads(run_pulumi(env, project, "preview", "--json", "--stack", SLUG))
    reviewed = list(actions_of(preview["steps"], f"tenants/{SLUG}.yaml"))
    up = run_pulumi(env, project, "up", "--yes", "--stack", SLUG, timeout=600)
    return Adopted(project, env, before, _backends(), up, reviewed)


def test_the_first_up_adopts_the_tenant_adding_only_marks(adopted: Adopted) -> None:
    assert "imported" in adopted.up
    said = {a.words for a in adopted.reviewed}
    assert f"Kubernetes: import Namespace `{SLUG}` made by hand, as it is, then update it" in said
    assert (
        "Slurm: create QoS `normal-hand`, or adopt it if made by hand (marking it as the "
        "tenant's)" in said
    )
    unmarked, was = _unmarked(adopted.after), _unmarked(adopted.before)
    for backend in ("slurm", "authentik", "weka", "kubernetes"):
        assert unmarked[backend] == was[backend], backend
    # The marks: a QoS's Description, the quotas' owner, Authentik's attribute.
    after = adopted.after
    assert f"qos:normal-hand|gpu-tenants:{SLUG}" in after["slurm"]
    assert all(q["owner"] == SLUG for f in after["weka"].values() for q in f["data"]
               if q["path"].startswith(f"/{SLUG}"))  # fmt: skip
    assert all(
        item["attributes"]["gpu_tenants_tenant"] == SLUG
        for found in after["authentik"]
        for item in found["results"]
    )
    made = ("RoleBinding", f"{SLUG}-tenant-admins")
    [binding] = [i for i in after["kubernetes"] if (i["kind"], i["metadata"]["name"]) == made]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": f"{SLUG}-admins",
    }
    adopted.pulumi("preview", "--expect-no-changes", "--refresh")


NEW_USER = {
    "username": "jun",
    "name": "Jun Hand",
    "email": f"jun@{SLUG}.example",
    "uid": 2950,
    "team": "research",
    "ssh_keys": [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGm1vXq8wJ3cFh2kLp9sQe7rTn4yUo6bDz0aVi5xWc1N jun"
    ],
}


def test_the_imported_tenant_takes_a_normal_change(adopted: Adopted) -> None:
    def add_user(spec: dict[str, Any]) -> None:
        spec["imported"]["adopt"] = False  # the pull request after the first `up`
        spec["users"].append(NEW_USER)
        spec["contract"]["gpu_minutes"] = 50000 * len(spec["users"])

    adopted.edit(add_user)
    adopted.pulumi("up", "--yes", "--skip-preview")
    with authentik() as api:
        jun = api.get("/core/users/", params={"username": "jun"}).json()["results"][0]
    assert jun["attributes"]["uidNumber"] == "2950"
    assert sacctmgr("show", "assoc", "user=jun", "format=account,maxjobs,grptresmins") == [
        "research|8|gres/gpu=50000"
    ]
    home = mounted("Root", "cluster-home", f"{SLUG}/jun").stat()
    assert (home.st_uid, oct(home.st_mode & 0o7777)) == (2950, "0o700")
    adopted.pulumi("preview", "--expect-no-changes")


def test_the_imported_tenant_is_offboarded_stage_by_stage(adopted: Adopted) -> None:
    for stage in ("frozen", "drained", "archived", "snapshotted", "destroy"):

        def move(spec: dict[str, Any], stage: str = stage) -> None:
            spec["lifecycle"]["stage"] = stage
            spec["lifecycle"]["no_jobs"] = True  # it never ran one: the export is empty
            # `import` cannot know who at the customer is told: the pull request says.
            spec["contract"]["contact"] = {"name": "Jun Operator", "email": "jun@qux.example"}
            if stage == "destroy":
                spec["lifecycle"]["sign_off"] = SIGN_OFF

        adopted.edit(move)
        adopted.pulumi("up", "--yes", "--skip-preview")
        assert json.loads(adopted.pulumi("stack", "output", "lifecycle_stage", "--json")) == stage
        if stage == "frozen":
            assert "State=DOWN" in run("scontrol", "show", "partition", SLUG, "-o")
    adopted.pulumi("destroy", "--yes", "--skip-preview", "--exclude-protected")
    assert sacctmgr("show", "account", SLUG, "format=account") == []
    assert subprocess.run(["kubectl", "get", "namespace", SLUG], capture_output=True).returncode
    with authentik() as api:
        users = api.get("/core/users/", params={"username": "hana"}).json()["results"]
    assert [u["is_active"] for u in users] == [False]  # the audit trail's tombstone
    kept = json.loads(adopted.pulumi("stack", "output", "archives", "--json"))
    assert kept


# A second tenant built by hand, with a Weka organization of its own (runbook 6a) whose admin
# its operator named, and no reserved nodes.
ORG_SLUG = "tenant-org"
ORG_ADMIN, ORG_PASSWORD = "admin-org", "Hand1madeAdminPassword"
KAI = (
    "kai",
    "Kai Org",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC3pWq8yT5nRk2dLv7hXa9sQe4bUz1oMf6jGc0iNt8Yw kai",
)
ORG_HOME, ORG_SCRATCH = 500 * GB, 1000 * GB


def _org_manifests() -> list[dict[str, Any]]:
    """The first tenant's namespace objects, for this one: its own filesystems in the login
    release, and neither Reservation nor its binding nor a claim."""
    kept = []
    for document in yaml.safe_load_all(MANIFESTS.replace(SLUG, ORG_SLUG)):
        if document["kind"] in ("Reservation", "ReservationBinding", "PersistentVolumeClaim"):
            continue
        if document["kind"] == "HelmRelease":
            values = document["spec"]["values"]
            values["homeMount"]["filesystem"] = f"{ORG_SLUG}-home"
            values["scratchMount"]["filesystem"] = f"{ORG_SLUG}-scratch"
        kept.append(document)
    bind = json.loads(
        run("kubectl", "get", "secret", "-n", "auth", "ldap-bind-creds", "-o", "json")
    )
    for name, data in (
        ("ldap-bind-creds", bind["data"]),
        (
            f"{ORG_SLUG}-authorized-keys",
            {KAI[0]: base64.b64encode(f"{KAI[2]}\n".encode()).decode()},
        ),
    ):
        kept.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                     "metadata": {"name": name, "namespace": ORG_SLUG}, "data": data})  # fmt: skip
    return kept


def _org_tear_down() -> None:
    cluster = os.environ.get("SLURM_CLUSTER", "production")
    subprocess.run(["sacctmgr", "-i", "delete", "user", KAI[0]], capture_output=True)
    subprocess.run(["sacctmgr", "-i", "delete", "account", ORG_SLUG, f"cluster={cluster}"],
                   capture_output=True)  # fmt: skip
    for name in ("normal-org", "interactive-org"):
        subprocess.run(["sacctmgr", "-i", "delete", "qos", name], capture_output=True)
    with authentik() as api:
        for found in api.get("/core/users/", params={"username": KAI[0]}).json()["results"]:
            api.delete(f"/core/users/{found['pk']}/")
        for name in (ORG_SLUG, f"{ORG_SLUG}-admins"):
            for found in api.get("/core/groups/", params={"name": name}).json()["results"]:
                api.delete(f"/core/groups/{found['pk']}/")
    with weka() as root:
        org = next(
            (o for o in root.get("/organizations").json()["data"] if o["name"] == ORG_SLUG), None
        )
        if org is not None:
            with weka((ORG_SLUG, ORG_ADMIN, ORG_PASSWORD)) as api:
                for fs in api.get("/fileSystems").json()["data"]:
                    api.delete(f"/fileSystems/{fs['uid']}")
            root.delete(f"/organizations/{org['uid']}")
    subprocess.run(
        ["kubectl", "delete", "namespace", ORG_SLUG, "--timeout=90s"], capture_output=True
    )
    subprocess.run(["kubectl", "delete", "storageclass", f"weka-{ORG_SLUG}"], capture_output=True)


def _build_org_tenant(parent: str, filesystem_group: str) -> int:
    """The tenant by hand; returns the user's pk."""
    _kubectl(
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": _org_manifests()}),
    )
    sacctmgr(
        "-i", "add", "qos", "normal-org", "Priority=100", "GrpTRES=gres/gpu=8", "MaxWall=12:00:00"
    )
    sacctmgr(
        "-i",
        "add",
        "qos",
        "interactive-org",
        "Priority=200",
        "GrpTRES=gres/gpu=8",
        "MaxWall=02:00:00",
    )
    cluster = os.environ.get("SLURM_CLUSTER", "production")
    sacctmgr("-i", "add", "account", ORG_SLUG, "Description=Tenant Org", f"Organization={ORG_SLUG}",
             f"Cluster={cluster}", "Fairshare=50", "GrpTRES=gres/gpu=16", "GrpJobs=20")  # fmt: skip
    sacctmgr("-i", "modify", "account", ORG_SLUG, "set", "qos=normal-org,interactive-org",
             "DefaultQOS=normal-org")  # fmt: skip
    sacctmgr("-i", "add", "user", KAI[0], f"Account={ORG_SLUG}", f"DefaultAccount={ORG_SLUG}",
             f"Cluster={cluster}", "Fairshare=parent", "DefaultQOS=normal-org",
             "qos=normal-org,interactive-org", "MaxJobs=4",
             "GrpTRESMins=gres/gpu=10000")  # fmt: skip
    with authentik() as api:
        tenants = api.get("/core/groups/", params={"name": parent}).json()["results"][0]
        groups = [
            api.post("/core/groups/", json={"name": name, "parent": tenants["pk"]}).json()
            for name in (ORG_SLUG, f"{ORG_SLUG}-admins")
        ]
        kai = api.post("/core/users/", json={
            "username": KAI[0], "name": KAI[1], "email": f"kai@{ORG_SLUG}.example",
            "groups": [g["pk"] for g in groups], "attributes": {"ssh_keys": KAI[2]},
        }).json()  # fmt: skip
    gid, uid = 4000 + groups[0]["num_pk"], 2000 + kai["pk"]
    with weka() as root:
        root.post("/organizations", json={
            "name": ORG_SLUG, "username": ORG_ADMIN, "password": ORG_PASSWORD,
            "ssd_quota": 0, "total_quota": ORG_HOME + ORG_SCRATCH,
        }).raise_for_status()  # fmt: skip
    with weka((ORG_SLUG, ORG_ADMIN, ORG_PASSWORD)) as api:
        made = {}
        for kind, capacity in (("home", ORG_HOME), ("scratch", ORG_SCRATCH)):
            made[kind] = api.post("/fileSystems", json={
                "name": f"{ORG_SLUG}-{kind}", "group_name": filesystem_group,
                "total_capacity": capacity, "ssd_capacity": capacity,
            }).json()["data"]  # fmt: skip
        home, scratch = (
            mounted(ORG_SLUG, f"{ORG_SLUG}-home"),
            mounted(ORG_SLUG, f"{ORG_SLUG}-scratch"),
        )
        for directory, owner, mode in (
            (home, 0, 0o750),
            (home / KAI[0], uid, 0o700),
            (scratch / ORG_SLUG, 0, 0o2770),
        ):
            directory.mkdir(exist_ok=True)
            os.chown(directory, owner, gid)
            os.chmod(directory, mode)
        for kind, path, soft, hard in (
            ("home", f"/{KAI[0]}", 90 * GB, 100 * GB),
            ("scratch", f"/{ORG_SLUG}", 900 * GB, ORG_SCRATCH),
        ):
            uid_fs = made[kind]["uid"]
            # As a client does: a new filesystem is usable once the cluster says is_ready.
            ready_path = f"/fileSystems/{uid_fs}"

            def ready(path: str = ready_path) -> bool:
                return bool(api.get(path).json()["data"]["is_ready"])

            wait_for(f"{kind} to be ready", ready)
            found = api.get(f"/fileSystems/{uid_fs}/resolvePath", params={"path": path})
            limits = {"hard_limit_bytes": hard, "soft_limit_bytes": soft, "grace_seconds": 0}
            inode = found.json()["data"]["inode_id"]
            api.put(f"/fileSystems/{uid_fs}/quota/{inode}", json=limits).raise_for_status()
    return int(kai["pk"])


@pytest.fixture(scope="module")
def org_tenant(sandbox: SandboxLayout) -> Iterator[int]:
    _org_tear_down()
    platform = load_platform(ROOT / "Pulumi.prod.yaml")
    yield _build_org_tenant(platform.authentik.tenants_group, platform.weka.filesystem_group)
    _org_tear_down()


def test_a_hand_made_weka_organization_is_adopted_with_its_admin(
    org_tenant: int, tmp_path: Path
) -> None:
    password = tmp_path / "org-admin-password"
    password.write_text(ORG_PASSWORD)
    password.chmod(0o600)
    project = project_copy(tmp_path / "project")
    done = operator_command(
        "import", ORG_SLUG, "--term", TERM, "--tenants", project / "tenants",
        "--gpu-sku", "h100-8x", "--partition-type", "on-demand",
        "--weka-org-admin", ORG_ADMIN, "--weka-org-password-file", password,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert ORG_PASSWORD not in done.stdout
    assert f"logs in as its admin '{ORG_ADMIN}' with the password in" in done.stdout
    spec = yaml.safe_load((project / "tenants" / f"{ORG_SLUG}.yaml").read_text())
    assert spec["imported"]["weka_org_admin"] == ORG_ADMIN
    assert (spec["storage"]["isolation"], spec["reservation"]["nodes"]) == ("org", [])
    with weka() as root:
        org_uid = next(
            o["uid"] for o in root.get("/organizations").json()["data"] if o["name"] == ORG_SLUG
        )

    env = {**file_backend(tmp_path / "state"), "WEKA_ORG_ADMIN_PASSWORD_FILE": str(password)}
    run_pulumi(env, project, "stack", "init", ORG_SLUG)
    run_pulumi(env, project, "up", "--yes", "--stack", ORG_SLUG, timeout=600)
    state = json.loads(run_pulumi(env, project, "stack", "export", "--stack", ORG_SLUG))
    orgs = [r for r in state["deployment"]["resources"] if r["type"].endswith("weka:Organization")]
    assert [r["id"] for r in orgs] == [org_uid]  # adopted, not made again
    assert ORG_PASSWORD not in json.dumps(state)  # the state keeps it encrypted
    with weka((ORG_SLUG, ORG_ADMIN, ORG_PASSWORD)) as api:  # its admin's login is unchanged
        home = api.get("/fileSystems", params={"name": f"{ORG_SLUG}-home"}).json()["data"][0]
        quotas = api.get(f"/fileSystems/{home['uid']}/quota").json()["data"]
    assert [(q["path"], q["owner"]) for q in quotas] == [(f"/{KAI[0]}", ORG_SLUG)]
    run_pulumi(env, project, "preview", "--stack", ORG_SLUG, "--expect-no-changes", "--refresh")
