"""The Kubernetes control plane as sandbox services: etcd, kube-apiserver, kube-controller-manager
and the stand-in reservation operator, all on 127.0.0.1."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx

from sandbox.kubernetes.addresses import SERVICE_CIDR
from sandbox.kubernetes.client import controller_service, tls_context
from sandbox.pki import Pki, kubeconfig
from sandbox.ports import Ports
from sandbox.service import Service, built_tool

# What the kubelet of a real node labels it with (a stand-in node has no such label).
REAL_NODE_LABEL = "sandbox.gpu-tenants.io/real-node"


def _answers(url: str, verify: ssl.SSLContext | bool) -> bool:
    try:
        response = httpx.get(url, verify=verify, timeout=2)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


class KubernetesSandbox:
    def __init__(self, state_dir: Path, pki: Pki, ports: Ports, login_runtime_class: str) -> None:
        self.dir = state_dir
        self.pki = pki
        self.ports = ports
        self.login_runtime_class = login_runtime_class

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    def _scheduler_config_text(self) -> str:
        # Only real nodes get pods: a pod bound to a stand-in node could never be deleted, since
        # no kubelet there confirms it gone, and its namespace would never go.
        return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {self.dir / "scheduler.kubeconfig"}
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: NodeAffinity
        args:
          addedAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions:
                    - {{key: {REAL_NODE_LABEL}, operator: Exists}}
"""

    def _write_scheduler_config(self) -> None:
        (self.dir / "scheduler.yaml").write_text(self._scheduler_config_text())

    def _admission_config_text(self) -> str:
        # As RKE2's pod-security-admission-config-file: namespaces without a label enforce
        # nothing, and the login release's RuntimeClass is exempt (docs/design.md).
        return f"""apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults: {{enforce: privileged, enforce-version: latest}}
      exemptions:
        usernames: []
        namespaces: []
        runtimeClasses: [{self.login_runtime_class}]
"""

    def _prepare_apiserver(self) -> None:
        (self.dir / "admission.yaml").write_text(self._admission_config_text())
        self.pki.ensure()
        for client in ("admin", "controller-manager", "scheduler"):
            path = self.dir / f"{client}.kubeconfig"
            path.write_text(kubeconfig(self.pki, client, self.server))
            path.chmod(0o600)

    def apiserver_ready(self) -> bool:
        admin = tls_context(self.pki.ca_cert, self.pki.cert("admin"), self.pki.key("admin"))
        return _answers(f"{self.server}/readyz", admin)

    def services(self) -> list[Service]:
        pki = self.pki
        etcd_client, etcd_peer = self.ports.etcd_client, self.ports.etcd_peer
        apiserver_port, controller_manager_port = (
            self.ports.apiserver,
            self.ports.controller_manager,
        )
        etcd = Service(
            name="etcd",
            argv=[
                built_tool("etcd"),
                "--name=sandbox",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
                f"--initial-cluster=sandbox=http://127.0.0.1:{etcd_peer}",
                "--quota-backend-bytes=2147483648",
                "--log-level=warn",
            ],
            ports=(etcd_client, etcd_peer),
            ready=lambda: _answers(f"http://127.0.0.1:{etcd_client}/health", False),
        )
        apiserver = Service(
            name="kube-apiserver",
            argv=[
                built_tool("kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={apiserver_port}",
                # One apiserver on loopback: there is no endpoint for the kubernetes Service.
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={pki.cert('apiserver')}",
                f"--tls-private-key-file={pki.key('apiserver')}",
                f"--client-ca-file={pki.ca_cert}",
                f"--service-account-key-file={pki.service_account_pub}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                # Privileged pods are allowed, so PodSecurity labels are what refuses them.
                "--allow-privileged=true",
                "--enable-admission-plugins=NodeRestriction",
                f"--admission-control-config-file={self.dir / 'admission.yaml'}",
                # How `kubectl logs` and `exec` reach the real node's kubelet: at its address,
                # since no DNS here knows a node's name.
                "--kubelet-preferred-address-types=InternalIP",
                f"--kubelet-client-certificate={pki.cert('apiserver-kubelet-client')}",
                f"--kubelet-client-key={pki.key('apiserver-kubelet-client')}",
                "--profiling=false",
            ],
            ports=(apiserver_port,),
            prepare=self._prepare_apiserver,
            revision=self._admission_config_text,
            ready=self.apiserver_ready,
            ready_timeout=90,
        )
        controller_manager_kubeconfig = str(self.dir / "controller-manager.kubeconfig")
        controller_manager = Service(
            name="kube-controller-manager",
            argv=[
                built_tool("kube-controller-manager"),
                f"--kubeconfig={controller_manager_kubeconfig}",
                f"--authentication-kubeconfig={controller_manager_kubeconfig}",
                f"--authorization-kubeconfig={controller_manager_kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={controller_manager_port}",
                f"--tls-cert-file={pki.cert('controller-manager-serving')}",
                f"--tls-private-key-file={pki.key('controller-manager-serving')}",
                f"--service-account-private-key-file={pki.service_account_key}",
                f"--root-ca-file={pki.ca_cert}",
                f"--cluster-signing-cert-file={pki.ca_cert}",
                f"--cluster-signing-key-file={pki.ca_key}",
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                # No kubelet posts heartbeats here: node lifecycle would mark every node
                # unreachable and taint it. The sandbox owns node status instead.
                "--controllers=*,-node-lifecycle-controller",
            ],
            ports=(controller_manager_port,),
            ready=lambda: _answers(
                f"https://127.0.0.1:{controller_manager_port}/healthz", tls_context(pki.ca_cert)
            ),
        )
        scheduler_kubeconfig = str(self.dir / "scheduler.kubeconfig")
        scheduler = Service(
            name="kube-scheduler",
            argv=[
                built_tool("kube-scheduler"),
                f"--config={self.dir / 'scheduler.yaml'}",
                f"--authentication-kubeconfig={scheduler_kubeconfig}",
                f"--authorization-kubeconfig={scheduler_kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.ports.scheduler}",
                f"--tls-cert-file={pki.cert('scheduler-serving')}",
                f"--tls-private-key-file={pki.key('scheduler-serving')}",
            ],
            ports=(self.ports.scheduler,),
            prepare=self._write_scheduler_config,
            revision=self._scheduler_config_text,
            ready=lambda: _answers(
                f"https://127.0.0.1:{self.ports.scheduler}/healthz", tls_context(pki.ca_cert)
            ),
        )
        operator = controller_service(
            "reservation-operator",
            "sandbox.kubernetes.reservation_operator",
            self.server,
            pki.dir,
            self.apiserver_ready,
        )
        return [etcd, apiserver, controller_manager, scheduler, operator]
