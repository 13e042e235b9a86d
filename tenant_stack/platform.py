"""The cluster-wide facts every tenant needs, read from `Pulumi.prod.yaml`.

`Pulumi.prod.yaml` is the config of the `prod` stack, the shared platform: endpoints, node pools,
the SKU catalogue and the names of shared objects. Config keys are namespaced `gpu-tenants:<key>`
and hold plain YAML values.

Tenant stacks read this file directly rather than through a `StackReference` to `prod`, for two
reasons. A tenant spec must be validated completely before any resource is declared (a bad spec
fails `pulumi preview` with every problem listed), and the rules need platform facts such as the
GPUs per node of a SKU; StackReference outputs are asynchronous `Output`s, known only once the
engine resolves them, too late for that. And a pull request's `pulumi preview` must work without
access to the prod stack's state. The prod stack exports the same values, for consumers that are
not this program.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationError

from providers.identities import MAX_ID
from tenant_stack.errors import PlatformError, Problem
from tenant_stack.strict_models import (
    ChartVersion,
    DistinguishedName,
    DnsLabel,
    DnsName,
    Email,
    HostPort,
    HttpsUrl,
    Ipv4Cidr,
    LdapsUri,
    SingleLine,
    StartNumber,
    StrictModel,
    problems_from,
)
from tenant_stack.strict_yaml import read_yaml_mapping

__all__ = [
    "CONFIG_NAMESPACE",
    "Authentik",
    "KubernetesNames",
    "Ldap",
    "LoginChart",
    "NodePool",
    "Platform",
    "Sku",
    "Slurm",
    "Support",
    "Weka",
    "load_platform",
    "platform_problems",
]

CONFIG_NAMESPACE = "gpu-tenants"


class Sku(StrictModel):
    """A node type of the catalogue, named as the nodes' `node.kubernetes.io/instance-type`."""

    gpus_per_node: Annotated[int, Field(ge=1, le=64)]
    gpu_model: SingleLine
    # Runbook step 7b's bar: all_reduce_perf's bus bandwidth at its largest message across two
    # nodes of the SKU, in GB/s. Below it the fabric is suspect (ACS, NCCL off the IB plane, MTU).
    min_all_reduce_busbw_gbps: Annotated[float, Field(gt=0)]


class NodePool(StrictModel):
    """A hardware pool (`hardware-pool` node label): one SKU, and its nodes by name. The node
    lists of all pools are the fleet's GPU inventory; a separate count could disagree with them."""

    sku: DnsLabel
    nodes: Annotated[list[DnsLabel], Field(min_length=1)]


class KubernetesNames(StrictModel):
    """Shared Kubernetes objects that tenant objects point at, and the cluster's pod network."""

    auth_namespace: DnsLabel
    ldap_bind_secret: DnsLabel
    slurm_namespace: DnsLabel
    reservation_operator_namespace: DnsLabel
    # Every pod's address is in it (RKE2's `cluster-cidr`): what a login pod's sshd accepts from
    # outside the cluster is everything else.
    cluster_cidr: Ipv4Cidr


class Ldap(StrictModel):
    """The Authentik LDAP outpost, as login pods reach it; the start numbers are the outpost's
    uid_start_number/gid_start_number, below which no pinned uid or gid may go."""

    uri: LdapsUri
    base_dn: DistinguishedName
    bind_dn: DistinguishedName
    uid_start_number: StartNumber
    gid_start_number: StartNumber

    @property
    def start_numbers(self) -> tuple[int, int]:
        """(uid_start_number, gid_start_number), as `handed_out` takes them."""
        return self.uid_start_number, self.gid_start_number

    @property
    def port(self) -> int:
        _, _, port = self.uri.removeprefix("ldaps://").rpartition(":")
        return int(port) if port.isdigit() else 636


class Authentik(StrictModel):
    url: HttpsUrl
    tenants_group: DnsLabel  # parent of every tenant's group


class SlurmPorts(StrictModel):
    """What the Slurm clients in a tenant's pods connect to: slurmctld (sbatch, squeue, sinfo),
    slurmd (srun's steps) and slurmdbd (sacct, sacctmgr), Slurm's defaults unless set."""

    slurmctld: Annotated[int, Field(ge=1, le=65535)] = 6817
    slurmd: Annotated[int, Field(ge=1, le=65535)] = 6818
    slurmdbd: Annotated[int, Field(ge=1, le=65535)] = 6819


class Slurm(StrictModel):
    cluster: DnsLabel
    controller_host: DnsName
    ports: SlurmPorts = SlurmPorts()
    # The highest Priority a tenant's QoS may have: a QoS's priority weighs against every other
    # tenant's jobs wherever they share nodes, so it is the platform's to bound, not a spec's.
    max_qos_priority: Annotated[int, Field(ge=0, le=MAX_ID)] = 1000


class Weka(StrictModel):
    """The Weka cluster. Tenants with `directory` isolation get directories on the shared
    filesystems; tenants with `org` isolation get filesystems of their own in `filesystem_group`."""

    api_endpoint: HostPort
    filesystem_group: DnsLabel
    shared_home_filesystem: DnsLabel
    shared_scratch_filesystem: DnsLabel
    # The object store bucket offboarding uploads a tenant's snapshots to (Snap-To-Object).
    object_store: DnsLabel = "retention"
    # Onboarding's storage pre-flight: a tenant's own filesystems must fit in what the cluster
    # has unprovisioned with this much to spare (the runbook's 20% buffer).
    capacity_headroom_percent: Annotated[int, Field(ge=0, le=100)] = 20


class InfiniBand(StrictModel):
    """The platform's InfiniBand network for pods (NVIDIA's network operator: the SR-IOV device
    plugin's resource, ib-sriov CNI through Multus, and ib-kubernetes, which adds each pod's
    GUID to the partition key its network names, through UFM). A tenant with `pkey` isolation
    gets a NetworkAttachmentDefinition of its partition key in its namespace."""

    # The device plugin's resource of InfiniBand VFs, which Multus asks for a pod's network.
    resource_name: Annotated[str, Field(pattern=r"^[a-z0-9.-]+/[A-Za-z0-9_.-]+$")]
    # The nv-ipam pool the networks' addresses come from.
    ipam_pool: DnsLabel


class LoginChart(StrictModel):
    name: DnsLabel
    version: ChartVersion
    # The RuntimeClass the release's pods run under, which the API server's Pod Security
    # configuration exempts (docs/design.md, "Where the login release runs").
    runtime_class: DnsLabel


class Retention(StrictModel):
    """How long offboarding's archives are kept in the retention store, by kind. A tenant's
    `lifecycle.retention_days` may lengthen its copies' horizon, never shorten it."""

    accounting_days: Annotated[int, Field(ge=1, le=36500)] = 7 * 365
    logs_days: Annotated[int, Field(ge=1, le=36500)] = 90
    copies_days: Annotated[int, Field(ge=1, le=36500)] = 30


class NodeHealth(StrictModel):
    """How the platform's health checker reports a node (offboarding step 7): a node condition
    of this type, True when the node is healthy (ECC, XID, InfiniBand)."""

    condition: Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]{0,62}$")]


class Notices(StrictModel):
    """Who the notices to a tenant's contact come from (offboarding's start and completion);
    they go through the mail relay that GPU_TENANTS_SMTP_URL names."""

    from_name: SingleLine
    from_address: Email


class Fleet(StrictModel):
    """The fleet's scheduled work on Temporal (`gpu-tenants fleet schedule`)."""

    drift_every_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] = 240


class Link(StrictModel):
    title: SingleLine
    url: HttpsUrl


class FirstResponse(StrictModel):
    """How soon the platform team first answers a tenant's issue, as the tenant is told."""

    business_hours: SingleLine
    otherwise: SingleLine


class Support(StrictModel):
    """What the connection sheet tells every tenant beside their own facts (runbook step 8,
    items 2 and 3): the public docs, where to take issues, and the SLA on first response."""

    docs: Annotated[list[Link], Field(min_length=1)]
    email: Email
    chat: SingleLine
    on_call: HttpsUrl
    first_response: FirstResponse


class Platform(StrictModel):
    """The cluster-wide facts, keyed as in Pulumi.prod.yaml without the `gpu-tenants:` prefix."""

    cluster_name: DnsLabel
    dns_domain: DnsName
    skus: Annotated[dict[DnsLabel, Sku], Field(min_length=1)]
    node_pools: Annotated[dict[DnsLabel, NodePool], Field(min_length=1)]
    kubernetes: KubernetesNames
    ldap: Ldap
    authentik: Authentik
    slurm: Slurm
    weka: Weka
    login_chart: LoginChart
    support: Support
    retention: Retention = Retention()
    fleet: Fleet = Fleet()
    # None where the platform gives pods no InfiniBand network: no tenant may ask for `pkey`.
    infiniband: InfiniBand | None = None
    # None where no health checker reports on the nodes: released nodes go back unchecked.
    node_health: NodeHealth | None = None
    # None where the platform sends tenants no notices by mail (the operator sends them).
    notices: Notices | None = None

    def gpu_inventory(self) -> dict[str, int]:
        """GPUs in the fleet per SKU, counted from the node pools."""
        inventory = dict.fromkeys(self.skus, 0)
        for pool in self.node_pools.values():
            if pool.sku in self.skus:
                inventory[pool.sku] += len(pool.nodes) * self.skus[pool.sku].gpus_per_node
        return inventory


def platform_problems(platform: Platform) -> list[Problem]:
    """Rules across fields of the platform, each located as in Pulumi.prod.yaml."""
    key = f"{CONFIG_NAMESPACE}:"
    problems = []
    pool_of: dict[str, str] = {}
    for name, pool in platform.node_pools.items():
        if pool.sku not in platform.skus:
            problems.append(
                Problem(
                    f"{key}node_pools.{name}.sku",
                    f"{pool.sku!r} is not in {key}skus ({', '.join(sorted(platform.skus))})",
                )
            )
        for index, node in enumerate(pool.nodes):
            if node in pool_of:
                problems.append(
                    Problem(
                        f"{key}node_pools.{name}.nodes.{index}",
                        f"{node} is already in pool {pool_of[node]}; a node is in one pool only",
                    )
                )
            pool_of.setdefault(node, name)
    if not platform.ldap.bind_dn.endswith("," + platform.ldap.base_dn):
        problems.append(
            Problem(
                f"{key}ldap.bind_dn",
                f"{platform.ldap.bind_dn!r} is not under base_dn {platform.ldap.base_dn!r}",
            )
        )
    return problems


def load_platform(path: Path) -> Platform:
    """Read and validate the platform config; raises `PlatformError` listing every problem."""
    if not path.is_file():
        raise PlatformError(
            path,
            [
                Problem(
                    "",
                    "file not found: it is the config of the `prod` platform stack, which every "
                    "tenant stack reads; run from the project directory or create it",
                )
            ],
        )
    document = read_yaml_mapping(path, "a `config:` mapping", PlatformError)
    config = document.get("config")
    if not isinstance(config, dict):
        raise PlatformError(
            path, [Problem("config", "missing, or not a mapping of `gpu-tenants:<key>` values")]
        )
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, value in config.items():
        namespace, colon, key = str(name).partition(":")
        if not colon:
            problems.append(
                Problem(str(name), f"config keys are namespaced: write {CONFIG_NAMESPACE}:{name}")
            )
        # Secrets belong to the providers, which read them at run time; other namespaces
        # (kubernetes:, pulumi:) configure providers, not the platform.
        elif namespace == CONFIG_NAMESPACE and not (isinstance(value, dict) and "secure" in value):
            values[key] = value
    try:
        platform = Platform.model_validate(values)
    except ValidationError as error:
        problems.extend(problems_from(error, prefix=f"{CONFIG_NAMESPACE}:"))
        raise PlatformError(path, _missing_as_keys(problems)) from None
    problems.extend(platform_problems(platform))
    if problems:
        raise PlatformError(path, problems)
    return platform


def _missing_as_keys(problems: list[Problem]) -> list[Problem]:
    """A missing top-level field is a missing config key: say so in the words of the file."""
    return [
        Problem(p.location, f"required config key is missing (add `{p.location}:` under config)")
        if p.message == "required field is missing" and "." not in p.location
        else p
        for p in problems
    ]
