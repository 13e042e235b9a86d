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

This module is also the project's YAML boundary, shared with the `spec` package: the strict YAML
loader, the base of the pydantic models, name types both use, and the conversion of pydantic's
errors into located `Problem`s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from yaml.nodes import MappingNode, ScalarNode

from providers.identities import MAX_ID
from tenant_stack.errors import PlatformError, Problem, SpecError

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
    "Weka",
    "load_platform",
    "platform_problems",
]

CONFIG_NAMESPACE = "gpu-tenants"

# --- the YAML boundary (shared with the spec) ----------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """PyYAML implements YAML 1.1, which turns values a reviewer reads as text into something else:
    `off`/`no` become booleans, `24:00:00` becomes the integer 86400 (base 60) and `010` becomes
    8. This loader resolves only the YAML 1.2 core forms (true/false, decimal and hex integers,
    floats, null) plus plain dates, and refuses duplicate keys, which PyYAML would silently
    resolve to the last one."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        first_line: dict[Hashable, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in first_line:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first written on line {first_line[key]}); "
                    "keep one",
                    key_node.start_mark,
                )
            if isinstance(key, Hashable):
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


# Replaces, not extends, SafeLoader's YAML 1.1 resolvers. PyYAML dispatches on a scalar's first
# character; an empty scalar is looked up under "".
_StrictLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", [*"tTfF"]),
    ("int", r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$", [*"-+0123456789"]),
    (
        "float",
        r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        [*"-+0123456789."],
    ),
    ("null", r"^(?:~|null|Null|NULL|)$", [*"~nN", ""]),
    ("timestamp", r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", [*"0123456789"]),
):
    _StrictLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), _first)


@dataclass(frozen=True)
class Unbuildable:
    """A scalar YAML recognised (a date, a number, a tagged value) but could not build, such as
    `2027-02-29`. The loader keeps it in place, so the caller can name its field."""

    text: str
    kind: str
    reason: str
    line: int

    def describe(self) -> str:
        return f"{self.text!r} (line {self.line}) is not a valid {self.kind}: {self.reason}"


def _keeping_unbuildable(
    kind: str, construct: Callable[[yaml.SafeLoader, ScalarNode], Any]
) -> Callable[[yaml.SafeLoader, ScalarNode], Any]:
    def tolerant(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, OverflowError) as exc:
            return Unbuildable(str(node.value), kind, str(exc), node.start_mark.line + 1)

    return tolerant


# PyYAML's constructors raise a bare ValueError (no line, no field) for `2027-02-29` or `!!int x`.
for _tag, _kind_name, _construct in (
    ("timestamp", "date", yaml.SafeLoader.construct_yaml_timestamp),
    ("int", "integer", yaml.SafeLoader.construct_yaml_int),
    ("float", "number", yaml.SafeLoader.construct_yaml_float),
):
    _StrictLoader.add_constructor(
        f"tag:yaml.org,2002:{_tag}",
        _keeping_unbuildable(_kind_name, _construct),
    )


def parse_yaml(text: str) -> Any:
    """Parse one YAML document with the strict loader; raises `yaml.YAMLError`. A scalar it
    cannot build is left as an `Unbuildable` (see `unbuildable_problems`)."""
    return yaml.load(text, Loader=_StrictLoader)


def unbuildable_problems(data: Any, location: str = "") -> list[Problem]:
    """Every `Unbuildable` in parsed YAML, as a problem at its dotted field path."""
    if isinstance(data, Unbuildable):
        return [Problem(location, data.describe())]
    if isinstance(data, dict):
        items: Iterable[tuple[object, Any]] = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        return []
    return [
        problem
        for key, value in items
        for problem in unbuildable_problems(value, f"{location}.{key}" if location else str(key))
    ]


def yaml_problem(error: yaml.YAMLError) -> Problem:
    """A YAML syntax error as a problem that names the line and column."""
    mark = getattr(error, "problem_mark", None)
    detail = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    text = f"{context}: {detail}" if context else str(detail)
    if mark is None:
        return Problem("", f"not valid YAML: {text}")
    return Problem("", f"line {mark.line + 1}, column {mark.column + 1}: not valid YAML: {text}")


def read_yaml_mapping(
    path: Path, what: str, error: type[PlatformError | SpecError]
) -> dict[str, Any]:
    """The top-level mapping of a YAML file; raises `error` naming what prevents reading it."""
    try:
        data = parse_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        problem = Problem("", f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        raise error(path, [problem]) from None
    except yaml.YAMLError as exc:
        raise error(path, [yaml_problem(exc)]) from None
    if data is None:
        raise error(path, [Problem("", f"the file is empty; it should hold {what}")])
    if not isinstance(data, dict):
        raise error(path, [Problem("", f"expected {what} at the top level, found {_kind(data)}")])
    unbuildable = unbuildable_problems(data)
    if unbuildable:
        raise error(path, unbuildable)
    return data


def _kind(value: object) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def problems_from(error: ValidationError, prefix: str = "") -> list[Problem]:
    """pydantic's errors as problems with dotted locations (`users.1.uid`), messages made to say
    what would be right where pydantic's own wording does not."""
    problems = []
    for detail in error.errors(include_url=False):
        location = prefix + ".".join(str(part) for part in detail["loc"])
        kind = detail["type"]
        value = detail.get("input")
        if kind == "missing":
            message = "required field is missing"
        elif kind == "extra_forbidden":
            message = "unknown field; check its spelling and indentation (fields are snake_case)"
        elif kind == "value_error":
            message = detail["msg"].removeprefix("Value error, ")
        elif isinstance(value, str | int | float | bool) or value is None:
            message = f"{detail['msg']}, got {value!r}"
        else:
            message = detail["msg"]
        problems.append(Problem(location, message))
    return problems


class StrictModel(BaseModel):
    """Base of every model read from YAML: unknown keys are errors (a typo must not be ignored)
    and values are not coerced (`gpus: "64"` or `legal_hold: "no"` are mistakes to report)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --- names and values shared with the spec -------------------------------------------------------

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _LABEL.match(value):
        raise ValueError(
            f"{value!r} is not a DNS label: use 1-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return value


def _dns_name(value: str) -> str:
    labels = value.split(".")
    if len(value) > 253 or len(labels) < 2 or not all(_LABEL.match(p) for p in labels):
        raise ValueError(
            f"{value!r} is not a fully qualified DNS name: use lowercase dot-separated labels "
            "such as 'login.tenant-foo.example.internal'"
        )
    if any(len(label) > 63 for label in labels):
        raise ValueError(f"{value!r} has a label longer than 63 characters")
    return value


def _host_port(value: str) -> str:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r} is not HOST:PORT, such as 'weka-api.example.internal:14000'")
    _dns_name(host)
    return value


def _ldaps_uri(value: str) -> str:
    if not value.startswith("ldaps://"):
        raise ValueError(
            f"{value!r} must start with ldaps://: the bind password must not cross the network "
            "in clear"
        )
    return "ldaps://" + _host_port(value.removeprefix("ldaps://"))


def _https_url(value: str) -> str:
    if not value.startswith("https://") or value.endswith("/"):
        raise ValueError(
            f"{value!r} must be an https:// URL without a trailing '/', "
            "such as 'https://auth.example.internal'"
        )
    host = value.removeprefix("https://").partition("/")[0]
    if ":" in host:
        _host_port(host)
    else:
        _dns_name(host)
    return value


_DN = re.compile(r"^[a-zA-Z]+=[^,=]+(,[a-zA-Z]+=[^,=]+)*$")


def _distinguished_name(value: str) -> str:
    if not _DN.match(value):
        raise ValueError(
            f"{value!r} is not an LDAP distinguished name such as 'dc=auth,dc=example,dc=internal'"
        )
    return value


def _chart_version(value: str) -> str:
    if not re.match(r"^[0-9]+\.[0-9]+\.([0-9]+|x)$", value):
        raise ValueError(f"{value!r} is not a chart version such as '1.4.2' or '1.4.x'")
    return value


def _single_line(value: str) -> str:
    if not value.strip() or value != value.strip() or not value.isprintable():
        raise ValueError(
            f"{value!r} must be non-empty printable text on one line, without surrounding spaces"
        )
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
HostPort = Annotated[str, AfterValidator(_host_port)]
LdapsUri = Annotated[str, AfterValidator(_ldaps_uri)]
HttpsUrl = Annotated[str, AfterValidator(_https_url)]
DistinguishedName = Annotated[str, AfterValidator(_distinguished_name)]
ChartVersion = Annotated[str, AfterValidator(_chart_version)]
SingleLine = Annotated[str, AfterValidator(_single_line)]
StartNumber = Annotated[int, Field(ge=1, le=MAX_ID)]

# --- the platform --------------------------------------------------------------------------------


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
    """Shared Kubernetes objects that tenant objects point at."""

    auth_namespace: DnsLabel
    ldap_bind_secret: DnsLabel
    slurm_namespace: DnsLabel
    reservation_operator_namespace: DnsLabel


class Ldap(StrictModel):
    """The Authentik LDAP outpost, as login pods reach it; the start numbers are the outpost's
    uid_start_number/gid_start_number, below which no pinned uid or gid may go."""

    uri: LdapsUri
    base_dn: DistinguishedName
    bind_dn: DistinguishedName
    uid_start_number: StartNumber
    gid_start_number: StartNumber

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


class Weka(StrictModel):
    """The Weka cluster. Tenants with `directory` isolation get directories on the shared
    filesystems; tenants with `org` isolation get filesystems of their own in `filesystem_group`."""

    api_endpoint: HostPort
    filesystem_group: DnsLabel
    shared_home_filesystem: DnsLabel
    shared_scratch_filesystem: DnsLabel
    # The object store bucket offboarding uploads a tenant's snapshots to (Snap-To-Object).
    object_store: DnsLabel = "retention"


class LoginChart(StrictModel):
    name: DnsLabel
    version: ChartVersion


class Retention(StrictModel):
    """How long offboarding's archives are kept in the retention store, by kind. A tenant's
    `lifecycle.retention_days` may lengthen its copies' horizon, never shorten it."""

    accounting_days: Annotated[int, Field(ge=1, le=36500)] = 7 * 365
    logs_days: Annotated[int, Field(ge=1, le=36500)] = 90
    copies_days: Annotated[int, Field(ge=1, le=36500)] = 30


class Fleet(StrictModel):
    """The fleet's scheduled work on Temporal (`gpu-tenants fleet schedule`)."""

    drift_every_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] = 240


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
    retention: Retention = Retention()
    fleet: Fleet = Fleet()

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
