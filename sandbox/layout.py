"""Where each part of a sandbox keeps its state, which ports it uses, in which order the parts
start, and what a person's shell needs to reach them.

The sandboxes are alike but for state directory and ports: the operator's (`make sandbox-up`,
`make demo`) and the tests' (`make test`), one per pytest worker, chosen by GPU_TENANTS_SANDBOX:
unset for the operator's, `test` for the first worker's, `test-2` and `test-3` for the others'.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sandbox.authentik.ldap_server import LdapServer
from sandbox.authentik.service import (
    authentik_service,
    authentik_url,
    seed_parent_group,
    token_file,
)
from sandbox.kubernetes import images, in_cluster
from sandbox.kubernetes.client import KubeClient
from sandbox.kubernetes.configmap_volume import NAME as PARTITIONS_CONFIGMAP
from sandbox.kubernetes.configmap_volume import NAMESPACE as PARTITIONS_NAMESPACE
from sandbox.kubernetes.configmap_volume import configmap_volume_service
from sandbox.kubernetes.external_dns import external_dns_services
from sandbox.kubernetes.load_balancer import load_balancer_service
from sandbox.kubernetes.login_release import Cluster as LoginCluster
from sandbox.kubernetes.login_release import login_release_service
from sandbox.kubernetes.node import NODE_NAME, RealNode
from sandbox.kubernetes.seed import NodeSeed, condition_taints, seed, seed_digest
from sandbox.kubernetes.services import KubernetesSandbox
from sandbox.pki import Pki
from sandbox.ports import TEST_SANDBOX_OFFSET, TEST_SANDBOXES, Ports
from sandbox.retention_store import (
    LEDGER_BUCKET,
    STATE_BUCKET,
    client_environment,
    retention_store_service,
    seed_bucket,
    seed_state_owner,
    state_backend_environment,
)
from sandbox.service import Service
from sandbox.slurm import SlurmSettings, client_env, slurm_services, slurmd_services
from sandbox.slurm.prepare import PARTITIONS_PLACEHOLDER
from sandbox.smtp.service import USERNAME as SMTP_USERNAME
from sandbox.smtp.service import password_file as smtp_password_file
from sandbox.smtp.service import smtp_service, smtp_url
from sandbox.supervisor import SandboxError
from sandbox.temporal import temporal_address, temporal_service
from sandbox.versions import pinned
from sandbox.weka.service import (
    admin_password_file,
    seed_root_filesystems,
    weka_service,
    weka_url,
)

if TYPE_CHECKING:
    from tenant_stack.platform import Platform

PROJECT = Path(__file__).resolve().parents[1]
PLATFORM_FILE = PROJECT / "Pulumi.prod.yaml"
# Sizes of the platform's shared filesystems in the emulated cluster of 2 PB.
SHARED_HOME_BYTES = 100 * 10**12
SHARED_SCRATCH_BYTES = 400 * 10**12


def name_of_tests_sandbox(slot: int) -> str:
    """GPU_TENANTS_SANDBOX for the tests' sandbox `slot`: test, test-2, test-3."""
    return "test" if slot == 1 else f"test-{slot}"


def _state_dir() -> Path:
    default = Path.home() / ".local" / "state" / "gpu-tenants"
    return Path(os.environ.get("GPU_TENANTS_STATE") or default)


@functools.cache
def _platform() -> Platform:
    """The platform's settings: the Weka shared filesystems' names, the names by which pods
    reach slurmctld."""
    # Imported here, not above: the platform's models would slow down every `make -s env`.
    from tenant_stack.errors import PlatformError
    from tenant_stack.platform import load_platform

    try:
        return load_platform(PLATFORM_FILE)
    except PlatformError as error:
        raise SandboxError(str(error)) from error


def _ldap_outpost() -> tuple[str, int]:
    """The LDAP outpost Service's host name and port, from the platform's LDAP URI."""
    uri = urlsplit(_platform().ldap.uri)
    return uri.hostname or "", uri.port or 636


@dataclass(frozen=True)
class SandboxLayout:
    root: Path
    ports: Ports = field(default_factory=Ports)

    @classmethod
    def from_environment(cls) -> SandboxLayout:
        """The sandbox GPU_TENANTS_SANDBOX names, under GPU_TENANTS_STATE."""
        name = os.environ.get("GPU_TENANTS_SANDBOX", "")
        if not name:
            return cls(_state_dir() / "sandbox")
        for slot in range(1, TEST_SANDBOXES + 1):
            if name == name_of_tests_sandbox(slot):
                return cls.for_tests(slot)
        names = ", ".join(name_of_tests_sandbox(slot) for slot in range(1, TEST_SANDBOXES + 1))
        raise SandboxError(
            f"GPU_TENANTS_SANDBOX={name!r} names no sandbox: unset it for the operator's, "
            f"or give one of the tests' ({names})"
        )

    @classmethod
    def for_tests(cls, slot: int) -> SandboxLayout:
        """The tests' sandbox `slot` (1 to TEST_SANDBOXES): a pytest worker's own."""
        root = _state_dir() / ("test-sandbox" if slot == 1 else f"test-sandbox-{slot}")
        return cls(root, Ports(TEST_SANDBOX_OFFSET * slot))

    @property
    def pki(self) -> Pki:
        return Pki(self.root / "pki")

    @property
    def kubernetes(self) -> KubernetesSandbox:
        return KubernetesSandbox(
            self.root / "kubernetes", self.pki, self.ports, _platform().login_chart.runtime_class
        )

    @property
    def node(self) -> RealNode:
        forwarded = tuple((s.port, s.host_port) for s in self.host_services)
        cluster_cidr = _platform().kubernetes.cluster_cidr
        return RealNode(self.root / "node", self.pki, self.ports, cluster_cidr, forwarded)

    @property
    def host_services(self) -> list[in_cluster.HostService]:
        """The platform's services that this sandbox runs as processes, which pods reach by the
        names the platform's settings give them."""
        slurm = _platform().slurm
        name, namespace = slurm.controller_host.split(".")[:2]
        ldap_host, ldap_port = _ldap_outpost()
        ldap_name, ldap_namespace = ldap_host.split(".")[:2]
        return [
            in_cluster.HostService(
                namespace, name, slurm.ports.slurmctld, self.slurm.slurmctld_port
            ),
            in_cluster.HostService(ldap_namespace, ldap_name, ldap_port, self.ports.ldap_outpost),
        ]

    @property
    def ldap_server(self) -> LdapServer:
        """The Authentik emulator's LDAP face, which pods reach as the platform's outpost."""
        ldap = _platform().ldap
        return LdapServer(
            self.root / "ldap", self.pki, self.ports.ldap_outpost, ldap.base_dn, ldap.bind_dn
        )

    @property
    def ldap_server_names(self) -> list[str]:
        """The outpost Service's names, which its certificate must carry: the one in the
        platform's LDAP URI and the cluster's full one."""
        host = _ldap_outpost()[0]
        return [host, f"{host}.cluster.local"]

    @property
    def project(self) -> Path:
        """Where this sandbox's stacks are run from, with their stack config files
        (`sandbox/project.py` says why not from the checkout)."""
        return self.root / "project"

    @property
    def weka_mount_root(self) -> Path:
        """Where the Weka emulator's filesystems are directories, as on a host mounting them."""
        return self.root / "weka" / "mounts"

    @property
    def retention_store(self) -> Path:
        """Where the retention object store keeps its credentials and its buckets' data."""
        return self.root / "retention-store"

    @property
    def retention_store_environment(self) -> dict[str, str]:
        """RETENTION_S3_*: what the store's clients read, the Weka emulator among them."""
        return client_environment(self.retention_store, self.ports.retention_store)

    @property
    def node_scratch(self) -> Path:
        """The Weka emulator's shared scratch filesystem (Root's), which the nodes mount."""
        return self.weka_mount_root / "Root" / _platform().weka.shared_scratch_filesystem

    @property
    def slurm(self) -> SlurmSettings:
        return SlurmSettings(self.root / "slurm", self.ports.offset)

    def services(self) -> list[Service]:
        """Every sandbox process, in start order (stopped in the reverse)."""
        return [
            *self.kubernetes.services(),
            *self.node.services(),
            login_release_service(
                self.kubernetes.server,
                self.pki,
                LoginCluster(
                    images.login_image(),
                    self.slurm.cluster_name,
                    _platform().slurm.ports.slurmctld,
                    self.slurm.munge_socket.parent,
                ),
                self.kubernetes.apiserver_ready,
            ),
            load_balancer_service(
                self.kubernetes.server,
                self.pki,
                self.node.load_balancer_pool,
                self.kubernetes.apiserver_ready,
            ),
            *external_dns_services(
                self.root / "external-dns",
                self.kubernetes.server,
                self.pki,
                _platform().dns_domain,
                self.ports.dns,
                self.kubernetes.apiserver_ready,
            ),
            *slurm_services(self.root / "slurm", self.ports.offset),
            configmap_volume_service(
                self.kubernetes.server,
                self.pki,
                self.slurm.configmap_partitions_conf,
                PARTITIONS_PLACEHOLDER,
                self.kubernetes.apiserver_ready,
            ),
            # Before Weka: Weka's object store bucket is in it, where its snapshots are uploaded.
            retention_store_service(self.retention_store, self.ports.retention_store),
            weka_service(
                self.root / "weka",
                self.pki,
                self.ports.weka,
                self.weka_mount_root,
                object_store=self.retention_store_environment,
            ),
            # After Weka: each node mounts the shared scratch filesystem the emulator makes.
            *slurmd_services(self.root / "slurm", self.ports.offset, self.node_scratch),
            self.ldap_server.service(self.ldap_server_names),
            authentik_service(self.root / "authentik", self.ports.authentik, self.ldap_server),
            # The customer notices' relay, delivering into a Maildir (sandbox/smtp).
            smtp_service(self.root / "smtp", self.pki, self.ports.smtp),
            temporal_service(
                self.root / "temporal",
                self.ports.temporal,
                self.ports.temporal_http,
                self.ports.temporal_metrics,
            ),
        ]

    @contextmanager
    def _admin_client(self) -> Iterator[KubeClient]:
        pki = self.pki
        client = KubeClient(
            server=self.kubernetes.server,
            ca=pki.ca_cert,
            cert=pki.cert("admin"),
            key=pki.key("admin"),
        )
        try:
            yield client
        finally:
            client.close()

    def seed_kubernetes(self, *, always: bool) -> bool:
        """Seeds the cluster (`seed`) if `always` (its control plane just started, maybe on an
        empty etcd) or if what it seeded last differs from what it would seed now. Returns
        whether it seeded."""
        inputs = (
            self.ldap_server.bind_password(),
            pinned("KUBERNETES_VERSION"),
            _platform().login_chart.runtime_class,
        )
        record = self.root / "kubernetes" / "seeded"
        digest = seed_digest(*inputs)
        if not always and record.exists() and record.read_text().strip() == digest:
            return False
        with self._admin_client() as client:
            seed(client, *inputs)
        record.write_text(digest + "\n")
        return True

    def seed_real_node(self) -> None:
        """Takes the not-ready taint off the real node, whose kubelet now reports Ready, and
        puts on the cluster what its pods reach by name: the API server and the cluster DNS."""
        with self._admin_client() as client:
            condition_taints(client, f"/api/v1/nodes/{NODE_NAME}", NodeSeed(NODE_NAME))
            in_cluster.seed(
                client, self.node.host_address, self.ports.apiserver, self.host_services
            )

    def seed_authentik(self) -> bool:
        """Creates what a tenant's identity hangs under, if missing (so: also after an upgrade)."""
        return seed_parent_group(self.root / "authentik", self.ports.authentik)

    def seed_retention_store(self) -> bool:
        """Creates the bucket offboarding archives into, the ledger's (with Object Lock), and
        the Pulumi state's with its owner, if missing. Returns whether it had to create one."""
        store, port = self.retention_store, self.ports.retention_store
        made = seed_bucket(store, port)
        made = seed_bucket(store, port, STATE_BUCKET) or made
        made = seed_state_owner(store, port) or made
        return seed_bucket(store, port, LEDGER_BUCKET, object_lock=True) or made

    def seed_weka(self) -> list[str]:
        """Creates the platform's shared filesystems in Root, where directory-isolated tenants
        get their directories, if missing. Returns the names it created."""
        weka = _platform().weka
        capacities = {
            weka.shared_home_filesystem: SHARED_HOME_BYTES,
            weka.shared_scratch_filesystem: SHARED_SCRATCH_BYTES,
        }
        return seed_root_filesystems(
            self.root / "weka", self.pki, self.ports.weka, weka.filesystem_group, capacities
        )

    def environment(self) -> dict[str, str]:
        """What `make -s env` exports so a person can reach every part by hand."""
        return {
            "GPU_TENANTS_PROJECT": str(self.project),
            "KUBECONFIG": str(self.kubernetes.admin_kubeconfig),
            **client_env(self.root / "slurm"),
            # Partitions go through the Slurm operator's ConfigMap, as in production; the
            # provider waits until the controller's copy of it shows a change. The copy lands
            # within a quarter second here (configmap_volume.INTERVAL), not a minute: looking
            # every 2 s, as against a kubelet, would make each partition write wait 2 s.
            "SLURM_PARTITIONS_CONFIGMAP": f"{PARTITIONS_NAMESPACE}/{PARTITIONS_CONFIGMAP}",
            "SLURM_PARTITIONS_FILE": str(self.slurm.configmap_partitions_conf),
            "SLURM_PARTITIONS_POLL_SECONDS": "0.2",
            # A drain looks at the queue every second: squeue is cheap against the sandbox's few
            # jobs, and a drain's `up` then ends within a second of the last job (production: 5).
            "SLURM_DRAIN_POLL_SECONDS": "1",
            # Offboarding archives these with the tenant's accounting (runbook step 3c): the
            # controller's log, and each node's slurmd log, which the sandbox's slurmd daemons
            # (on this host, not in pods) write one file each. A stand-in node has none.
            "SLURM_LOG_FILES": str(self.slurm.log_dir / "slurmctld.log"),
            "SLURMD_LOG_FILE": str(self.slurm.log_dir / "slurmd-{node}.log"),
            "AUTHENTIK_CA_FILE": str(self.pki.ca_cert),
            "WEKA_CA_FILE": str(self.pki.ca_cert),
            "WEKA_URL": weka_url(self.ports.weka),
            "WEKA_USERNAME": "admin",
            "WEKA_PASSWORD_FILE": str(admin_password_file(self.root / "weka")),
            "WEKA_MOUNT_ROOT": str(self.weka_mount_root),
            "WEKA_MOUNT_TRANSPORT": "local",
            "AUTHENTIK_URL": authentik_url(self.ports.authentik),
            "AUTHENTIK_TOKEN_FILE": str(token_file(self.root / "authentik")),
            **self.retention_store_environment,
            "GPU_TENANTS_SMTP_URL": smtp_url(self.ports.smtp),
            "GPU_TENANTS_SMTP_USERNAME": SMTP_USERNAME,
            "GPU_TENANTS_SMTP_PASSWORD_FILE": str(smtp_password_file(self.root / "smtp")),
            "GPU_TENANTS_SMTP_CA_FILE": str(self.pki.ca_cert),
            # The DNS server of the zone external-dns writes the login hosts' names to:
            # `busybox nslookup login.<slug>.<domain> $GPU_TENANTS_SANDBOX_DNS`.
            "GPU_TENANTS_SANDBOX_DNS": f"127.0.0.1:{self.ports.dns}",
            **state_backend_environment(self.retention_store, self.ports.retention_store),
            # Where the fleet's workflows run (`python -m tenant_stack worker`, `fleet`).
            "TEMPORAL_ADDRESS": temporal_address(self.ports.temporal),
            # A worker killed here (the tests kill four) is taken for dead after 8 s without a
            # beat, not production's 20 s; its runs' workers beat every 2 s, margin enough on a
            # busy 2-core machine running two test workers.
            "GPU_TENANTS_HEARTBEAT_TIMEOUT": "8",
        }
