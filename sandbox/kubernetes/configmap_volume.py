"""A stand-in for the kubelet's ConfigMap volume in the slurmctld pod: copies one key of a
ConfigMap into the file slurm.conf includes, as the kubelet does for the Slurm operator's
partitions ConfigMap (runbook step 4d). Like the kubelet it lags: it looks once per --interval
and writes only what changed, aside and renamed, so slurmctld never reads half a file. Its lag
is far shorter than the kubelet's (about a minute): any lag at all takes the Slurm provider
through its wait for the copy, and every partition write of the tests waits it out.

The sandbox's slurmctld is a process on this host, not a pod, so this is what makes the Slurm
provider's ConfigMap form (`SLURM_PARTITIONS_CONFIGMAP`) reach it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from providers.files import write_atomic
from sandbox.kubernetes.client import KubeClient, KubeError
from sandbox.pki import Pki
from sandbox.service import PYTHON, Service, source_revision

NAMESPACE = "slurm-control"
NAME = "slurm-partitions"
KEY = "partitions.conf"
# Seconds between two looks: one GET of one ConfigMap each, cheap even four times a second.
INTERVAL = 0.25


def configmap_path(namespace: str = NAMESPACE, name: str = NAME) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps/{name}"


def ensure_configmap(client: KubeClient, placeholder: str) -> None:
    """Creates the partitions ConfigMap with `placeholder` as its key, if it is missing. Never
    rewrites it: once there, its key is the Slurm provider's."""
    try:
        client.get(configmap_path())
    except KubeError as error:
        if error.status != 404:
            raise
        configmap = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {KEY: placeholder},
        }
        client.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", body=configmap)


def sync_once(client: KubeClient, target: Path) -> bool:
    """Copies the key into `target` if they differ; True when it wrote."""
    data = client.get(configmap_path()).get("data") or {}
    text = data.get(KEY, "")
    if target.exists() and target.read_text() == text:
        return False
    write_atomic(target, text)
    return True


def configmap_volume_service(
    server: str, pki: Pki, target: Path, placeholder: str, ready: Callable[[], bool]
) -> Service:
    """The volume for `target`; before each start it creates the ConfigMap if missing, holding
    `placeholder` (an empty included file makes every Slurm client warn)."""

    def prepare() -> None:
        client = _client(server, pki.ca_cert, pki.cert("admin"), pki.key("admin"))
        try:
            ensure_configmap(client, placeholder)
        finally:
            client.close()

    return Service(
        name="partitions-configmap-volume",
        argv=[
            PYTHON,
            "-m",
            "sandbox.kubernetes.configmap_volume",
            f"--server={server}",
            f"--ca={pki.ca_cert}",
            f"--cert={pki.cert('admin')}",
            f"--key={pki.key('admin')}",
            f"--target={target}",
            f"--interval={INTERVAL:g}",
        ],
        cwd=Path(__file__).resolve().parents[2],
        prepare=prepare,
        revision=source_revision(Path(__file__).parent),
        # The supervisor fails a process that exits; alive with a reachable API is ready.
        ready=ready,
    )


def _client(server: str, ca: Path, cert: Path, key: Path) -> KubeClient:
    return KubeClient(server=server, ca=ca, cert=cert, key=key)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    for credential in ("--ca", "--cert", "--key"):
        parser.add_argument(credential, type=Path, required=True)
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--interval", type=float, default=INTERVAL)
    args = parser.parse_args(argv)
    client = _client(args.server, args.ca, args.cert, args.key)
    print(f"projecting ConfigMap {NAMESPACE}/{NAME} key {KEY} into {args.target}", flush=True)
    while True:
        try:
            if sync_once(client, args.target):
                print(f"{time.strftime('%H:%M:%S')} wrote {args.target}", flush=True)
        except (KubeError, httpx.HTTPError, OSError) as error:
            print(f"{time.strftime('%H:%M:%S')} sync failed, retrying: {error}", flush=True)
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
