"""Where the Slurm provider finds Slurm, read from the environment at each call (the provider is
pickled into the state, so it keeps none of this):

    SLURM_TRANSPORT          `local` (default): run sacctmgr/scontrol on this host;
                             `kubectl`: run them in the controller pod, as the runbooks do
    SLURM_CONF               local transport: the slurm.conf the clients read
    SLURM_KUBECTL_NAMESPACE  kubectl transport: the controller's namespace (default slurm-control)
    SLURM_KUBECTL_TARGET     kubectl transport: what to exec into (default deploy/slurmctld)
    SLURM_CLUSTER            the cluster associations are made on (default production)
    SLURM_TIMEOUT            seconds to wait for one command (default 20)
    SLURM_PARTITIONS_FILE    the file that slurm.conf includes, where slurmctld reads the
                             tenant partitions (runbook step 4d)
    SLURM_PARTITIONS_CONFIGMAP  `namespace/name`: the partitions are key SLURM_PARTITIONS_KEY
                             (default partitions.conf) of this ConfigMap, which the Slurm operator
                             mounts into the controller at SLURM_PARTITIONS_FILE; unset: the
                             provider writes SLURM_PARTITIONS_FILE itself, on this host
    SLURM_PARTITIONS_SYNC_TIMEOUT  seconds to wait for the controller to see a ConfigMap change
                             before `scontrol reconfigure` (default 180: the kubelet takes ~1 min)
    SLURM_PARTITIONS_POLL_SECONDS  how often to look at the controller's copy meanwhile (default
                             2: each look is a `cat` through the transport, a kubectl exec)
    SLURM_LOG_FILES          comma-separated paths, on the host the transport reaches, of the
                             controller's logs that offboarding archives (step 3c)
    SLURMD_LOG_FILE          each node's slurmd log, which step 3c archives too (default
                             /var/log/slurm/slurmd.log): in the node's slurmd pod with the kubectl
                             transport; on this host with `local`, `{node}` standing for the
                             node's name (`node_logs`)
    SLURMD_POD_SELECTOR      kubectl transport: the label selector of the slurmd pods in the
                             controller's namespace (default app=slurmd); a node's is the one
                             whose spec.nodeName is the node
    SLURM_DRAIN_POLL_SECONDS  how often a drain's `up` looks at the tenant's queue while it waits
                             (default 5: one squeue a drain, which slurmctld answers from all its
                             jobs; the sandbox, whose queue is small, sets 1)
    SLURM_STUCK_COMPLETING_SECONDS  how long a job may stay COMPLETING before the drain and
                             `diagnose` call it stuck (default 300: its end may take KillWait,
                             30 s, UnkillableStepTimeout, 60 s, and the epilog)
    SLURM_WRITE_LEASE        `namespace/name`: a Kubernetes Lease every sacctmgr write holds,
                             so that writes from many hosts (fleet workers) go one at a time;
                             unset: one at a time per host only (a file lock)

See `partition_store` for the two forms.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from providers import environment
from providers.command import Transport, TransportSettings
from providers.errors import SlurmError
from providers.kubernetes.lease import LeaseLock
from providers.slurm.client import SlurmClient
from providers.slurm.partition_store import ConfigMapStore, FileStore, PartitionStore
from providers.slurm.transport import BACKEND

__all__ = ["Settings"]

_DOING = "reading the Slurm provider's settings from the environment"


@dataclass(frozen=True, kw_only=True)
class Settings:
    transport: TransportSettings
    slurm_conf: str | None = None
    cluster: str = "production"
    partitions_file: Path | None = None
    partitions_configmap: tuple[str, str] | None = None  # (namespace, name)
    partitions_key: str = "partitions.conf"
    sync_timeout: float = 180.0
    sync_poll: float = 2.0
    log_files: tuple[str, ...] = ()
    node_log: str = "/var/log/slurm/slurmd.log"
    slurmd_selector: str = "app=slurmd"
    drain_poll: float = 5.0
    stuck_completing: float = 300.0
    write_lease: tuple[str, str] | None = None  # (namespace, name)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            transport = TransportSettings.from_environment(
                env, "SLURM", namespace="slurm-control", target="deploy/slurmctld"
            )
            configmap = _namespaced(env, "SLURM_PARTITIONS_CONFIGMAP")
            write_lease = _namespaced(env, "SLURM_WRITE_LEASE")
            sync_timeout = environment.seconds(env, "SLURM_PARTITIONS_SYNC_TIMEOUT", "180")
            sync_poll = environment.seconds(env, "SLURM_PARTITIONS_POLL_SECONDS", "2")
            drain_poll = environment.seconds(env, "SLURM_DRAIN_POLL_SECONDS", "5")
            stuck = environment.seconds(env, "SLURM_STUCK_COMPLETING_SECONDS", "300")
        except ValueError as error:
            raise SlurmError(_DOING, str(error)) from None
        partitions = env.get("SLURM_PARTITIONS_FILE")
        return cls(
            transport=transport,
            slurm_conf=env.get("SLURM_CONF") or None,
            cluster=env.get("SLURM_CLUSTER") or "production",
            partitions_file=Path(partitions) if partitions else None,
            partitions_configmap=configmap,
            partitions_key=env.get("SLURM_PARTITIONS_KEY") or "partitions.conf",
            sync_timeout=sync_timeout,
            sync_poll=sync_poll,
            log_files=tuple(f for f in (env.get("SLURM_LOG_FILES") or "").split(",") if f),
            node_log=env.get("SLURMD_LOG_FILE") or "/var/log/slurm/slurmd.log",
            slurmd_selector=env.get("SLURMD_POD_SELECTOR") or "app=slurmd",
            drain_poll=drain_poll,
            stuck_completing=stuck,
            write_lease=write_lease,
        )

    def make_transport(self) -> Transport:
        return self.transport.make(
            BACKEND, {"SLURM_CONF": self.slurm_conf} if self.slurm_conf else None
        )

    def client(self, cluster: str | None = None) -> SlurmClient:
        """The client of `cluster` (default: this one), over this transport and write lock."""
        return SlurmClient(
            self.make_transport(), cluster=cluster or self.cluster, write_lock=self.write_lock()
        )

    def write_lock(self) -> LeaseLock | None:
        """The Lease sacctmgr writes hold, if one is set. A write lasts at most the transport's
        timeout; a holder that died is taken over after three times that."""
        if self.write_lease is None:
            return None
        namespace, name = self.write_lease
        holder = f"{socket.gethostname()}:{os.getpid()}"
        return LeaseLock(namespace, name, holder, int(3 * self.transport.timeout) + 1)

    def partition_store(self, doing: str) -> PartitionStore:
        if self.partitions_file is None:
            raise SlurmError(
                doing,
                "SLURM_PARTITIONS_FILE is not set",
                "set it to the partitions file that slurm.conf includes (`Include <path>`)",
            )
        if self.partitions_configmap is None:
            return FileStore(self.partitions_file)
        namespace, name = self.partitions_configmap
        return ConfigMapStore(
            namespace=namespace,
            name=name,
            key=self.partitions_key,
            controller_path=str(self.partitions_file),
            controller=self.make_transport(),
            timeout=self.transport.timeout,
            sync_timeout=self.sync_timeout,
            poll_seconds=self.sync_poll,
        )


def _namespaced(env: Mapping[str, str], variable: str) -> tuple[str, str] | None:
    raw = env.get(variable) or ""
    if not raw:
        return None
    namespace, _, name = raw.partition("/")
    if not namespace or not name or "/" in name:
        raise ValueError(f"{variable}={raw!r}: give namespace/name")
    return namespace, name
