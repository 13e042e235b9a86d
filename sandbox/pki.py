"""The sandbox CA and the certificates it issues (Kubernetes, Weka), made once with the openssl
CLI and kept across restarts."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from sandbox.kubernetes.addresses import KUBERNETES_SERVICE_IP


@dataclass(frozen=True)
class ClientIdentity:
    """A client certificate: Kubernetes takes CN as the user and O as the group."""

    name: str
    user: str
    group: str | None = None


# system:masters bypasses RBAC: only the operator's admin identity gets it.
CLIENTS = (
    ClientIdentity("admin", "sandbox-admin", "system:masters"),
    ClientIdentity("controller-manager", "system:kube-controller-manager"),
    ClientIdentity("scheduler", "system:kube-scheduler"),
    ClientIdentity("reservation-operator", "system:serviceaccount:reservation-operator:operator"),
    ClientIdentity("load-balancer", "system:serviceaccount:metallb-system:controller"),
    ClientIdentity("external-dns", "system:serviceaccount:external-dns:external-dns"),
    # The platform's Helm controller (for the login chart): cluster-admin, as such controllers are.
    ClientIdentity("helm-controller", "system:serviceaccount:helm-system:helm-controller"),
    # The real node's kubelet: the Node authorizer and NodeRestriction know it by these names.
    ClientIdentity("node-cpu-01", "system:node:cpu-01", "system:nodes"),
    ClientIdentity("kube-proxy", "system:kube-proxy"),
    ClientIdentity("kube-router", "system:serviceaccount:kube-system:kube-router"),
    # The API server's identity towards kubelets (logs, exec): platform.yaml binds it to
    # system:kubelet-api-admin, as RKE2 does.
    ClientIdentity("apiserver-kubelet-client", "system:kube-apiserver"),
)

_SERVER_NAMES = "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
# Pods reach the API server at the `kubernetes` Service's address.
_SERVER_ADDRESSES = f"IP:127.0.0.1,IP:{KUBERNETES_SERVICE_IP}"


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()}")


class Pki:
    def __init__(self, directory: Path) -> None:
        self.dir = directory

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def service_account_key(self) -> Path:
        return self.dir / "service-account.key"

    @property
    def service_account_pub(self) -> Path:
        return self.dir / "service-account.pub"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"

    def ensure(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.ca_cert.exists():
            _openssl(
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                "-keyout", str(self.ca_key), "-out", str(self.ca_cert),
                "-subj", "/CN=gpu-tenants-sandbox-ca",
            )  # fmt: skip
        if not self.service_account_key.exists():
            _openssl("genrsa", "-out", str(self.service_account_key), "2048")
            _openssl(
                "rsa", "-in", str(self.service_account_key), "-pubout",
                "-out", str(self.service_account_pub),
            )  # fmt: skip
        self._issue("apiserver", "/CN=kube-apiserver", f"{_SERVER_ADDRESSES},{_SERVER_NAMES}")
        for server in ("controller-manager-serving", "scheduler-serving", "weka", "authentik"):
            self.issue_server(server, ["localhost"])
        for client in CLIENTS:
            subject = f"/CN={client.user}" + (f"/O={client.group}" if client.group else "")
            self._issue(client.name, subject, None)

    def issue_server(self, name: str, hosts: list[str]) -> None:
        """A server certificate `name` for 127.0.0.1 and the DNS names `hosts`, unless one is."""
        alt_names = ",".join(["IP:127.0.0.1", *(f"DNS:{host}" for host in hosts)])
        self._issue(name, f"/CN={name}", alt_names)

    def _issue(self, name: str, subject: str, alt_names: str | None) -> None:
        """Issues the certificate unless one for this subject and these names exists: a server
        whose names grew gets a new one (the API server reloads it without a restart)."""
        made_for = self.dir / f"{name}.made-for"
        wanted = f"{subject} {alt_names or ''}\n"
        recorded = _read(made_for)
        # A client's certificate from before these records: its subject never changed.
        if self.cert(name).exists() and (recorded == wanted or (not recorded and not alt_names)):
            return
        csr = self.dir / f"{name}.csr"
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key(name)),
            "-out", str(csr), "-subj", subject,
        )  # fmt: skip
        extensions = self.dir / f"{name}.ext"
        usage = "serverAuth" if alt_names else "clientAuth"
        lines = [f"extendedKeyUsage={usage}", "keyUsage=digitalSignature,keyEncipherment"]
        if alt_names:
            lines.append(f"subjectAltName={alt_names}")
        extensions.write_text("\n".join(lines) + "\n")
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(self.ca_cert), "-CAkey", str(self.ca_key),
            "-CAcreateserial", "-days", "3650", "-out", str(self.cert(name)),
            "-extfile", str(extensions),
        )  # fmt: skip
        csr.unlink()
        extensions.unlink()
        made_for.write_text(wanted)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def kubeconfig(pki: Pki, client: str, server: str) -> str:
    """A kubeconfig for one client identity, referring to the certificate files by path."""
    return f"""apiVersion: v1
kind: Config
clusters:
- name: sandbox
  cluster:
    server: {server}
    certificate-authority: {pki.ca_cert}
users:
- name: {client}
  user:
    client-certificate: {pki.cert(client)}
    client-key: {pki.key(client)}
contexts:
- name: sandbox
  context:
    cluster: sandbox
    user: {client}
current-context: sandbox
"""
