"""Where each part of the sandbox keeps its state, in which order the parts start, and what a
person's shell needs to reach them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandbox.authentik.service import authentik_service, authentik_url, token_file
from sandbox.kubernetes.client import KubeClient
from sandbox.kubernetes.seed import seed
from sandbox.kubernetes.services import SERVER, KubernetesSandbox
from sandbox.pki import Pki
from sandbox.service import Service
from sandbox.slurm import client_env, slurm_services
from sandbox.weka.service import admin_password_file, weka_service, weka_url

KUBERNETES_VERSION_FILE = Path(__file__).resolve().parents[1] / "toolchain" / "versions.sh"


def _kubernetes_version() -> str:
    for line in KUBERNETES_VERSION_FILE.read_text().splitlines():
        if line.startswith("KUBERNETES_VERSION="):
            return line.split("=", 1)[1]
    raise RuntimeError(f"no KUBERNETES_VERSION in {KUBERNETES_VERSION_FILE}")


@dataclass(frozen=True)
class SandboxLayout:
    root: Path

    @classmethod
    def from_environment(cls) -> SandboxLayout:
        state = os.environ.get("GPU_TENANTS_STATE") or str(
            Path.home() / ".local" / "state" / "gpu-tenants"
        )
        return cls(Path(state) / "sandbox")

    @property
    def pki(self) -> Pki:
        return Pki(self.root / "pki")

    @property
    def kubernetes(self) -> KubernetesSandbox:
        return KubernetesSandbox(self.root / "kubernetes", self.pki)

    def services(self) -> list[Service]:
        """Every sandbox process, in start order (stopped in the reverse)."""
        return [
            *self.kubernetes.services(),
            *slurm_services(self.root / "slurm"),
            weka_service(self.root / "weka", self.pki),
            authentik_service(self.root / "authentik"),
        ]

    def seed_kubernetes(self) -> None:
        pki = self.pki
        client = KubeClient(
            server=SERVER, ca=pki.ca_cert, cert=pki.cert("admin"), key=pki.key("admin")
        )
        try:
            seed(client, self.root / "kubernetes", _kubernetes_version())
        finally:
            client.close()

    def environment(self) -> dict[str, str]:
        """What `make -s env` exports so a person can reach every part by hand."""
        return {
            "KUBECONFIG": str(self.kubernetes.admin_kubeconfig),
            **client_env(self.root / "slurm"),
            "SANDBOX_CA_FILE": str(self.pki.ca_cert),
            "WEKA_URL": weka_url(),
            "WEKA_USERNAME": "admin",
            "WEKA_PASSWORD_FILE": str(admin_password_file(self.root / "weka")),
            "AUTHENTIK_URL": authentik_url(),
            "AUTHENTIK_TOKEN_FILE": str(token_file(self.root / "authentik")),
        }
