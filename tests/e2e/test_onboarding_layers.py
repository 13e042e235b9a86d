"""Onboarding end to end, one test per runbook layer over one stack: the real engine brings
tenant-foo up on the sandbox once (a rehearsal: its filesystems may go without an offboarding
snapshot), each test reads one layer back with the backend's own tools, and the last one
destroys it and checks that every layer is gone."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from sandbox.kubernetes.images import TOOLS_IMAGE
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import (
    ROOT,
    authentik,
    authentik_user,
    file_backend,
    kubectl_json,
    labelled,
    mounted,
    nslookup,
    owner_and_mode,
    resolved,
    revealed,
    run,
    run_pulumi,
    sacctmgr,
    weka,
    weka_org,
    weka_quotas,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


@dataclass
class Onboarded:
    stack: auto.Stack
    project: Path
    env: dict[str, str]
    planned: dict[Any, int]  # the first preview's change summary (op -> count)
    outputs: dict[str, Any]
    printed: str  # what the engine printed in that preview and the up
    # alice's private key: the spec's public key for her is replaced by this pair's.
    alice_key: Path
    destroyed: bool = False


def secret_data(name: str) -> dict[str, str]:
    data: dict[str, str] = kubectl_json("-n", "tenant-foo", "get", "secret", name)["data"]
    return data


@pytest.fixture(scope="module")
def foo(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Onboarded]:
    work = tmp_path_factory.mktemp("onboarding")
    env = file_backend(work / "backend")
    project = project_copy(work / "project", rehearsals=("tenant-foo",))
    alice_key = work / "alice"
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@test", "-f", str(alice_key))
    spec = project / "tenants" / "tenant-foo.yaml"
    own_key = alice_key.with_suffix(".pub").read_text().strip()
    text, replaced = re.subn(r"ssh-ed25519 \S+ alice@laptop", own_key, spec.read_text())
    assert replaced == 1
    spec.write_text(text)
    stack = auto.create_stack(
        "tenant-foo", work_dir=str(project), opts=auto.LocalWorkspaceOptions(env_vars=env)
    )
    preview = stack.preview()
    up = stack.up()
    assert up.summary.result == "succeeded"
    onboarded = Onboarded(
        stack,
        project,
        env,
        dict(preview.change_summary),
        {key: output.value for key, output in up.outputs.items()},
        preview.stdout + preview.stderr + up.stdout + up.stderr,
        alice_key,
    )
    yield onboarded
    if not onboarded.destroyed:
        stack.destroy()


def test_preview_plans_every_layer_and_up_exports_the_handover(foo: Onboarded) -> None:
    # The six layers (the login pods waited for, users let in by the login-ssh policy, the
    # reserved nodes' release checked for health), the offboarding gate and its component, the
    # (empty) retention component.
    assert foo.planned == {"create": 56}
    assert foo.outputs["reserved_nodes"] == [f"gpu-0{i}" for i in range(1, 9)]
    assert "User           alice" in foo.outputs["ssh_config"]["alice"]


def test_step_1_the_reservation_holds_exactly_the_contracted_nodes(foo: Onboarded) -> None:
    # Step 1: the operator labelled and tainted exactly the eight nodes before up returned.
    assert labelled("tenant-foo") == [f"gpu-0{i}" for i in range(1, 9)]
    taint = {"key": "reserved.tenant", "value": "tenant-foo", "effect": "NoSchedule"}
    assert taint in kubectl_json("get", "node", "gpu-05")["spec"]["taints"]
    reservation = kubectl_json("get", "reservation", "tenant-foo-reservation")
    assert reservation["spec"]["evictOnRelease"] is False


def test_step_3_the_namespace_and_everything_in_it(foo: Onboarded) -> None:
    # Step 3: the namespace and everything in it.
    labels = kubectl_json("get", "namespace", "tenant-foo")["metadata"]["labels"]
    assert labels["tenant"] == "tenant-foo"
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    quota = kubectl_json("-n", "tenant-foo", "get", "resourcequota", "tenant-foo-quota")
    assert quota["status"]["hard"]["requests.nvidia.com/gpu"] == "64"
    assert quota["status"]["hard"]["limits.memory"] == "10Ti"
    limits = kubectl_json("-n", "tenant-foo", "get", "limitrange", "tenant-foo-defaults")
    assert limits["spec"]["limits"][0]["default"] == {"cpu": "4", "memory": "16Gi"}
    binding = kubectl_json("-n", "tenant-foo", "get", "reservationbinding", "tenant-foo-binding")
    assert binding["spec"]["reservationName"] == "tenant-foo-reservation"
    assert binding["spec"]["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/managed-by": "tenant-foo"}
    }
    policies = kubectl_json("-n", "tenant-foo", "get", "networkpolicy")["items"]
    assert sorted(p["metadata"]["name"] for p in policies) == [
        "tenant-foo-allow",
        "tenant-foo-deny-all",
        "tenant-foo-login-ssh",
    ]
    admins = kubectl_json("-n", "tenant-foo", "get", "rolebinding", "tenant-foo-tenant-admins")
    assert admins["subjects"][0]["name"] == "tenant-foo-admins"
    # The runbook's sidebar: the bind Secret must exist in the tenant's namespace, same password.
    copied = kubectl_json("-n", "tenant-foo", "get", "secret", "ldap-bind-creds")["data"]
    assert copied == kubectl_json("-n", "auth", "get", "secret", "ldap-bind-creds")["data"]


ADMIN = ("--as=alice", "--as-group=tenant-foo-admins")
STACK_OBJECTS = (
    "networkpolicies,reservationbindings,resourcequotas,limitranges,rolebindings,roles,secrets,"
    "persistentvolumeclaims"
)


def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`kubectl <args>` whatever its exit status."""
    return subprocess.run(
        ["kubectl", *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def stack_objects() -> dict[tuple[str, str], str]:
    """(kind, name) -> resourceVersion of every object of the stack's kinds in the namespace:
    any write to one changes its resourceVersion."""
    items = kubectl_json("-n", "tenant-foo", "get", STACK_OBJECTS)["items"]
    return {(i["kind"], i["metadata"]["name"]): i["metadata"]["resourceVersion"] for i in items}


@pytest.mark.parametrize(
    ("verb", "resource", "allowed"),
    [
        # What the vendor page expects of tenant admins: deploy, delete pods, read secrets.
        ("create", "deployments.apps", "yes"),
        ("delete", "pods", "yes"),
        ("create", "pods/exec", "yes"),
        ("get", "secrets", "yes"),
        ("create", "secrets", "yes"),
        ("get", "networkpolicies.networking.k8s.io", "yes"),
        # What isolates the tenant.
        ("delete", "networkpolicies.networking.k8s.io", "no"),
        ("create", "networkpolicies.networking.k8s.io", "no"),
        ("patch", "networkpolicies.networking.k8s.io", "no"),
        ("delete", "reservationbindings.scheduling.example.io", "no"),
        ("update", "resourcequotas", "no"),
        ("delete", "limitranges", "no"),
        ("create", "rolebindings.rbac.authorization.k8s.io", "no"),
        ("escalate", "roles.rbac.authorization.k8s.io", "no"),
    ],
)
def test_step_3_admins_rights_in_their_namespace(
    foo: Onboarded, verb: str, resource: str, allowed: str
) -> None:
    said = kubectl("auth", "can-i", verb, resource, "--namespace=tenant-foo", *ADMIN)
    assert said.stdout.strip() == allowed, said.stdout + said.stderr


def test_step_3_the_admins_rights_are_the_ones_the_docs_list(foo: Onboarded) -> None:
    said = kubectl("auth", "can-i", "--list", "--namespace=tenant-foo", *ADMIN)
    assert said.returncode == 0, said.stderr
    page = (ROOT / "docs" / "isolation.md").read_text()
    listed = page.split("```text\n", 1)[1].split("```", 1)[0]
    assert said.stdout == listed, said.stdout


def test_step_3_admins_cannot_undo_their_isolation_and_still_run_their_workloads(
    foo: Onboarded,
) -> None:
    before = stack_objects()
    ns = "--namespace=tenant-foo"
    refused = kubectl("delete", "networkpolicy", "tenant-foo-deny-all", ns, *ADMIN)
    assert refused.returncode != 0
    assert "Forbidden" in refused.stderr, refused.stderr
    # RBAC lets admins write Secrets and claims; the admission policy keeps the stack's own.
    for attempt in (
        ("delete", "secret", "ldap-bind-creds"),
        ("delete", "secret", "weka-tenant-foo-creds"),
        ("annotate", "secret", "tenant-foo-authorized-keys", "pulumi.com/patchForce-"),
        ("label", "secret", "tenant-foo-authorized-keys", "mine=yes"),
        ("delete", "persistentvolumeclaim", "training-scratch"),
    ):
        refused = kubectl(*attempt, ns, *ADMIN)
        assert refused.returncode != 0, attempt
        assert (
            "this object belongs to tenant tenant-foo's stack, which the group tenant-foo-admins "
            "may read but not change or delete"
        ) in refused.stderr, refused.stderr
    assert stack_objects() == before
    # Their own Secret is theirs to make, change and delete; their workloads theirs to run.
    made = kubectl("create", "secret", "generic", "wandb", "--from-literal=k=v", ns, *ADMIN)
    assert made.returncode == 0, made.stderr
    for own in (
        ("label", "secret", "wandb", "team=ml"),
        ("get", "secret", "ldap-bind-creds"),
        ("create", "deployment", "train", "--image=trainer:1", "--dry-run=server"),
        ("delete", "secret", "wandb"),
    ):
        done = kubectl(*own, ns, *ADMIN)
        assert done.returncode == 0, (own, done.stderr)


# Pod Security's restricted profile, which the namespace enforces: what every pod here carries.
_POD = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "train",
            "image": "trainer:1",
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            },
        }
    ],
}
_SELECTOR = {"matchLabels": {"app": "train"}}
_TEMPLATE = {"metadata": {"labels": {"app": "train"}}}


def workload(kind: str, **pod: Any) -> dict[str, Any]:
    """A `kind` (Pod or a workload) named `train` whose pod spec is restricted's plus `pod`."""
    spec = {**_POD, **pod}
    api = {"Pod": "v1", "Job": "batch/v1", "CronJob": "batch/v1"}.get(kind, "apps/v1")
    body: dict[str, Any] = {"spec": spec}
    if kind == "Job":
        body = {"spec": {"template": {**_TEMPLATE, "spec": {**spec, "restartPolicy": "Never"}}}}
    elif kind == "CronJob":
        job = {"template": {**_TEMPLATE, "spec": {**spec, "restartPolicy": "Never"}}}
        body = {"spec": {"schedule": "@daily", "jobTemplate": {"spec": job}}}
    elif kind != "Pod":
        body = {"spec": {"selector": _SELECTOR, "template": {**_TEMPLATE, "spec": spec}}}
        if kind == "StatefulSet":
            body["spec"]["serviceName"] = "train"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": "train"}, **body}


def attached(manifest: dict[str, Any], networks: str) -> dict[str, Any]:
    """`manifest` whose pods name `networks` for Multus (k8s.v1.cni.cncf.io/networks)."""
    spec = manifest["spec"]
    holder = (
        manifest
        if manifest["kind"] == "Pod"
        else spec["jobTemplate"]["spec"]["template"]
        if manifest["kind"] == "CronJob"
        else spec["template"]
    )
    # A copy: the templates share one metadata mapping.
    annotations = {"k8s.v1.cni.cncf.io/networks": networks}
    holder["metadata"] = {**holder["metadata"], "annotations": annotations}
    return manifest


def service(**spec: Any) -> dict[str, Any]:
    ports = [{"port": 8080}] if spec.get("type") != "ExternalName" else []
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "train", "annotations": spec.pop("annotations", {})},
        "spec": {"selector": {"app": "train"}, "ports": ports, **spec},
    }


def ingress(host: str, tls_host: str) -> dict[str, Any]:
    backend = {"service": {"name": "train", "port": {"number": 8080}}}
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "train"},
        "spec": {
            "rules": [{"host": host, "http": {"paths": [path]}}],
            "tls": [{"hosts": [tls_host], "secretName": "train-tls"}],
        },
    }


BAR = "tenant-bar"
OWN_TOLERATION = {"key": "reserved.tenant", "value": "tenant-foo", "effect": "NoSchedule"}
DNS = "external-dns.alpha.kubernetes.io/hostname"


def node_affinity(operator: str, *values: str, preferred: bool = False) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": "reserved.tenant", "operator": operator}
    if values:
        expression["values"] = list(values)
    term = {"matchExpressions": [expression]}
    if preferred:
        rule: dict[str, Any] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term}]
        }
    else:
        rule = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    return {"nodeAffinity": rule}


# What an admin might try, and the start of the API server's refusal.
OUT_OF_BOUNDS = [
    (workload("Pod", nodeName="gpu-14"), "a pod may not name its node"),
    (workload("Deployment", nodeName="gpu-14"), "a pod template may not name its node"),
    (
        workload("Job", tolerations=[{**OWN_TOLERATION, "value": BAR}]),
        "a pod may tolerate the taint reserved.tenant only for its own tenant",
    ),
    (
        workload("CronJob", tolerations=[{"operator": "Exists"}]),
        "a pod may tolerate the taint reserved.tenant only for its own tenant",
    ),
    (
        workload("DaemonSet", nodeSelector={"reserved.tenant": BAR}),
        "a pod may select nodes by reserved.tenant only for its own tenant's (tenant-foo)",
    ),
    (
        workload("StatefulSet", affinity=node_affinity("In", BAR)),
        "a pod's node affinity may name reserved.tenant only as 'In' its own tenant",
    ),
    (
        workload("ReplicaSet", affinity=node_affinity("Exists", preferred=True)),
        "a pod's node affinity may name reserved.tenant only as 'In' its own tenant",
    ),
    (
        attached(workload("Pod"), "tenant-bar/tenant-bar-ib"),
        "a pod may attach networks of its own namespace only",
    ),
    (
        attached(workload("Job"), '[{"name": "tenant-bar-ib", "namespace": "tenant-bar"}]'),
        "a pod may attach networks of its own namespace only",
    ),
    (service(type="LoadBalancer"), "a Service of the tenant's admins stays inside the cluster"),
    (service(type="NodePort"), "a Service of the tenant's admins stays inside the cluster"),
    (
        service(type="ExternalName", externalName="auth.example.internal"),
        "a Service of the tenant's admins stays inside the cluster",
    ),
    (
        service(externalIPs=["10.0.0.9"]),
        "a Service of the tenant's admins stays inside the cluster",
    ),
    (
        service(
            annotations={DNS: "app.tenant-foo.example.internal,login.tenant-bar.example.internal"}
        ),
        "must be under the tenant's own subdomain tenant-foo.example.internal",
    ),
    (
        ingress("login.example.internal", "app.tenant-foo.example.internal"),
        "an Ingress's hosts must be under the tenant's own subdomain tenant-foo.example.internal",
    ),
    (
        ingress("app.tenant-foo.example.internal", "evil-tenant-foo.example.internal"),
        "an Ingress's hosts must be under the tenant's own subdomain tenant-foo.example.internal",
    ),
]
WITHIN = [
    attached(workload("Pod"), "tenant-foo-ib"),
    workload(
        "Deployment",
        tolerations=[OWN_TOLERATION],
        nodeSelector={"reserved.tenant": "tenant-foo"},
        affinity=node_affinity("In", "tenant-foo"),
    ),
    service(annotations={DNS: "app.tenant-foo.example.internal"}),
    ingress("app.tenant-foo.example.internal", "tenant-foo.example.internal"),
]


def create(manifest: dict[str, Any], *identity: str) -> subprocess.CompletedProcess[str]:
    """`kubectl create --dry-run=server` of `manifest` in tenant-foo's namespace: admission
    runs, nothing is made."""
    return kubectl(
        "create", "--dry-run=server", "--namespace=tenant-foo", "-f", "-", *identity,
        stdin=json.dumps(manifest),
    )  # fmt: skip


def test_step_3_admins_cannot_run_pods_on_another_tenants_nodes_or_claim_others_names(
    foo: Onboarded,
) -> None:
    for manifest, refusal in OUT_OF_BOUNDS:
        refused = create(manifest, *ADMIN)
        what = f"{manifest['kind']} {manifest['spec']}"
        assert refused.returncode != 0, what
        assert refusal in refused.stderr, (what, refused.stderr)
    for manifest in WITHIN:
        allowed = create(manifest, *ADMIN)
        assert allowed.returncode == 0, (manifest, allowed.stderr)
    # Where pods run is refused whoever asks: the API server holds it, not the admins' rights.
    refused = create(workload("Pod", nodeName="gpu-14"))
    assert "a pod may not name its node" in refused.stderr, refused.stderr


LOGIN_POD = "login-tenant-foo-0"


def running_pod(name: str, *identity: str) -> None:
    """A pod `name` made by `identity` (the operator when none), running on the real node as
    restricted's rules allow: a shell that sleeps, as uid 1000."""
    pod = workload("Pod")
    pod["metadata"] = {"name": name}
    spec = pod["spec"]  # a shallow copy of _POD's: replace, never change, what it holds
    spec["securityContext"] = {**spec["securityContext"], "runAsUser": 1000}
    [container] = spec["containers"]
    spec["containers"] = [
        {**container, "image": TOOLS_IMAGE, "imagePullPolicy": "Never", "command": ["sleep", "600"]}
    ]
    made = kubectl("create", "--namespace=tenant-foo", "-f", "-", *identity, stdin=json.dumps(pod))
    assert made.returncode == 0, made.stderr
    ready = kubectl("--namespace=tenant-foo", "wait", "--for=condition=Ready", f"pod/{name}",
                    "--timeout=120s")  # fmt: skip
    assert ready.returncode == 0, ready.stderr


def test_step_3_admins_cannot_reach_into_rewrite_or_imitate_the_login_releases_pods(
    foo: Onboarded,
) -> None:
    ns = "--namespace=tenant-foo"
    # The release's own pod, as the platform's Helm controller runs it.
    ready = kubectl(ns, "wait", "--for=condition=Ready", f"pod/{LOGIN_POD}", "--timeout=120s")
    assert ready.returncode == 0, ready.stderr
    running_pod("train", *ADMIN)
    try:
        for connect in (
            ("exec", LOGIN_POD, "--", "id"),
            ("attach", LOGIN_POD),
            ("port-forward", f"pod/{LOGIN_POD}", "2222:22"),
        ):
            refused = kubectl(ns, *ADMIN, *connect)  # flags first: `--` ends them
            assert refused.returncode != 0, connect
            assert (
                "the pods of the login release login-tenant-foo are the platform's"
            ) in refused.stderr, (connect, refused.stderr)
        # Their own pod is theirs to exec into.
        own = kubectl(ns, *ADMIN, "exec", "train", "--", "id", "-u")
        assert (own.returncode, own.stdout) == (0, "1000\n"), own.stderr
        for attempt in (
            ("label", "pod", LOGIN_POD, "app.kubernetes.io/instance-"),
            ("annotate", "pod", LOGIN_POD, "debug=yes"),
            ("delete", "pod", LOGIN_POD),
        ):
            refused = kubectl(*attempt, ns, *ADMIN)
            assert refused.returncode != 0, attempt
            assert (
                "this object is the login release login-tenant-foo's, which the tenant's admins "
                "may not change or delete"
            ) in refused.stderr, (attempt, refused.stderr)
        # Nor a pod or workload of theirs under the release's names, which exec would reach.
        for kind, name in (("Pod", "login-tenant-foo-1"), ("StatefulSet", "login-tenant-foo")):
            manifest = workload(kind)
            manifest["metadata"]["name"] = name
            refused = create(manifest, *ADMIN)
            assert (
                "names login-tenant-foo and login-tenant-foo-... are the login release's"
            ) in refused.stderr, (kind, refused.stderr)
    finally:
        kubectl("delete", "pod", "train", ns, "--force", "--grace-period=0")


PEER = """
apiVersion: v1
kind: Pod
metadata: {name: peer, namespace: NAMESPACE}
spec:
  containers:
    - name: web
      image: IMAGE
      imagePullPolicy: Never
      command: [httpd, -f, -p, "8080", -h, /etc]
"""


def test_step_3d_the_network_policies_are_enforced_on_the_node(foo: Onboarded) -> None:
    """kube-router, on the real node, enforces the stack's deny-all and allow policies: a pod of
    tenant-foo reaches its own namespace, DNS, the LDAP outpost on 636 and slurmctld on 6817,
    and nothing of another namespace; another namespace's pod (one with no policy of its own,
    the worst neighbour) cannot reach tenant-foo's pods, the login pod's sshd included. Each
    outcome is waited for: the agent applies a new pod's rules a moment after it starts."""
    ns = "--namespace=tenant-foo"
    other = f"other-{os.urandom(3).hex()}"
    assert kubectl("create", "namespace", other).returncode == 0
    try:
        peer = PEER.replace("NAMESPACE", other).replace("IMAGE", TOOLS_IMAGE)
        assert kubectl("apply", "-f", "-", stdin=peer).returncode == 0
        running_pod("train")
        for namespace, pod in ((other, "peer"), ("tenant-foo", LOGIN_POD)):
            ready = kubectl(f"--namespace={namespace}", "wait", "--for=condition=Ready",
                            f"pod/{pod}", "--timeout=120s")  # fmt: skip
            assert ready.returncode == 0, ready.stderr
        peer_ip = kubectl_json(f"--namespace={other}", "get", "pod", "peer")["status"]["podIP"]
        login_ip = kubectl_json(ns, "get", "pod", LOGIN_POD)["status"]["podIP"]

        def reaches(namespace: str, pod: str, host: str, port: int) -> bool:
            probe = f"echo | nc -w 2 {host} {port} >/dev/null 2>&1; echo $?"
            done = kubectl(f"--namespace={namespace}", "exec", pod, "--", "sh", "-c", probe)
            assert done.returncode == 0, done.stderr
            return done.stdout == "0\n"

        def service_ip(namespace: str, name: str) -> str:
            found = kubectl_json(f"--namespace={namespace}", "get", "service", name)
            return str(found["spec"]["clusterIP"])

        expected = {
            # tenant-foo's own pods, and what its egress rules name.
            ("tenant-foo", "train", login_ip, 22): True,
            ("tenant-foo", "train", service_ip("auth", "authentik-ldap-outpost"), 636): True,
            ("tenant-foo", "train", service_ip("slurm-control", "slurmctld"), 6817): True,
            # The API server is no destination of theirs.
            ("tenant-foo", "train", service_ip("default", "kubernetes"), 443): False,
            ("tenant-foo", "train", peer_ip, 8080): False,
            (other, "peer", login_ip, 22): False,
            (other, "peer", peer_ip, 8080): True,
        }
        deadline = time.monotonic() + 30
        while (
            seen := {probe: reaches(*probe) for probe in expected}
        ) != expected and time.monotonic() < deadline:
            time.sleep(0.5)
        assert seen == expected
        # Names resolve: the cluster DNS in kube-system is theirs on port 53.
        named = kubectl(
            ns, "exec", "train", "--", "nslookup", "slurmctld.slurm-control.svc.cluster.local"
        )
        assert named.returncode == 0, named.stdout + named.stderr
        # The login pod (whose image has bash's /dev/tcp, not nc) reaches the outpost, as its
        # users' names resolve, and nothing of the other namespace.
        login = kubectl(ns, "exec", LOGIN_POD, "--", "timeout", "3", "bash", "-c",
                        f"echo > /dev/tcp/{peer_ip}/8080")  # fmt: skip
        assert login.returncode != 0
        assert kubectl(ns, "exec", LOGIN_POD, "--", "getent", "passwd", "alice").returncode == 0
    finally:
        kubectl("delete", "pod", "train", ns, "--force", "--grace-period=0")
        kubectl("delete", "namespace", other, "--wait=false")


LOGIN_RUNTIME = "gpu-tenants-login"


def test_step_5a_the_login_release_runs_sshd_with_its_host_key_and_the_users_keys(
    foo: Onboarded,
) -> None:
    ns = "--namespace=tenant-foo"
    pods = ("login-tenant-foo-0", "login-tenant-foo-1")  # the spec's two replicas
    ready = kubectl(ns, "wait", "--for=condition=Ready", *(f"pod/{p}" for p in pods),
                    "--timeout=120s")  # fmt: skip
    assert ready.returncode == 0, ready.stderr
    pod = kubectl_json(ns, "get", "pod", LOGIN_POD)
    assert (pod["spec"]["nodeName"], pod["spec"]["runtimeClassName"]) == ("cpu-01", LOGIN_RUNTIME)

    def inside(*command: str) -> str:
        done = kubectl(ns, "exec", LOGIN_POD, "--", *command)
        assert done.returncode == 0, (command, done.stderr)
        return done.stdout

    # sshd answers with the release's own host key, made once and kept in its Secret.
    secret = kubectl_json(ns, "get", "secret", "login-tenant-foo-host-keys")
    public = base64.b64decode(secret["data"]["ssh_host_ed25519_key.pub"]).decode().split()[1]
    assert public in inside("ssh-keyscan", "-t", "ed25519", "127.0.0.1")
    # Keys only, and each user's keys are the authorized-keys Secret's entry of their name.
    effective = inside("/usr/sbin/sshd", "-T", "-f", "/etc/sunk-login/sshd_config").splitlines()
    for setting in ("passwordauthentication no", "permitrootlogin no",
                    "authorizedkeyscommand /bin/cat /etc/ssh/authorized_keys.d/%u"):  # fmt: skip
        assert setting in effective, setting
    keys = base64.b64decode(secret_data("tenant-foo-authorized-keys")["alice"]).decode()
    assert keys.startswith("ssh-ed25519 ")
    assert inside("cat", "/etc/ssh/authorized_keys.d/alice") == keys


def test_step_5b_each_user_and_the_group_resolve_in_the_login_pod_through_ldap(
    foo: Onboarded,
) -> None:
    """nslcd in the login pod asks the outpost (the Authentik emulator's LDAP server, over ldaps
    through the outpost's Service) as the runbook's step 5b checks: the numbers are the spec's."""

    def getent(database: str, key: str) -> list[str]:
        done = kubectl("--namespace=tenant-foo", "exec", LOGIN_POD, "--", "getent", database, key)
        assert done.returncode == 0, (database, key, done.stderr)
        return done.stdout.strip().split(":")

    for user, uid in (("alice", "2147"), ("bob", "2148"), ("carol", "2149")):
        name, _, number, group, _, home, _ = getent("passwd", user)
        assert (name, number, group, home) == (user, uid, "4099", f"/home/{user}")
    name, _, number, members = getent("group", "tenant-foo")
    assert (name, number, sorted(members.split(","))) == (
        "tenant-foo",
        "4099",
        ["alice", "bob", "carol"],
    )


def test_step_5c_a_user_logs_in_over_ssh_with_their_key_as_their_ldap_uid(
    foo: Onboarded, sandbox: SandboxLayout, tmp_path: Path
) -> None:
    """From this machine, to the login host's name, as a user does: the name resolves (the
    zone external-dns writes) to the address the load balancer gave the login Service, reached
    from an address outside the cluster (the sandbox's users' address, which no namespace's
    rule lets in, only the stack's login-ssh policy), checking the release's host key under
    that name as a user's known_hosts would."""
    hostname = "login.tenant-foo.example.internal"
    dns = f"127.0.0.1:{sandbox.ports.dns}"
    deadline = time.monotonic() + 30
    while not (addresses := resolved(hostname, dns)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert addresses == [ingress["ip"] for ingress in _login_ingress()], nslookup(hostname, dns)
    [address] = addresses
    host_key = base64.b64decode(
        secret_data("login-tenant-foo-host-keys")["ssh_host_ed25519_key.pub"]
    )
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"{hostname} {' '.join(host_key.decode().split()[:2])}\n")

    def ssh(user: str, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ssh", "-i", str(foo.alice_key), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
             "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}",
             "-o", f"HostKeyAlias={hostname}", "-o", "ConnectTimeout=20",
             "-o", f"BindAddress={sandbox.node.users_address}", f"{user}@{address}", *command],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    logged_in = ssh("alice", "id")
    assert logged_in.returncode == 0, logged_in.stderr
    assert logged_in.stdout.split()[:2] == ["uid=2147(alice)", "gid=4099(tenant-foo)"]
    # Runbook 5b's sinfo, as alice: the pod's Slurm client reaches slurmctld through its
    # Service and signs with munge.
    partition = ssh("alice", "sinfo", "--noheader", "--partition=tenant-foo", "--format=%P,%D")
    assert partition.returncode == 0, partition.stderr
    assert partition.stdout.split() == ["tenant-foo,8"]
    # bob's keys are his own: alice's key does not open his account.
    refused = ssh("bob", "id")
    assert refused.returncode == 255
    assert "Permission denied (publickey)" in refused.stderr
    # Disabled in Authentik (as offboarding's revocation does), alice still resolves, so her
    # files keep their owner, but her key no longer logs her in.
    with authentik() as api:
        pk = authentik_user("alice")["pk"]
        api.patch(f"/core/users/{pk}/", json={"is_active": False}).raise_for_status()
        try:
            # The outpost publishes the change a moment after Authentik made it.
            deadline = time.monotonic() + 10
            while (disabled := ssh("alice", "id")).returncode == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
            looked_up = kubectl(
                "-n", "tenant-foo", "exec", LOGIN_POD, "--", "getent", "passwd", "alice"
            )
        finally:
            api.patch(f"/core/users/{pk}/", json={"is_active": True}).raise_for_status()
    assert disabled.returncode == 255
    assert "LDAP authorisation check failed" in disabled.stderr
    assert looked_up.stdout.split(":")[2] == "2147"


def _login_ingress() -> list[dict[str, str]]:
    service = kubectl_json("-n", "tenant-foo", "get", "service", "login-tenant-foo")
    ingress: list[dict[str, str]] = service["status"].get("loadBalancer", {}).get("ingress", [])
    return ingress


def as_root(name: str, runtime_class: str | None = None) -> dict[str, Any]:
    """A pod `name` as sshd runs: root, which the namespace's Pod Security level refuses."""
    pod = workload("Pod", securityContext={"runAsUser": 0})
    pod["metadata"]["name"] = name
    if runtime_class:
        pod["spec"]["runtimeClassName"] = runtime_class
    return pod


def test_step_3_only_the_login_release_runs_under_the_runtime_class_pod_security_exempts(
    foo: Onboarded,
) -> None:
    # The namespace enforces `restricted`: a root pod is refused, even the platform's.
    release_pod = "login-tenant-foo-7"  # a name of the release's that no replica has yet
    refused = create(as_root(release_pod))
    assert 'violates PodSecurity "restricted:latest"' in refused.stderr, refused.stderr
    # Under the RuntimeClass the API server's Pod Security configuration exempts, the release's
    # pod (made by the platform) is admitted...
    admitted = create(as_root(release_pod, LOGIN_RUNTIME))
    assert admitted.returncode == 0, admitted.stderr
    # ...and nothing else: not the platform's other pods, not the admins' pods or templates.
    refusal = f"RuntimeClass {LOGIN_RUNTIME} is the login release login-tenant-foo's"
    assert refusal in create(as_root("debug", LOGIN_RUNTIME)).stderr
    for kind in ("Pod", "Deployment", "Job", "CronJob"):
        manifest = workload(kind)
        template = (
            manifest["spec"]
            if kind == "Pod"
            else manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            if kind == "CronJob"
            else manifest["spec"]["template"]["spec"]
        )
        template["runtimeClassName"] = LOGIN_RUNTIME
        refused = create(manifest, *ADMIN)
        assert refusal in refused.stderr, (kind, refused.stderr)


CLAIM = """{{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
  "metadata": {{"name": "borrowed", "namespace": "tenant-foo"}},
  "spec": {{"accessModes": ["ReadWriteMany"], "storageClassName": "{storage_class}",
           "resources": {{"requests": {{"storage": "1Gi"}}}}}}}}"""


def test_step_3_a_claim_may_use_the_tenants_storage_class_only(foo: Onboarded) -> None:
    for storage_class in ("weka-tenant-bar", "local-path"):
        # Refused to the operator too: the API server holds it, not the tenant's good manners.
        refused = kubectl("create", "-f", "-", stdin=CLAIM.format(storage_class=storage_class))
        assert refused.returncode != 0
        assert (
            "a PersistentVolumeClaim in namespace tenant-foo uses StorageClass weka-tenant-foo"
        ) in refused.stderr, refused.stderr
    own = CLAIM.format(storage_class="weka-tenant-foo")
    allowed = kubectl("create", "--dry-run=server", "-f", "-", *ADMIN, stdin=own)
    assert allowed.returncode == 0, allowed.stderr


def test_step_3_the_storage_class_names_the_claims_own_namespace_for_its_secret(
    foo: Onboarded,
) -> None:
    parameters = kubectl_json("get", "storageclass", "weka-tenant-foo")["parameters"]
    secrets = {k: v for k, v in parameters.items() if k.startswith("csi.storage.k8s.io/")}
    assert set(secrets.values()) == {"weka-${pvc.namespace}-creds", "${pvc.namespace}"}
    assert len(secrets) == 10  # name and namespace for each of the five CSI calls


def test_step_2_the_group_and_users_with_pinned_numbers(foo: Onboarded) -> None:
    # Step 2: the group under `tenants` and the users, numbers pinned as strings.
    with authentik() as api:
        group = api.get("/core/groups/", params={"name": "tenant-foo"}).json()["results"][0]
        parent = api.get(f"/core/groups/{group['parent']}/").json()
    assert parent["name"] == "tenants"
    assert group["attributes"]["gidNumber"] == "4099"
    assert group["attributes"]["tenant_slug"] == "tenant-foo"
    alice = authentik_user("alice")
    assert alice["attributes"]["uidNumber"] == "2147"
    assert alice["attributes"]["gidNumber"] == "4099"
    assert alice["attributes"]["ssh_keys"].startswith("ssh-ed25519 ")
    assert alice["is_active"] is True
    assert group["pk"] in alice["groups"]
    assert sorted(u["username"] for u in group["users_obj"]) == ["alice", "bob", "carol"]


def test_step_4_slurm_accounting_and_partition(foo: Onboarded) -> None:
    # Step 4: Slurm, read back with its own tools.
    assert sacctmgr(
        "show", "assoc", "account=tenant-foo", "format=Account,User,Fairshare,GrpTRES,GrpJobs"
    ) == ["tenant-foo||300|gres/gpu=64|200"]
    users = sacctmgr(
        "show", "assoc", "account=ml-team-foo", "format=User,MaxJobs,GrpTRESMins,DefaultQOS"
    )
    # The first row is the sub-account's own association (no user).
    assert sorted(u for u in users if not u.startswith("|")) == [
        "alice|20|gres/gpu=240000|normal-foo",
        "bob|20|gres/gpu=240000|normal-foo",
        "carol|20|gres/gpu=240000|normal-foo",
    ]
    assert sorted(
        sacctmgr(
            "show",
            "qos",
            "normal-foo,interactive-foo",
            "format=Name,Priority,GrpTRES,MaxWall,Flags,PreemptMode,PreemptExemptTime",
        )
    ) == [
        # PreemptMode=OFF is stored as the cluster's mode; never preempted for its wall limit.
        "interactive-foo|200|gres/gpu=8|04:00:00||cluster|04:00:00",
        "normal-foo|100|gres/gpu=64|1-00:00:00|DenyOnLimit|cluster|",
    ]
    # Runbook 4d: the line went into the Slurm operator's ConfigMap, then reached slurmctld.
    configmap = kubectl_json("-n", "slurm-control", "get", "configmap", "slurm-partitions")
    assert "PartitionName=tenant-foo Nodes=gpu-[01-08]" in configmap["data"]["partitions.conf"]
    partition = run("scontrol", "show", "partition", "tenant-foo")
    for field in (
        "Nodes=gpu-[01-08]",
        "AllowAccounts=ml-team-foo,tenant-foo",  # every account of the tenant, sorted
        "MaxTime=1-00:00:00",
        "OverSubscribe=EXCLUSIVE",
    ):
        assert field in partition


def test_step_6_the_weka_organization_and_what_kubernetes_gets_of_it(foo: Onboarded) -> None:
    # Step 6: the Weka organization and what Kubernetes gets of it.
    org = weka_org("tenant-foo")
    assert org is not None
    assert org["total_quota"] == 55 * 10**12
    csi = kubectl_json("-n", "tenant-foo", "get", "secret", "weka-tenant-foo-creds")["data"]
    assert sorted(csi) == [
        "caCertificate",
        "endpoints",
        "organization",
        "password",
        "scheme",
        "username",
    ]
    storage_class = kubectl_json("get", "storageclass", "weka-tenant-foo")
    assert storage_class["provisioner"] == "csi.weka.io"
    assert storage_class["reclaimPolicy"] == "Retain"
    params = storage_class["parameters"]
    # Templates the external-provisioner fills in with the claim's namespace: for a claim of
    # tenant-foo's, its own Secret, the one above.
    name = params["csi.storage.k8s.io/provisioner-secret-name"]
    namespace = params["csi.storage.k8s.io/provisioner-secret-namespace"]
    claim_namespace = {"${pvc.namespace}": "tenant-foo"}
    assert (claim_namespace.get(namespace), name.replace("${pvc.namespace}", "tenant-foo")) == (
        "tenant-foo",
        "weka-tenant-foo-creds",
    )
    assert params["filesystemName"] == "tenant-foo-scratch"
    pvc = kubectl_json("-n", "tenant-foo", "get", "pvc", "training-scratch")
    assert pvc["spec"]["storageClassName"] == "weka-tenant-foo"


def test_step_4e_home_and_scratch_directories_with_their_quotas(foo: Onboarded) -> None:
    # Step 4e: each user's home is a directory of the tenant's home filesystem, made through the
    # mount with the user's pinned numbers, each with its quota; scratch has the tenant's quota.
    assert owner_and_mode(mounted("tenant-foo", "tenant-foo-home")) == (0, 4099, "0750")
    for user, uid in (("alice", 2147), ("bob", 2148), ("carol", 2149)):
        home = mounted("tenant-foo", "tenant-foo-home", user)
        assert owner_and_mode(home) == (uid, 4099, "0700")
    scratch = mounted("tenant-foo", "tenant-foo-scratch", "tenant-foo")
    assert owner_and_mode(scratch) == (0, 4099, "2770")
    org_resource = next(
        r
        for r in (foo.stack.export_stack().deployment or {})["resources"]
        if r["type"] == "pulumi-python:dynamic/weka:Organization"
    )
    org_admin = (
        "tenant-foo",
        org_resource["outputs"]["admin_username"],
        revealed(org_resource["outputs"]["admin_password"]),
    )
    with weka(org_admin) as api:
        assert weka_quotas(api, "tenant-foo-home") == {
            f"/{user}": (90 * 10**9, 100 * 10**9, "tenant-foo")
            for user in ("alice", "bob", "carol")
        }
        assert weka_quotas(api, "tenant-foo-scratch") == {
            "/tenant-foo": (45 * 10**12, 50 * 10**12, "tenant-foo")
        }


def test_step_5_the_login_release_and_its_keys(foo: Onboarded) -> None:
    # Step 5: the login release and the keys it mounts.
    keys = kubectl_json("-n", "tenant-foo", "get", "secret", "tenant-foo-authorized-keys")
    assert sorted(keys["data"]) == ["alice", "bob", "carol"]
    release = kubectl_json("-n", "tenant-foo", "get", "helmrelease", "login-tenant-foo")
    values = release["spec"]["values"]
    assert values["ldap"]["bindPasswordSecret"] == "ldap-bind-creds"
    assert values["sshKeysSecret"] == "tenant-foo-authorized-keys"
    annotations = values["service"]["annotations"]
    assert annotations["external-dns.alpha.kubernetes.io/hostname"] == (
        "login.tenant-foo.example.internal"
    )


def test_no_secret_in_state_output_or_logs(foo: Onboarded, sandbox: SandboxLayout) -> None:
    # No secret is in the state in clear: the backends' credentials, the LDAP bind password the
    # stack copied, and the passwords it generated for Weka's org admin and CSI user. (The
    # Automation API's export_stack shows secrets, so read what the backend stores, and what
    # `pulumi stack export` prints.)
    backend = Path(foo.env["PULUMI_BACKEND_URL"].removeprefix("file://"))
    state = "".join(f.read_text() for f in backend.rglob("*.json"))
    state += run_pulumi(foo.env, foo.project, "stack", "export", "--stack", "tenant-foo")
    secrets = {
        "authentik token": Path(os.environ["AUTHENTIK_TOKEN_FILE"]).read_text().strip(),
        "weka admin password": Path(os.environ["WEKA_PASSWORD_FILE"]).read_text().strip(),
        "ldap bind password": base64.b64decode(secret_data("ldap-bind-creds")["password"]).decode(),
        "weka csi password": base64.b64decode(
            secret_data("weka-tenant-foo-creds")["password"]
        ).decode(),
    }
    # ...nor in what the engine printed (the providers' logs come through it), nor in the logs
    # the sandbox's emulators wrote.
    printed = foo.printed
    logs = "".join(
        f.read_text(errors="replace") for f in (sandbox.root / "logs").glob("*-emulator.log")
    )
    for what, value in secrets.items():
        assert len(value) >= 8, what
        assert value not in state, f"the {what} is in the state in clear"
        assert value not in printed, f"the {what} was printed"
        assert value not in logs, f"the {what} is in an emulator's log"


def test_a_second_preview_plans_nothing(foo: Onboarded) -> None:
    # Nothing drifted: a second preview plans nothing (the run fails otherwise).
    foo.stack.preview(expect_no_changes=True)


def test_destroy_undoes_every_layer(foo: Onboarded) -> None:
    destroy = foo.stack.destroy()
    foo.destroyed = True
    assert destroy.summary.result == "succeeded"
    assert labelled("tenant-foo") == []
    assert sacctmgr("show", "assoc", "account=tenant-foo", "format=Account") == []
    assert sacctmgr("show", "qos", "normal-foo", "format=Name") == []
    assert (
        "not found"
        in subprocess.run(
            ["scontrol", "show", "partition", "tenant-foo"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    )
    assert weka_org("tenant-foo") is None
    # Identity is revoked, never hard-deleted: the users stay, disabled and out of the group.
    alice = authentik_user("alice")
    assert alice["is_active"] is False
    assert alice["groups"] == []
    with authentik() as api:
        assert api.get("/core/groups/", params={"name": "tenant-foo"}).json()["results"] == []
    node = kubectl_json("get", "node", "gpu-05")
    assert "reserved.tenant" not in node["metadata"]["labels"]
    assert not [t for t in node["spec"].get("taints") or [] if t["key"] == "reserved.tenant"]
    gone = subprocess.run(
        ["kubectl", "get", "namespace", "tenant-foo"], capture_output=True, text=True, check=False
    )
    assert "NotFound" in gone.stderr
