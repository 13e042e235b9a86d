"""The sandbox's real Kubernetes node: containerd and a kubelet that run pods.

Each sandbox has one, `cpu-01`, in a network namespace of its own, as a machine of its own would
be: its pods' bridge, its iptables chains and its kubelet's ports are the node's, so the
operator's sandbox and the tests' run side by side without sharing a chain or a port. A veth pair
joins the node to this machine, and the kubelet reaches the API server on loopback through a DNAT
rule on this machine's end (with route_localnet, as kube-proxy does for localhost NodePorts). This
machine forwards no packet (net.ipv4.ip_forward stays as it is, 0 here), so nothing a pod sends
leaves it.

The stand-in nodes (gpu-01..18) stay as they are, for capacity and scheduling labels;
docs/sandbox.md says which node runs what.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx

from sandbox.kubernetes import images
from sandbox.kubernetes.addresses import DNS_SERVICE_IP, SERVICE_CIDR
from sandbox.kubernetes.client import KubeClient, KubeError
from sandbox.kubernetes.services import REAL_NODE_LABEL
from sandbox.pki import Pki, kubeconfig
from sandbox.ports import TEST_SANDBOX_OFFSET, Ports
from sandbox.service import Service, built_tool

NODE_NAME = "cpu-01"
_CGROUP_CONTROLLERS = Path("/sys/fs/cgroup")
_CNI_PLUGINS = "/usr/lib/cni"
_PROXY_HEALTH_PORT = 10256
_ROUTER_HEALTH_PORT = 20244
# The chain kube-router's policy controller makes on its first sync, which pods' traffic goes
# through before their policies' chains.
_ROUTER_CHAIN = "KUBE-ROUTER-FORWARD"


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return result


@dataclass(frozen=True)
class RealNode:
    state_dir: Path
    pki: Pki
    ports: Ports
    # The platform's pod network (its `cluster_cidr`): each sandbox's node has one /24 of it, as
    # each RKE2 node has.
    cluster_cidr: str
    # The ports of the platform's services the sandbox runs as processes (in_cluster), as
    # (port at the node's gateway, port of this machine's loopback): pods reach them on the
    # ports the platform's settings name, which their NetworkPolicies allow.
    forwarded_ports: tuple[tuple[int, int], ...] = ()

    @property
    def index(self) -> int:
        """0 for the operator's sandbox, 1 to 3 for the tests': names and subnets of its own."""
        return self.ports.offset // TEST_SANDBOX_OFFSET

    @property
    def netns(self) -> str:
        return f"gpu-tenants-node-{self.index}"

    @property
    def host_address(self) -> str:
        """This machine's end of the veth pair: the node's gateway and the API server's address."""
        return f"10.231.{self.index}.1"

    @property
    def users_address(self) -> str:
        """An address of this machine's that stands for the users' network, outside the cluster:
        a connection from it is no platform process's (those come from `host_address`, which
        stands in for pods of the platform's namespaces, in_cluster)."""
        return f"10.231.{self.index}.5"

    @property
    def address(self) -> str:
        """The node's InternalIP, its end of the veth pair."""
        return f"10.231.{self.index}.2"

    @property
    def pod_subnet(self) -> str:
        return str(
            list(ipaddress.IPv4Network(self.cluster_cidr).subnets(new_prefix=24))[self.index]
        )

    @property
    def _pod_gateway(self) -> str:
        return str(ipaddress.IPv4Network(self.pod_subnet)[1])

    @property
    def load_balancer_pool(self) -> str:
        """The addresses LoadBalancer Services get, which this machine routes to the node."""
        return f"10.233.{self.index}.0/24"

    @property
    def _host_veth(self) -> str:
        return f"gtnode{self.index}"

    @property
    def socket(self) -> Path:
        return self.state_dir / "containerd" / "containerd.sock"

    @property
    def cgroup_root(self) -> str:
        # Named by the state directory too: stopping a sandbox kills what runs in these cgroups,
        # which must never be another sandbox's of the same number (a test's copy under /tmp).
        owner = hashlib.sha256(str(self.state_dir).encode()).hexdigest()[:8]
        return f"/gpu-tenants-node-{self.index}-{owner}"

    @property
    def kubelet_dir(self) -> Path:
        return self.state_dir / "kubelet"

    def _in_node(self, *argv: str) -> list[str]:
        # nsenter, not `ip netns exec`: that one also makes a mount namespace of its own, and
        # containerd must see the volumes the kubelet mounts.
        return ["nsenter", f"--net=/run/netns/{self.netns}", "--", *argv]

    def services(self) -> list[Service]:
        containerd = Service(
            name="containerd",
            argv=self._in_node(built_tool("containerd"), f"--config={self._containerd_config()}"),
            ready=self._containerd_ready,
            prepare=self._prepare_containerd,
            stopped=self._clear_containers,
            revision=self._containerd_config_text,
        )
        kubelet = Service(
            name="kubelet",
            argv=self._in_node(
                built_tool("kubelet"),
                f"--config={self.state_dir / 'kubelet.yaml'}",
                f"--kubeconfig={self.state_dir / 'kubelet.kubeconfig'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.address}",
                f"--root-dir={self.kubelet_dir}",
                f"--cert-dir={self.state_dir / 'kubelet-pki'}",
                f"--node-labels=node.kubernetes.io/instance-type=sandbox-cpu,{REAL_NODE_LABEL}=true",
                "--v=1",
            ),
            ready=self._kubelet_ready,
            prepare=self._prepare_kubelet,
            stopped=self._unmount_volumes,
            revision=self._kubelet_config_text,
            ready_timeout=120,
        )
        proxy = Service(
            name="kube-proxy",
            argv=self._in_node(
                built_tool("kube-proxy"), f"--config={self.state_dir / 'kube-proxy.yaml'}"
            ),
            ready=self._proxy_ready,
            prepare=self._prepare_proxy,
            revision=self._proxy_config_text,
        )
        router = Service(
            name="kube-router",
            argv=self._in_node(
                built_tool("kube-router"),
                # Its network-policy controller alone, as k3s embeds it: the router (BGP) and
                # service-proxy controllers, where its published advisories are, stay off, and
                # the pods' network stays the bridge plugin's.
                "--run-firewall=true",
                "--run-router=false",
                "--run-service-proxy=false",
                "--enable-cni=false",
                f"--kubeconfig={self.state_dir / 'kube-router.kubeconfig'}",
                f"--hostname-override={NODE_NAME}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--health-port={_ROUTER_HEALTH_PORT}",
                "--metrics-port=0",
            ),
            ready=self._router_ready,
            prepare=self._prepare_router,
        )
        return [containerd, kubelet, proxy, router]

    # The network namespace and the veth pair.

    def ensure_network(self) -> None:
        if not Path(f"/run/netns/{self.netns}").exists():
            _run("ip", "netns", "add", self.netns)
        node = ["ip", "-n", self.netns]
        if _run("ip", "link", "show", self._host_veth, check=False).returncode != 0:
            _run("ip", "link", "add", self._host_veth, "type", "veth", "peer", "name", "eth0",
                 "netns", self.netns)  # fmt: skip
        _run("ip", "addr", "replace", f"{self.host_address}/30", "dev", self._host_veth)
        _run("ip", "addr", "replace", f"{self.users_address}/32", "dev", self._host_veth)
        _run("ip", "link", "set", self._host_veth, "up")
        _run(*node, "addr", "replace", f"{self.address}/30", "dev", "eth0")
        _run(*node, "link", "set", "eth0", "up")
        _run(*node, "link", "set", "lo", "up")
        _run(*node, "route", "replace", "default", "via", self.host_address)
        _run("ip", "route", "replace", self.pod_subnet, "via", self.address)
        # A node made when the pods had another subnet keeps its bridge, whose address the
        # bridge plugin would refuse to change: it is made again at the next pod's start.
        bridge = _run(*node, "-4", "-o", "addr", "show", "dev", "cni0", check=False).stdout
        if bridge and f" {self._pod_gateway}/" not in bridge:
            _run(*node, "link", "delete", "cni0")
        _run("ip", "route", "replace", self.load_balancer_pool, "via", self.address)
        # The node forwards between its pods' bridge and its veth; this machine does not.
        _run("ip", "netns", "exec", self.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # Pods on one bridge talk past the FORWARD chain unless bridged packets go through
        # iptables, where kube-proxy's and kube-router's rules are.
        _run("ip", "netns", "exec", self.netns, "sysctl", "-qw",
             "net.bridge.bridge-nf-call-iptables=1")  # fmt: skip
        Path(f"/proc/sys/net/ipv4/conf/{self._host_veth}/route_localnet").write_text("1")
        api_server = (self.ports.apiserver, self.ports.apiserver)
        for port, host_port in (api_server, *self.forwarded_ports):
            rule = [
                "PREROUTING", "-i", self._host_veth, "-p", "tcp", "-d", self.host_address,
                "--dport", str(port), "-j", "DNAT", "--to-destination", f"127.0.0.1:{host_port}",
            ]  # fmt: skip
            if _run("iptables", "-t", "nat", "-C", *rule, check=False).returncode != 0:
                _run("iptables", "-t", "nat", "-A", *rule)

    # containerd.

    def _containerd_config(self) -> Path:
        return self.state_dir / "containerd.toml"

    def _containerd_config_text(self) -> str:
        d = self.state_dir / "containerd"
        return f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{self.socket}"

[ttrpc]
  address = "{self.socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{images.PAUSE_IMAGE}"
  netns_mounts_under_state_dir = true
  # Root here lacks CAP_SYS_RESOURCE, so the kernel refuses an oom_score_adj below this
  # process's own (0): the -998 kubelet gives every pod's sandbox would fail to start.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{_CNI_PLUGINS}"
    conf_dir = "{self.state_dir / "cni"}"
"""

    def _cni_config_text(self) -> str:
        gateway = self._pod_gateway
        return f"""{{
  "cniVersion": "1.0.0",
  "name": "sandbox-pods",
  "plugins": [
    {{
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {{
        "type": "host-local",
        "dataDir": "{self.state_dir / "cni-ipam"}",
        "ranges": [[{{"subnet": "{self.pod_subnet}", "gateway": "{gateway}"}}]],
        "routes": [{{"dst": "0.0.0.0/0"}}]
      }}
    }},
    {{"type": "portmap", "capabilities": {{"portMappings": true}}}}
  ]
}}
"""

    def _prepare_containerd(self) -> None:
        self.ensure_network()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._containerd_config().write_text(self._containerd_config_text())
        cni = self.state_dir / "cni"
        cni.mkdir(exist_ok=True)
        (cni / "10-sandbox-pods.conflist").write_text(self._cni_config_text())

    def _containerd_ready(self) -> bool:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(1)
            try:
                sock.connect(str(self.socket))
            except OSError:
                return False
        return True

    def import_images(self) -> list[str]:
        """Imports the node's images into containerd unless it holds them as they are made now
        (same name, same digest); returns those it imported."""
        ctr = [built_tool("ctr"), f"--address={self.socket}", "--namespace=k8s.io"]
        # REF TYPE DIGEST SIZE PLATFORMS LABELS, one image a line after the header.
        listed = _run(*ctr, "images", "list").stdout.splitlines()[1:]
        held = {line.split()[0]: line.split()[2] for line in listed if line.strip()}
        pause = images.build_pause(self.state_dir / "images" / "pause")
        imported = []
        for image in images.images(pause, Path(built_tool("coredns"))):
            archive, digest = images.archive(image, self.state_dir / "images")
            if held.get(image.name) == digest:
                continue
            _run(*ctr, "images", "import", "--no-unpack", str(archive))
            imported.append(image.name)
        return imported

    def _clear_containers(self) -> None:
        """After containerd stops: ends what it started, which outlives it (each container's shim
        is a session of its own), and lets go of their mounts, so `reset` can delete the state."""
        for cgroup in _CGROUP_CONTROLLERS.glob(f"*{self.cgroup_root}"):
            for procs in cgroup.rglob("cgroup.procs"):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
        for proc in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                command = (proc / "cmdline").read_bytes().split(b"\0")
                if (
                    command[0].endswith(b"containerd-shim-runc-v2")
                    and str(self.socket).encode() in command
                ):
                    os.kill(int(proc.name), signal.SIGKILL)
        _unmount_under(self.state_dir / "containerd")

    # kubelet.

    def _kubelet_config_text(self) -> str:
        return f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {self.address}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {self.pki.ca_cert}
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
cgroupRoot: {self.cgroup_root}
containerRuntimeEndpoint: unix://{self.socket}
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
clusterDNS: [{DNS_SERVICE_IP}]
clusterDomain: cluster.local
resolvConf: {self.state_dir / "resolv.conf"}
# Not /var/log/pods: each kubelet deletes what it finds there of pods it does not run, so the
# four sandboxes' kubelets would delete each other's logs.
podLogsDir: {self.state_dir / "pod-logs"}
serializeImagePulls: false
# The machine's disk is shared with everything else on it: evict on near-full only.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
"""

    def _prepare_kubelet(self) -> None:
        self.pki.ensure()
        (self.state_dir / "kubelet.yaml").write_text(self._kubelet_config_text())
        # For pods of dnsPolicy Default (CoreDNS's own): no nameserver, so that no pod ever asks
        # this machine's resolver.
        (self.state_dir / "resolv.conf").write_text("search cluster.local\n")
        self._write_kubeconfig(f"node-{NODE_NAME}", self.state_dir / "kubelet.kubeconfig")
        for controller in _CGROUP_CONTROLLERS.iterdir():
            _make_cgroup(controller, self.cgroup_root.lstrip("/"))
        self._kubelet_started.write_text(f"{int(time.time())}\n")

    @property
    def _kubelet_started(self) -> Path:
        return self.state_dir / "kubelet.started"

    def _kubelet_ready(self) -> bool:
        try:
            client = KubeClient(
                server=f"https://127.0.0.1:{self.ports.apiserver}",
                ca=self.pki.ca_cert,
                cert=self.pki.cert("admin"),
                key=self.pki.key("admin"),
                timeout=2,
            )
            try:
                node = client.get(f"/api/v1/nodes/{NODE_NAME}")
            finally:
                client.close()
        except (OSError, httpx.HTTPError, KubeError):
            return False
        # The node stays Ready for a while after its kubelet dies, and a restarted kubelet first
        # reports it not ready: only a Ready posted since this kubelet started counts.
        try:
            started = int(self._kubelet_started.read_text())
        except (OSError, ValueError):
            started = 0
        return any(
            c["type"] == "Ready"
            and c["status"] == "True"
            and datetime.fromisoformat(c["lastHeartbeatTime"]).timestamp() >= started
            for c in node.get("status", {}).get("conditions", [])
        )

    # kube-proxy.

    def _proxy_config_text(self) -> str:
        return f"""apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {self.state_dir / "kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: {self.pod_subnet}
hostnameOverride: {NODE_NAME}
bindAddress: {self.address}
healthzBindAddress: {self.address}:{_PROXY_HEALTH_PORT}
metricsBindAddress: 127.0.0.1:10249
# The conntrack table is this machine's, not the node's: leave its size alone.
conntrack:
  maxPerCore: 0
"""

    def _prepare_proxy(self) -> None:
        self.pki.ensure()
        (self.state_dir / "kube-proxy.yaml").write_text(self._proxy_config_text())
        self._write_kubeconfig("kube-proxy", self.state_dir / "kube-proxy.kubeconfig")

    def _proxy_ready(self) -> bool:
        return self._healthy(_PROXY_HEALTH_PORT)

    def _healthy(self, port: int) -> bool:
        """Whether the node's process serving /healthz on `port` says it is."""
        try:
            return httpx.get(f"http://{self.address}:{port}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    # kube-router.

    def _prepare_router(self) -> None:
        self.pki.ensure()
        self._write_kubeconfig("kube-router", self.state_dir / "kube-router.kubeconfig")

    def _router_ready(self) -> bool:
        if not self._healthy(_ROUTER_HEALTH_PORT):
            return False
        return _run(*self._in_node("iptables", "-S", _ROUTER_CHAIN), check=False).returncode == 0

    def _write_kubeconfig(self, client: str, path: Path) -> None:
        server = f"https://{self.host_address}:{self.ports.apiserver}"
        config = kubeconfig(self.pki, client, server)
        # The API server's certificate names loopback and `kubernetes`, not the veth address.
        config = config.replace(
            f"    server: {server}\n", f"    server: {server}\n    tls-server-name: kubernetes\n"
        )
        path.write_text(config)
        path.chmod(0o600)

    def _unmount_volumes(self) -> None:
        _unmount_under(self.kubelet_dir)


def _make_cgroup(controller: Path, name: str) -> None:
    if not controller.is_dir():
        return
    cgroup = controller / name
    cgroup.mkdir(exist_ok=True)
    if controller.name == "cpuset":
        # A v1 cpuset starts with no CPUs and no memory nodes: give it its parent's.
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if not (cgroup / knob).read_text().strip():
                (cgroup / knob).write_text((controller / knob).read_text())


def _unmount_under(directory: Path) -> None:
    """Unmounts everything mounted at or below `directory`, deepest first (lazily: a mount a
    dying process still holds goes when it does)."""
    prefix = str(directory.resolve())
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    below = [m for m in mounts if m == prefix or m.startswith(prefix + "/")]
    for target in sorted(below, key=len, reverse=True):
        _run("umount", "--lazy", target, check=False)
