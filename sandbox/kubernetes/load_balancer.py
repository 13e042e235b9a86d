"""A stand-in for the cluster's load balancer, doing what MetalLB in layer 2 mode does on a
bare-metal cluster: each Service of type LoadBalancer (of no other load balancer class) gets an
address from the pool, written to its status, and keeps it while it stays of that type. This
machine routes the pool to the real node (`RealNode.ensure_network`), where kube-proxy takes an
address's traffic to the Service's pods, as a MetalLB speaker's ARP answers would bring it there:
so a test reaches the login pods from this machine as a user reaches them, through the Service
and its policies.

Like the reservation operator it acts when a Service changes (a watch wakes it) and looks
again every second.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Callable
from functools import partial

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
)
from sandbox.pki import Pki
from sandbox.service import Service

SERVICES = "/api/v1/services"
IDENTITY = "load-balancer"


def _address(service: JSON) -> str | None:
    ingress = (service.get("status") or {}).get("loadBalancer", {}).get("ingress") or []
    return ingress[0].get("ip") if ingress else None


def _balanced(service: JSON) -> bool:
    spec = service["spec"]
    return spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass")


class LoadBalancer:
    def __init__(self, client: KubeClient, pool: ipaddress.IPv4Network) -> None:
        self.client = client
        # The first and last few addresses stay out, as a pool on a real subnet keeps the
        # router's and the broadcast's.
        self.pool = [str(a) for a in pool.hosts()][9:-4]

    def reconcile_all(self) -> None:
        services = [s for s in self.client.get(SERVICES)["items"] if _balanced(s)]
        taken = {a for s in services if (a := _address(s)) in self.pool}
        for service in services:
            if _address(service) in self.pool:
                continue
            free = next((a for a in self.pool if a not in taken), None)
            meta = service["metadata"]
            name = f"{meta['namespace']}/{meta['name']}"
            if free is None:
                log(f"service {name}: no address left in the pool")
                continue
            path = f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}/status"
            try:
                # Conditional on what was read: a Service changed meanwhile waits a pass.
                self.client.json_patch(
                    path,
                    [
                        {"op": "test", "path": "/metadata/resourceVersion",
                         "value": meta["resourceVersion"]},
                        {"op": "add", "path": "/status/loadBalancer",
                         "value": {"ingress": [{"ip": free}]}},
                    ],
                )  # fmt: skip
            except KubeError as err:
                log(f"service {name}: {err}")
                continue
            taken.add(free)
            log(f"service {name}: address {free}")


def load_balancer_service(server: str, pki: Pki, pool: str, ready: Callable[[], bool]) -> Service:
    # Its identity's certificate is new to a sandbox made before it.
    return controller_service(
        "load-balancer", "sandbox.kubernetes.load_balancer", server, pki.dir, ready,
        f"--pool={pool}", prepare=pki.ensure,
    )  # fmt: skip


def main(argv: list[str]) -> int:
    parser = controller_arguments(__doc__.splitlines()[0])
    parser.add_argument("--pool", type=ipaddress.IPv4Network, required=True)
    args = parser.parse_args(argv)

    # A new client per watch, each on its own connection.
    client = partial(identity_client, args.server, args.pki_dir, IDENTITY)
    balancer = LoadBalancer(client(), args.pool)
    log(f"load balancer started (pool {args.pool})")
    reconcile_forever(balancer.reconcile_all, Changes(client, [SERVICES]), args.interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
