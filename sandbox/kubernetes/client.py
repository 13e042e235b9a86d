"""A small Kubernetes API client over httpx, for the sandbox's seeding and its stand-in operator."""

from __future__ import annotations

import argparse
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import httpx

from sandbox.service import PYTHON, Service, source_revision

JSON = dict[str, Any]
FIELD_MANAGER = "gpu-tenants-sandbox"
# How long the API server keeps a watch open before the client opens it again.
WATCH_SECONDS = 300


def tls_context(ca: Path, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    """Trusts only the sandbox CA and, given a client certificate, presents it."""
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key) if key else None)
    return context


def log(message: str) -> None:
    """A stand-in controller's log line, timestamped as its service log shows it."""
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def identity_client(server: str, pki_dir: Path, identity: str) -> KubeClient:
    """A client that presents `identity`'s certificate from the sandbox's PKI directory."""
    return KubeClient(
        server=server,
        ca=pki_dir / "ca.crt",
        cert=pki_dir / f"{identity}.crt",
        key=pki_dir / f"{identity}.key",
    )


def controller_service(
    name: str,
    module: str,
    server: str,
    pki_dir: Path,
    ready: Callable[[], bool],
    *options: str,
    prepare: Callable[[], None] | None = None,
) -> Service:
    """A stand-in controller of this package (`python -m module`) as a sandbox service, told
    the API server and the PKI directory its identity is in, then `options`."""
    return Service(
        name=name,
        argv=[PYTHON, "-m", module, f"--server={server}", f"--pki-dir={pki_dir}", *options],
        cwd=Path(__file__).resolve().parents[2],
        prepare=prepare,
        revision=source_revision(Path(__file__).parent),
        # The supervisor fails a process that exits; alive with a reachable API is ready.
        ready=ready,
    )


def controller_arguments(description: str) -> argparse.ArgumentParser:
    """A stand-in controller's command line: --server, --pki-dir and --interval, to add to."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--server", required=True)
    parser.add_argument("--pki-dir", type=Path, required=True)
    parser.add_argument("--interval", type=float, default=1.0)
    return parser


def reconcile_forever(
    reconcile_all: Callable[[], object], changes: Changes, interval: float
) -> NoReturn:
    """A controller's loop: a pass as soon as something it watches changes, and at least every
    `interval` seconds (its resyncs and back-offs count in passes); a failed pass is logged and
    the next one retries it."""
    while True:
        try:
            reconcile_all()
        except (KubeError, httpx.HTTPError) as err:
            log(f"reconcile pass failed, retrying: {err}")
        changes.wait(interval)


class Changes:
    """Wakes a controller's loop when an object under one of `paths` changes, as an informer
    does: one watch per path on a thread of its own, opened again whenever it ends (a new watch
    first lists what exists as ADDED events, which wakes the loop once more: nothing missed
    between two watches goes unseen)."""

    def __init__(self, open_client: Callable[[], KubeClient], paths: Iterable[str]) -> None:
        self._changed = threading.Event()
        for path in paths:
            watcher = threading.Thread(target=self._watch, args=(open_client, path), daemon=True)
            watcher.start()

    def wait(self, timeout: float) -> None:
        """Returns once something changed since the last return, or after `timeout` seconds."""
        self._changed.wait(timeout)
        self._changed.clear()

    def _watch(self, open_client: Callable[[], KubeClient], path: str) -> None:
        client = open_client()
        while True:
            try:
                for _ in client.watch(path):
                    self._changed.set()
            except (KubeError, httpx.HTTPError, ValueError) as err:
                # Until it opens again, the loop's passes every interval are its only news.
                log(f"watch of {path} failed, opening it again in a second: {err}")
                time.sleep(1.0)


class KubeError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path} answered {status}: {message}")
        self.status = status


class KubeClient:
    def __init__(
        self, *, server: str, ca: Path, cert: Path, key: Path, timeout: float = 10
    ) -> None:
        self._http = httpx.Client(
            base_url=server, verify=tls_context(ca, cert, key), timeout=timeout
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self, method: str, path: str, *, body: JSON | None = None, content_type: str | None = None
    ) -> JSON:
        headers = {"Content-Type": content_type} if content_type else {}
        response = self._http.request(
            method,
            path,
            content=json.dumps(body) if body is not None else None,
            headers=headers,
        )
        if response.status_code >= 400:
            try:
                message = response.json().get("message", response.text)
            except ValueError:
                message = response.text
            raise KubeError(method, path, response.status_code, message)
        result: JSON = response.json()
        return result

    def get(self, path: str) -> JSON:
        return self.request("GET", path)

    def watch(self, path: str) -> Iterator[JSON]:
        """The events of a watch of the list at `path`, until the API server ends it."""
        query = {"watch": "true", "timeoutSeconds": str(WATCH_SECONDS)}
        timeout = httpx.Timeout(self._http.timeout.connect, read=WATCH_SECONDS + 30)
        with self._http.stream("GET", path, params=query, timeout=timeout) as response:
            if response.status_code >= 400:
                raise KubeError("GET", path, response.status_code, response.read().decode())
            for line in response.iter_lines():
                if line:
                    event: JSON = json.loads(line)
                    yield event

    def merge_patch(self, path: str, patch: JSON) -> JSON:
        return self.request("PATCH", path, body=patch, content_type="application/merge-patch+json")

    def json_patch(self, path: str, operations: list[JSON]) -> JSON:
        # A JSON patch with a "test" op makes the write conditional on what was read.
        body: Any = operations
        return self.request("PATCH", path, body=body, content_type="application/json-patch+json")

    def apply(self, path: str, manifest: JSON, *, force: bool = True) -> JSON:
        """Server-side apply: idempotent, and leaves fields other managers own alone."""
        query = f"?fieldManager={FIELD_MANAGER}&force={'true' if force else 'false'}"
        return self.request(
            "PATCH", path + query, body=manifest, content_type="application/apply-patch+yaml"
        )


def resource_path(manifest: JSON) -> str:
    """The REST path of a manifest's object, for the kinds the sandbox seeds."""
    api_version: str = manifest["apiVersion"]
    kind: str = manifest["kind"]
    name: str = manifest["metadata"]["name"]
    namespace: str | None = manifest["metadata"].get("namespace")
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    plural = {
        "ConfigMap": "configmaps",
        "Deployment": "deployments",
        "EndpointSlice": "endpointslices",
        "Namespace": "namespaces",
        "Service": "services",
        "StatefulSet": "statefulsets",
        "Node": "nodes",
        "Pod": "pods",
        "Secret": "secrets",
        "ServiceAccount": "serviceaccounts",
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "CustomResourceDefinition": "customresourcedefinitions",
        "StorageClass": "storageclasses",
        "RuntimeClass": "runtimeclasses",
        "Reservation": "reservations",
    }[kind]
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{plural}/{name}"
