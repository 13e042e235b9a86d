"""A stand-in for the platform's Helm controller, for the one chart tenant stacks install: it
renders each HelmRelease of chart `sunk-login` into what that chart makes, and keeps it so.

What the chart makes is known only in part. The runbook's commands name the StatefulSet's first
pod `login-<slug>-0`, so the StatefulSet is `login-<slug>`; the values name the rest. Guessed,
and written in docs/sandbox.md as guesses: the Service's name (the release's), the ConfigMap
`<release>-config` and the Secret `<release>-host-keys`, the files' places in the pod, and the
key `password` of the LDAP bind Secret. Every object carries the release's instance label (which
the tenant's admission policy reserves to the platform) and an owner reference to the release,
so deleting the release deletes them.

Each pod runs the login image (sandbox/kubernetes/login-image.sh): nslcd, then sshd in the
foreground as the container's first process, so a pod stops as soon as it is asked to. The pods
run under the release's RuntimeClass, which Pod Security exempts: sshd runs as root and switches
users.

Like the reservation operator it acts when a release changes (a watch wakes it) and looks again
every second; it writes a release's objects again when the release changed since it last wrote
them, and every RESYNC_SECONDS as Flux's helm-controller does at each interval, which puts back
what someone changed by hand (a StatefulSet scaled down).
A release it fails to render is tried again after a second, then twice as long each time up to
RESYNC_SECONDS, as a controller's work queue backs off, and at once when the release changes;
each failure is logged when its error differs from the one before.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sandbox.kubernetes.client import (
    JSON,
    Changes,
    KubeClient,
    KubeError,
    controller_arguments,
    controller_service,
    identity_client,
    log,
    reconcile_forever,
    resource_path,
)
from sandbox.pki import Pki
from sandbox.service import Service

CHART = "sunk-login"
RELEASES = "/apis/helm.example.io/v1/helmreleases"
INSTANCE_LABEL = "app.kubernetes.io/instance"
# Where the pod finds what the release mounts.
CONFIG_DIR = "/etc/sunk-login"
HOST_KEYS_DIR = "/etc/ssh/host-keys"
AUTHORIZED_KEYS_DIR = "/etc/ssh/authorized_keys.d"
LDAP_SECRET_DIR = "/run/secrets/ldap-bind"
# The CA the outpost's certificate chains to: in the sandbox, the cluster's, which every namespace
# has as this ConfigMap.
CA_CONFIG_MAP = "kube-root-ca.crt"
CA_DIR = "/etc/ldap/outpost-ca"
MUNGE_DIR = "/run/munge"
SSH_PORT = 22
RESYNC_SECONDS = 30.0


def _sshd_config() -> str:
    # A Secret's volume is a world-writable directory, which sshd's StrictModes refuses as an
    # AuthorizedKeysFile's: the keys are read by a command instead, as nobody, from the Secret
    # as the kubelet keeps it current.
    return f"""# Rendered by the login release. Keys only: a user's public keys are the
# Secret's entry of their name, mounted read-only; nobody logs in as root.
Port {SSH_PORT}
HostKey {HOST_KEYS_DIR}/ssh_host_ed25519_key
AuthorizedKeysFile none
AuthorizedKeysCommand /bin/cat {AUTHORIZED_KEYS_DIR}/%u
AuthorizedKeysCommandUser nobody
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
UsePAM yes
X11Forwarding no
AllowTcpForwarding no
PidFile /run/sshd.pid
"""


def _nslcd_config(ldap: JSON) -> str:
    # The bind password is appended by the entry point from the mounted Secret, so it is never
    # in a ConfigMap; nslcd reads the result as root and keeps it 0600. The outpost's uid is a
    # hash of Authentik's: a user's login name is their cn. Groups come from ou=groups only: the
    # outpost also publishes each user as a group of one (ou=virtual-groups) with the user's
    # gidNumber, which the spec pins to the tenant group's, so a lookup of that number could
    # name a user instead of the group. A disabled user still resolves (their files keep an
    # owner) but PAM refuses them: Authentik's ak-active says which.
    return f"""uid nslcd
gid nslcd
uri {ldap["uri"]}
base {ldap["baseDN"]}
base group ou=groups,{ldap["baseDN"]}
binddn {ldap["bindDN"]}
tls_reqcert demand
tls_cacertfile {CA_DIR}/ca.crt
map passwd uid cn
pam_authz_search (&(objectClass=posixAccount)(cn=$username)(ak-active=TRUE))
"""


_NSSWITCH = """passwd: files ldap
group: files ldap
shadow: files ldap
hosts: files dns
"""

_ENTRYPOINT = f"""#!/bin/sh
# The login pod's entry point: nslcd with its bind password, then sshd as this process.
set -eu
umask 077
{{ cat {CONFIG_DIR}/nslcd.conf; printf 'bindpw %s\\n' "$(cat {LDAP_SECRET_DIR}/password)"; }} \\
  > /etc/nslcd.conf
chown root:nslcd /etc/nslcd.conf
chmod 0640 /etc/nslcd.conf
cp {CONFIG_DIR}/nsswitch.conf /etc/nsswitch.conf
mkdir -p /etc/slurm
cp {CONFIG_DIR}/slurm.conf /etc/slurm/slurm.conf
chmod 0644 /etc/nsswitch.conf /etc/slurm/slurm.conf
chmod 0755 /etc/slurm
mkdir -p /run/sshd
# Every user's lookups go through nslcd's socket in here, so not 0700 as the umask would make it.
install -d -o nslcd -g nslcd -m 0755 /run/nslcd
nslcd
exec /usr/sbin/sshd -D -e -f {CONFIG_DIR}/sshd_config
"""


def _owned(release: JSON, kind: str, api_version: str, name: str) -> JSON:
    meta = release["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {
                INSTANCE_LABEL: meta["name"],
                "app.kubernetes.io/name": CHART,
                "app.kubernetes.io/managed-by": "Helm",
            },
            "ownerReferences": [
                {
                    "apiVersion": release["apiVersion"],
                    "kind": release["kind"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
    }


@dataclass(frozen=True)
class Cluster:
    """What the platform gives the chart besides a release's values: its image, the Slurm
    cluster's name and slurmctld's port (the platform's Slurm settings), and the directory of
    the node's munge socket, through which the login pods' Slurm clients sign their requests
    (a hostPath, which only the release's exempt pods may mount: docs/sandbox.md)."""

    image: str
    slurm_cluster: str
    slurmctld_port: int
    munge_dir: Path


def _slurm_config(cluster: Cluster, controller: str) -> str:
    # A client needs no node lines: sinfo, squeue and sbatch ask slurmctld.
    return f"""# Rendered by the login release: the Slurm client's configuration.
ClusterName={cluster.slurm_cluster}
SlurmctldHost={controller.split(".")[0]}({controller})
SlurmctldPort={cluster.slurmctld_port}
AuthType=auth/munge
AuthInfo=socket={MUNGE_DIR}/munge.socket.2
"""


def render(release: JSON, cluster: Cluster) -> list[JSON]:
    """What the chart makes of `release`, but its host key (made once: `host_keys`)."""
    name = release["metadata"]["name"]
    values: JSON = release["spec"].get("values") or {}
    labels = {INSTANCE_LABEL: name, "app.kubernetes.io/name": CHART}
    config = _owned(release, "ConfigMap", "v1", f"{name}-config")
    config["data"] = {
        "sshd_config": _sshd_config(),
        "nslcd.conf": _nslcd_config(values["ldap"]),
        "nsswitch.conf": _NSSWITCH,
        "entrypoint.sh": _ENTRYPOINT,
        "slurm.conf": _slurm_config(cluster, values["slurm"]["controllerHost"]),
    }
    service_values: JSON = values.get("service") or {}
    service = _owned(release, "Service", "v1", name)
    service["metadata"]["annotations"] = service_values.get("annotations") or {}
    service["spec"] = {
        "type": service_values.get("type", "ClusterIP"),
        "selector": labels,
        "ports": [{"name": "ssh", "port": SSH_PORT, "targetPort": SSH_PORT, "protocol": "TCP"}],
    }
    pod: JSON = {
        "terminationGracePeriodSeconds": 10,
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "sshd",
                "image": cluster.image,
                "imagePullPolicy": "Never",
                "command": ["/bin/sh", f"{CONFIG_DIR}/entrypoint.sh"],
                "ports": [{"name": "ssh", "containerPort": SSH_PORT}],
                "readinessProbe": {"tcpSocket": {"port": SSH_PORT}, "periodSeconds": 2},
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"},
                },
                "volumeMounts": [
                    {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                    {"name": "host-keys", "mountPath": HOST_KEYS_DIR, "readOnly": True},
                    {"name": "authorized-keys", "mountPath": AUTHORIZED_KEYS_DIR, "readOnly": True},
                    {"name": "ldap-bind", "mountPath": LDAP_SECRET_DIR, "readOnly": True},
                    {"name": "ca", "mountPath": CA_DIR, "readOnly": True},
                    {"name": "munge", "mountPath": MUNGE_DIR, "readOnly": True},
                ],
            }
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": config["metadata"]["name"]}},
            {"name": "ca", "configMap": {"name": CA_CONFIG_MAP}},
            {"name": "munge", "hostPath": {"path": str(cluster.munge_dir), "type": "Directory"}},
            {
                "name": "host-keys",
                "secret": {"secretName": f"{name}-host-keys", "defaultMode": 0o600},
            },
            {
                "name": "authorized-keys",
                "secret": {"secretName": values["sshKeysSecret"], "defaultMode": 0o644},
            },
            {
                "name": "ldap-bind",
                "secret": {
                    "secretName": values["ldap"]["bindPasswordSecret"],
                    "defaultMode": 0o600,
                },
            },
        ],
    }
    if "runtimeClassName" in values:
        pod["runtimeClassName"] = values["runtimeClassName"]
    stateful_set = _owned(release, "StatefulSet", "apps/v1", name)
    stateful_set["spec"] = {
        "replicas": int(values.get("replicas", 1)),
        "serviceName": name,
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": labels},
        # As charts do: a changed configuration rolls the pods, which read it only as they start.
        "template": {
            "metadata": {"labels": labels, "annotations": {"checksum/config": _checksum(config)}},
            "spec": pod,
        },
    }
    return [config, service, stateful_set]


def _checksum(config: JSON) -> str:
    return hashlib.sha256(json.dumps(config["data"], sort_keys=True).encode()).hexdigest()


def host_keys(release: JSON) -> JSON:
    """The release's SSH host key, made once: users' known_hosts must keep matching it."""
    with tempfile.TemporaryDirectory() as scratch:
        key = Path(scratch) / "key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", release["metadata"]["name"],
             "-f", str(key)],
            check=True,
        )  # fmt: skip
        secret = _owned(release, "Secret", "v1", f"{release['metadata']['name']}-host-keys")
        secret["type"] = "Opaque"
        secret["stringData"] = {
            "ssh_host_ed25519_key": key.read_text(),
            "ssh_host_ed25519_key.pub": Path(f"{key}.pub").read_text(),
        }
    return secret


@dataclass(frozen=True)
class _Failure:
    version: str  # the release's resourceVersion that failed
    error: str
    delay: float
    retry_at: float


class LoginReleaseController:
    def __init__(self, client: KubeClient, cluster: Cluster) -> None:
        self.client = client
        self.cluster = cluster
        # (namespace, name) -> the resourceVersion last rendered, and when.
        self.rendered: dict[tuple[str, str], tuple[str, float]] = {}
        self.failing: dict[tuple[str, str], _Failure] = {}

    def reconcile_all(self) -> None:
        releases = self.client.get(RELEASES)["items"]
        for release in releases:
            if release["spec"]["chart"]["name"] != CHART:
                continue
            meta = release["metadata"]
            key = (meta["namespace"], meta["name"])
            version, at = self.rendered.get(key, ("", 0.0))
            fresh = version == meta["resourceVersion"] and time.monotonic() - at < RESYNC_SECONDS
            if fresh or meta.get("deletionTimestamp"):
                continue
            failed = self.failing.get(key)
            if failed and failed.version != meta["resourceVersion"]:
                failed = None
            if failed and time.monotonic() < failed.retry_at:
                continue
            try:
                self.reconcile(release)
            except (KubeError, KeyError) as err:
                self._failed(key, meta["resourceVersion"], repr(err), failed)
                continue
            self.failing.pop(key, None)
            if version != meta["resourceVersion"]:
                log(f"rendered release {key[0]}/{key[1]} at version {meta['resourceVersion']}")
            self.rendered[key] = (meta["resourceVersion"], time.monotonic())
        present = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in releases}
        for known in (self.rendered, self.failing):
            for gone in set(known) - present:
                del known[gone]

    def _failed(
        self, key: tuple[str, str], version: str, error: str, before: _Failure | None
    ) -> None:
        delay = min(before.delay * 2, RESYNC_SECONDS) if before else 1.0
        if before is None or before.error != error:
            log(f"release {key[0]}/{key[1]}: {error}; next try in {delay:.0f}s, then less often")
        self.failing[key] = _Failure(version, error, delay, time.monotonic() + delay)

    def reconcile(self, release: JSON) -> None:
        meta = release["metadata"]
        secrets = f"/api/v1/namespaces/{meta['namespace']}/secrets"
        try:
            self.client.get(f"{secrets}/{meta['name']}-host-keys")
        except KubeError as err:
            if err.status != 404:
                raise
            self.client.request("POST", secrets, body=host_keys(release))
        for manifest in render(release, self.cluster):
            self.client.apply(resource_path(manifest), manifest)


def login_release_service(
    server: str, pki: Pki, cluster: Cluster, ready: Callable[[], bool]
) -> Service:
    return controller_service(
        "login-release-controller", "sandbox.kubernetes.login_release", server, pki.dir, ready,
        f"--image={cluster.image}", f"--slurm-cluster={cluster.slurm_cluster}",
        f"--slurmctld-port={cluster.slurmctld_port}", f"--munge-dir={cluster.munge_dir}",
    )  # fmt: skip


def main(argv: list[str]) -> int:
    parser = controller_arguments(__doc__.splitlines()[0])
    parser.add_argument("--image", required=True)
    parser.add_argument("--slurm-cluster", required=True)
    parser.add_argument("--slurmctld-port", type=int, required=True)
    parser.add_argument("--munge-dir", type=Path, required=True)
    args = parser.parse_args(argv)

    # A new client per watch, each on its own connection.
    client = partial(identity_client, args.server, args.pki_dir, "helm-controller")
    cluster = Cluster(args.image, args.slurm_cluster, args.slurmctld_port, args.munge_dir)
    controller = LoginReleaseController(client(), cluster)
    log(f"login release controller started (chart {CHART}, image {args.image})")
    reconcile_forever(controller.reconcile_all, Changes(client, [RELEASES]), args.interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
