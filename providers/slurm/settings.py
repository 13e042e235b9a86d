"""Where the Slurm provider finds Slurm, read from the environment at each call (the provider is
pickled into the state, so it keeps none of this):

    SLURM_TRANSPORT          `local` (default): run sacctmgr/scontrol on this host;
                             `kubectl`: run them in the controller pod, as the runbooks do
    SLURM_CONF               local transport: the slurm.conf the clients read
    SLURM_KUBECTL_NAMESPACE  kubectl transport: the controller's namespace (default slurm-control)
    SLURM_KUBECTL_TARGET     kubectl transport: what to exec into (default deploy/slurmctld)
    SLURM_CLUSTER            the cluster associations are made on (default production)
    SLURM_TIMEOUT            seconds to wait for one command (default 20)
    SLURM_PARTITIONS_FILE    the file that slurm.conf includes and the partition resource
                             rewrites (runbook step 4d)

Partitions: only the file form is implemented. The provider rewrites SLURM_PARTITIONS_FILE on
this host and runs `scontrol reconfigure` through the transport, so the file must be the one
slurmctld reads (the sandbox's, or a controller host's). In production the partitions live in the
Slurm operator's ConfigMap, which this provider does not write yet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from providers.command import Transport, TransportSettings
from providers.slurm.transport import BACKEND
from tenant_stack.errors import SlurmError

__all__ = ["Settings"]

_DOING = "reading the Slurm provider's settings from the environment"


@dataclass(frozen=True, kw_only=True)
class Settings:
    transport: TransportSettings
    slurm_conf: str | None = None
    cluster: str = "production"
    partitions_file: Path | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            transport = TransportSettings.from_environment(
                env, "SLURM", namespace="slurm-control", target="deploy/slurmctld"
            )
        except ValueError as error:
            raise SlurmError(_DOING, str(error)) from None
        partitions = env.get("SLURM_PARTITIONS_FILE")
        return cls(
            transport=transport,
            slurm_conf=env.get("SLURM_CONF") or None,
            cluster=env.get("SLURM_CLUSTER") or "production",
            partitions_file=Path(partitions) if partitions else None,
        )

    def make_transport(self) -> Transport:
        return self.transport.make(
            BACKEND, {"SLURM_CONF": self.slurm_conf} if self.slurm_conf else None
        )

    def require_partitions_file(self, doing: str) -> Path:
        if self.partitions_file is None:
            raise SlurmError(
                doing,
                "SLURM_PARTITIONS_FILE is not set",
                "set it to the partitions file that slurm.conf includes (`Include <path>`)",
            )
        return self.partitions_file
