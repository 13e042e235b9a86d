"""What the program reads of the live cluster, before it declares anything: the nodes and the
tenant's claims (for the preflight) and the LDAP bind Secret it copies into the tenant's namespace.

Read with `kubectl` (the operator's own tool, and whatever credentials their kubeconfig uses),
through the same KUBECONFIG the Kubernetes provider uses. The Secret is read here rather than
with `Secret.get`: a read resource in the stack would make `pulumi refresh --preview-only
--expect-no-changes` report it on every run, so the drift check could never be clean.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tenant_stack.components.tenant_namespace import RETAINED_ANNOTATION, STAGE_ANNOTATION
from tenant_stack.errors import ClusterError
from tenant_stack.preflight import ClaimState, NodeState

__all__ = ["LiveCluster", "kubectl_json", "read_cluster", "read_live", "read_secret_data"]


@dataclass(frozen=True)
class LiveCluster:
    nodes: list[NodeState]
    claims: list[ClaimState]  # of the tenant's namespace
    retained: list[str]  # what its namespace records offboarding has archived (RETAINED_ANNOTATION)
    stage: str | None  # the offboarding stage its namespace records (STAGE_ANNOTATION)
    namespace_exists: bool = True


def read_cluster(namespace: str, kubectl: str = "kubectl") -> LiveCluster:
    """Every Node of the cluster, the claims of `namespace` (none when it does not exist yet) and
    the namespaces (for the tenant's own), in one request."""
    items = kubectl_json(
        [kubectl, "get", "nodes,persistentvolumeclaims,namespaces", f"--namespace={namespace}"]
    )["items"]
    own: dict[str, Any] = next(
        (
            item
            for item in items
            if item.get("kind") == "Namespace" and item["metadata"]["name"] == namespace
        ),
        {"metadata": {}},
    )
    annotations = own["metadata"].get("annotations") or {}
    retained = annotations.get(RETAINED_ANNOTATION, "")
    return LiveCluster(
        nodes=[NodeState.from_api(item) for item in items if item.get("kind") == "Node"],
        claims=[
            ClaimState.from_api(item)
            for item in items
            if item.get("kind") == "PersistentVolumeClaim"
        ],
        retained=[kind for kind in retained.split(",") if kind],
        stage=annotations.get(STAGE_ANNOTATION),
        namespace_exists=bool(own["metadata"]),
    )


def read_secret_data(namespace: str, name: str, kubectl: str = "kubectl") -> dict[str, str]:
    """The `data` (base64 values) of Secret `namespace`/`name`. The values never appear in an
    error: kubectl's message on failure names the Secret only."""
    secret = kubectl_json([kubectl, "get", "secret", name, f"--namespace={namespace}"])
    data: dict[str, str] = secret.get("data") or {}
    if not data:
        raise ClusterError(f"Secret {namespace}/{name} holds no data; the platform must fill it")
    return data


def read_live(
    namespace: str, secret_namespace: str, secret_name: str
) -> tuple[LiveCluster, dict[str, str]]:
    """`read_cluster(namespace)` and `read_secret_data(secret_namespace, secret_name)` at once:
    two kubectl runs side by side, since every preview waits for both."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        cluster = pool.submit(read_cluster, namespace)
        secret = pool.submit(read_secret_data, secret_namespace, secret_name)
        return cluster.result(), secret.result()


def kubectl_json(argv: list[str]) -> Any:
    """`argv` (a kubectl get) with JSON output and a bounded wait; ClusterError with kubectl's
    words when it fails."""
    argv = [*argv, "--output=json", "--request-timeout=30s"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError as err:
        raise ClusterError(
            f"{argv[0]} is not on PATH; the program reads the cluster with it"
        ) from err
    except subprocess.TimeoutExpired as err:
        raise ClusterError(f"`{' '.join(argv)}` did not answer within 60s") from err
    except OSError as err:
        raise ClusterError(f"`{' '.join(argv)}` could not run: {err}") from err
    if result.returncode != 0:
        message = result.stderr.strip() or f"exit code {result.returncode}"
        raise ClusterError(f"`{' '.join(argv)}` failed: {message}")
    return json.loads(result.stdout)
