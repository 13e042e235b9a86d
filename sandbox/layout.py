"""Where each part of a sandbox keeps its state, which ports it uses, in which order the parts
start, and what a person's shell needs to reach them.

There are two sandboxes, alike but for state directory and ports: the operator's (`make
sandbox-up`, `make demo`) and the tests' (`make test`), chosen by GPU_TENANTS_SANDBOX=test.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.authentik.service import (
    authentik_service,
    authentik_url,
    seed_parent_group,
    token_file,
)
from sandbox.kubernetes.client import KubeClient
from sandbox.kubernetes.seed import seed
from sandbox.kubernetes.services import KubernetesSandbox
from sandbox.pki import Pki
from sandbox.ports import TEST_SANDBOX_OFFSET, Ports
from sandbox.service import Service
from sandbox.slurm import SlurmSettings, client_env, slurm_services
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
    ports: Ports = field(default_factory=Ports)

    @classmethod
    def from_environment(cls) -> SandboxLayout:
        state = Path(
            os.environ.get("GPU_TENANTS_STATE") or Path.home() / ".local" / "state" / "gpu-tenants"
        )
        if os.environ.get("GPU_TENANTS_SANDBOX") == "test":
            return cls(state / "test-sandbox", Ports(TEST_SANDBOX_OFFSET))
        return cls(state / "sandbox")

    @property
    def pki(self) -> Pki:
        return Pki(self.root / "pki")

    @property
    def kubernetes(self) -> KubernetesSandbox:
        return KubernetesSandbox(self.root / "kubernetes", self.pki, self.ports)

    @property
    def slurm(self) -> SlurmSettings:
        return SlurmSettings(self.root / "slurm", self.ports.offset)

    def services(self) -> list[Service]:
        """Every sandbox process, in start order (stopped in the reverse)."""
        return [
            *self.kubernetes.services(),
            *slurm_services(self.root / "slurm", self.ports.offset),
            weka_service(self.root / "weka", self.pki, self.ports.weka),
            authentik_service(self.root / "authentik", self.ports.authentik),
        ]

    def seed_kubernetes(self) -> None:
        pki = self.pki
        client = KubeClient(
            server=self.kubernetes.server,
            ca=pki.ca_cert,
            cert=pki.cert("admin"),
            key=pki.key("admin"),
        )
        try:
            seed(client, self.root / "kubernetes", _kubernetes_version())
        finally:
            client.close()

    def seed_authentik(self) -> bool:
        """Creates what a tenant's identity hangs under, if missing (so: also after an upgrade)."""
        return seed_parent_group(self.root / "authentik", self.ports.authentik)

    def environment(self) -> dict[str, str]:
        """What `make -s env` exports so a person can reach every part by hand."""
        return {
            "KUBECONFIG": str(self.kubernetes.admin_kubeconfig),
            **client_env(self.root / "slurm"),
            "SLURM_PARTITIONS_FILE": str(self.slurm.partitions_conf),
            "SANDBOX_CA_FILE": str(self.pki.ca_cert),
            "WEKA_URL": weka_url(self.ports.weka),
            "WEKA_USERNAME": "admin",
            "WEKA_PASSWORD_FILE": str(admin_password_file(self.root / "weka")),
            "AUTHENTIK_URL": authentik_url(self.ports.authentik),
            "AUTHENTIK_TOKEN_FILE": str(token_file(self.root / "authentik")),
        }
