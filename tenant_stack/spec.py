"""The tenant spec: the models of `tenants/<slug>.yaml`, the reviewed single source of truth of one
tenant, and the rules that tie its fields to each other and to the platform.

`load_spec` validates in two passes and reports everything it finds in one `SpecError`, each
problem as `<file>: <dotted.field.path>: <what is wrong and what would be right>`. The first pass
checks every field on its own (types, formats, ranges, SSH keys, values sacctmgr would misread);
when it passes, the second checks the rules across fields and against the platform, which need
valid fields to mean anything.

Rules decided here, beyond the runbooks' words:
- The short name is the slug without a leading `tenant-` (`tenant-foo` -> `foo`); the QoS are
  `normal-<short>` and `interactive-<short>`, as the runbook names them. Slurm account names are
  global to the cluster, so every team name ends in `-<short>` (`ml-team-foo`) and never collides
  with another tenant's. Short names must be unique fleet-wide (`foo` and `tenant-foo` would share
  QoS names); that is a fleet rule, not one a single spec can check.
- Slugs `prod` (the platform stack) and `default` (Slurm refuses a partition of that name) are
  reserved. A slug other than the stack name is reported with the field errors: every name the
  rules derive from it would be another tenant's.
- GPUs = named nodes x GPUs per node of the SKU for a reserved partition; on-demand and spot name no
  nodes and ask no more GPUs of their SKU than the fleet has. Every QoS GPU cap is at most the
  contract's GPUs; the partition's default time is at most the wall limit.
- Wall limits are whole minutes (Slurm's resolution). Slurm's `MM:SS` form is refused because
  `24:00` reads as 24 hours to a person and as 24 minutes to Slurm; bare numbers are refused too.
- uid >= the platform's uid_start_number and gid >= its gid_start_number (the outpost numbers
  unpinned objects from there up; the range below is the system's), both < 2^31.
- Every user has at least one SSH key (an empty authorized_keys is a runbook failure), and no key
  is listed twice, within a user or across users: a shared key is a shared identity.
- Full names hold no `:` (it would break the passwd line that `getent` prints).
- Storage: soft <= hard; users x home hard quota <= home_capacity; the PVCs (carved from scratch)
  fit in the scratch hard quota and in the namespace's storage and PVC-count quotas. Container
  default requests <= default limits <= namespace quota.
- `network.pkey` (an InfiniBand partition key) is required with `pkey` isolation, refused without.
- Lifecycle: stage `destroy` requires a sign-off, and a sign-off is accepted only at stage `destroy`
  (remove it when rolling back, so an old sign-off cannot authorise a later destroy). A legal hold
  forbids stage `destroy`: under hold the operator deletes nothing, the live data included, and the
  scheduled purge of snapshots and identities skips the tenant. A graceful drain waits at most 14
  days for the queue to empty; a hard drain's TERM-to-KILL grace is 60 s (the runbook's minimum)
  to 1 h.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import total_ordering
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, ValidationError

from providers.slurm.sacctmgr import QOS_FLAGS
from tenant_stack.errors import Problem, SpecError
from tenant_stack.platform import (
    MAX_ID,
    DnsLabel,
    DnsName,
    Platform,
    StrictModel,
    problems_from,
    read_yaml_mapping,
)

__all__ = [
    "Contract",
    "Duration",
    "Identity",
    "KubernetesSpec",
    "Lifecycle",
    "Login",
    "Network",
    "Qos",
    "Reservation",
    "SlurmSpec",
    "SshPublicKey",
    "Storage",
    "Team",
    "TenantSpec",
    "User",
    "check_spec",
    "hostlist",
    "load_spec",
    "parse_cpu",
    "parse_duration",
    "parse_size",
    "parse_ssh_key",
]

# --- durations -----------------------------------------------------------------------------------


@total_ordering
@dataclass(frozen=True)
class Duration:
    """A time limit in seconds; `seconds=None` is Slurm's UNLIMITED, longer than any other."""

    seconds: int | None

    def _key(self) -> float:
        return math.inf if self.seconds is None else self.seconds

    def __lt__(self, other: Duration) -> bool:
        return self._key() < other._key()

    def slurm(self) -> str:
        """As Slurm writes a time limit: `UNLIMITED`, `04:00:00` or `1-00:00:00`."""
        if self.seconds is None:
            return "UNLIMITED"
        days, rest = divmod(self.seconds, 86400)
        clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
        return f"{days}-{clock}" if days else clock

    def __str__(self) -> str:
        if self.seconds is None:
            return "UNLIMITED"
        parts, rest = [], self.seconds
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
            count, rest = divmod(rest, size)
            if count:
                parts.append(f"{count}{unit}")
        return "".join(parts)


_UNITS = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")
_CLOCK = re.compile(r"^(?:([0-9]+)-)?([0-9]+):([0-5][0-9]):([0-5][0-9])$")
_DAYS_HOURS = re.compile(r"^([0-9]+)-([0-9]+)(?::([0-5][0-9]))?$")
_DURATION_HINT = "such as '24h', '90m', '1d12h', '1-00:00:00', '24:00:00' or 'UNLIMITED'"


def parse_duration(value: object) -> Duration:
    """A duration as written in a spec: units (`24h`, `1d12h`, `90s`), Slurm's `[D-]HH:MM:SS` and
    `D-HH[:MM]`, or `UNLIMITED`. Raises ValueError saying what would be right."""
    if not isinstance(value, str):
        raise ValueError(
            f"write a duration as text {_DURATION_HINT}; a bare number is ambiguous "
            f"(Slurm reads it as minutes), got {value!r}"
        )
    text = value.strip()
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return Duration(None)
    if re.match(r"^[0-9]+:[0-9]{2}$", text):
        raise ValueError(
            f"{text!r} is ambiguous: Slurm reads MM:SS, so it would be {text.split(':')[0]} "
            f"minutes; write hours as '{text}:00' or '{text.split(':')[0]}h'"
        )
    seconds: int | None = None
    if match := (_UNITS.match(text) if text else None) or _CLOCK.match(text):
        d, h, m, s = (int(part or 0) for part in match.groups())
        seconds = ((d * 24 + h) * 60 + m) * 60 + s
    elif match := _DAYS_HOURS.match(text):
        d, h, m = (int(part or 0) for part in match.groups())
        seconds = ((d * 24 + h) * 60 + m) * 60
    if seconds is None:
        raise ValueError(f"{text!r} is not a duration; write one {_DURATION_HINT}")
    if seconds == 0:
        raise ValueError(f"{text!r} is zero; a limit must be longer than that")
    return Duration(seconds)


def _wall_time(value: object) -> Duration:
    duration = parse_duration(value)
    if duration.seconds is not None and duration.seconds % 60:
        raise ValueError(f"{value!r}: Slurm time limits are whole minutes; round it to minutes")
    return duration


def _bounded(value: object) -> Duration:
    duration = parse_duration(value)
    if duration.seconds is None:
        raise ValueError("must be bounded; UNLIMITED would let the stage wait forever")
    return duration


WallTime = Annotated[Duration, PlainValidator(_wall_time)]
BoundedDuration = Annotated[Duration, PlainValidator(_bounded)]

# --- sizes and CPU -------------------------------------------------------------------------------

_SIZE_UNITS = {
    "B": 1,
    **{f"{p}{b}": 1000**i for i, p in enumerate("KMGTPE", 1) for b in ("", "B")},
    "kB": 1000,
    "k": 1000,
    **{f"{p}i{b}": 1024**i for i, p in enumerate("KMGTPE", 1) for b in ("", "B")},
}
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?) ?([A-Za-z]+)$")


def parse_size(value: object) -> int:
    """Bytes from a size with its unit: SI (`100GB`, `50TB`, `100G`) or IEC (`10Ti`, `16GiB`)."""
    hint = "such as '100GB', '50TB' (SI, powers of 1000) or '10Ti', '16GiB' (IEC, powers of 1024)"
    if not isinstance(value, str):
        raise ValueError(f"write a size as text with its unit, {hint}, got {value!r}")
    match = _SIZE.match(value.strip())
    if not match or match.group(2) not in _SIZE_UNITS:
        raise ValueError(f"{value!r} is not a size; write one {hint}")
    size = Decimal(match.group(1)) * _SIZE_UNITS[match.group(2)]
    if size != size.to_integral_value() or size <= 0:
        raise ValueError(f"{value!r} is not a positive whole number of bytes")
    return int(size)


def parse_cpu(value: object) -> int:
    """Millicores from a Kubernetes CPU quantity: cores (`4`, `"1.5"`) or millicores (`"500m"`)."""
    hint = "write cores (4, '1.5') or millicores ('500m')"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is not a CPU quantity; {hint}")
    text = str(value).strip()
    if match := re.match(r"^([0-9]+)m$", text):
        millicores = int(match.group(1))
    elif re.match(r"^[0-9]+(\.[0-9]{1,3})?$", text):
        millicores = int(Decimal(text) * 1000)
    else:
        raise ValueError(f"{value!r} is not a CPU quantity; {hint}")
    if millicores <= 0:
        raise ValueError(f"{value!r} is not positive")
    return millicores


Bytes = Annotated[int, BeforeValidator(parse_size)]
MilliCpu = Annotated[int, BeforeValidator(parse_cpu)]


_DISPLAY_UNITS = sorted(
    ((size, unit) for unit, size in _SIZE_UNITS.items() if unit[1:] in ("B", "iB")),
    reverse=True,
)


def _size(count: int) -> str:
    """A byte count in the unit it was most likely written in: the largest that divides it."""
    for size, unit in _DISPLAY_UNITS:
        if count % size == 0:
            return f"{count // size}{unit}"
    return f"{count}B"


def _cpu(millicores: int) -> str:
    return f"{millicores // 1000}" if millicores % 1000 == 0 else f"{millicores}m"


# --- SSH public keys -----------------------------------------------------------------------------

_CURVE_COORDINATE_BYTES = {"nistp256": 32, "nistp384": 48, "nistp521": 66}
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
MIN_RSA_BITS = 2048


@dataclass(frozen=True)
class SshPublicKey:
    """One parsed line of authorized_keys: `<type> <base64 blob> [comment]`."""

    key_type: str
    blob: bytes
    comment: str

    def fingerprint(self) -> str:
        """As `ssh-keygen -l` prints it: SHA256 of the blob, base64 without padding."""
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode()
        return "SHA256:" + digest.rstrip("=")


class _Blob:
    """Reads the SSH wire format (RFC 4251): uint32 length-prefixed strings."""

    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def string(self, what: str) -> bytes:
        if self.offset + 4 > len(self.data):
            raise ValueError(f"the key data ends before its {what}; the key is truncated")
        length = int.from_bytes(self.data[self.offset : self.offset + 4], "big")
        start, self.offset = self.offset + 4, self.offset + 4 + length
        if self.offset > len(self.data):
            raise ValueError(f"the key data ends inside its {what}; the key is truncated")
        return self.data[start : self.offset]

    def done(self) -> None:
        if self.offset != len(self.data):
            raise ValueError("the key data has bytes after the key; paste the .pub line unchanged")


def parse_ssh_key(text: str) -> SshPublicKey:
    """Parse and check one public key line; raises ValueError saying what is wrong."""
    fields = text.split(maxsplit=2)
    if "\n" in text.strip() or len(fields) < 2:
        raise ValueError(
            "expected one line '<type> <base64> [comment]', as in the user's id_ed25519.pub"
        )
    key_type, data = fields[0], fields[1]
    if key_type not in SSH_KEY_TYPES:
        if key_type == "ssh-dss":
            raise ValueError("OpenSSH refuses DSA keys since 7.0; ask for an ssh-ed25519 key")
        if "=" in key_type or "," in key_type:
            raise ValueError("authorized_keys options are not accepted here; give the bare key")
        raise ValueError(f"unknown key type {key_type!r}; accepted: {', '.join(SSH_KEY_TYPES)}")
    try:
        blob = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ValueError("the key data is not base64; paste the .pub line unchanged") from None
    reader = _Blob(blob)
    inner = reader.string("type").decode(errors="replace")
    if inner != key_type:
        raise ValueError(f"the line says {key_type} but the key data is a {inner!r} key")
    if key_type in ("ssh-ed25519", "sk-ssh-ed25519@openssh.com"):
        if len(reader.string("public key")) != 32:
            raise ValueError("an ed25519 public key is 32 bytes; this one is damaged")
    elif key_type == "ssh-rsa":
        reader.string("exponent")
        bits = int.from_bytes(reader.string("modulus"), "big").bit_length()
        if bits < MIN_RSA_BITS:
            raise ValueError(
                f"RSA key of {bits} bits; at least {MIN_RSA_BITS} are required "
                "(better: an ssh-ed25519 key)"
            )
    else:
        curve = key_type.removeprefix("sk-").split("@")[0].removeprefix("ecdsa-sha2-")
        if reader.string("curve").decode(errors="replace") != curve:
            raise ValueError(f"the key data names a curve other than {curve}")
        if len(reader.string("point")) != 1 + 2 * _CURVE_COORDINATE_BYTES[curve]:
            raise ValueError(f"the {curve} point has the wrong length; this key is damaged")
    if key_type.startswith("sk-") and not reader.string("application").startswith(b"ssh:"):
        raise ValueError("a security-key application must start with 'ssh:'")
    reader.done()
    return SshPublicKey(key_type, blob, fields[2] if len(fields) > 2 else "")


def _ssh_key(value: str) -> str:
    parse_ssh_key(value)
    return value.strip()


# --- names and text ------------------------------------------------------------------------------

_T = TypeVar("_T", bound=Hashable)
_HYPHENATED = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
RESERVED_SLUGS = {
    "prod": "it is the platform stack",
    "default": "Slurm refuses a partition named 'default'",
}
SYSTEM_USERNAMES = frozenset({"root", "daemon", "bin", "sys", "nobody", "slurm", "munge", "admin"})
# sacctmgr splits its arguments on ',' and '=', its -P output on '|', and reads a leading '-' as
# an option; quotes and line breaks survive neither its parser nor ours.
_SACCTMGR_UNSAFE = set("|,=\"'`\\")


def _slug(value: str) -> str:
    if not 3 <= len(value) <= 40 or not _HYPHENATED.match(value):
        raise ValueError(
            f"{value!r} is not a slug: use 3-40 lowercase letters and digits in hyphen-separated "
            "words, starting with a letter, such as 'tenant-foo'"
        )
    if value in RESERVED_SLUGS:
        raise ValueError(f"{value!r} is reserved: {RESERVED_SLUGS[value]}")
    return value


def _username(value: str) -> str:
    if len(value) > 32 or not _HYPHENATED.match(value):
        raise ValueError(
            f"{value!r} is not a username: use up to 32 lowercase letters and digits, "
            "hyphen-separated, starting with a letter, such as 'alice' or 'bob-smith'"
        )
    if value in SYSTEM_USERNAMES:
        raise ValueError(f"{value!r} is a system account name; choose another username")
    return value


def _account_name(value: str) -> str:
    # Slurm stores account names lowercased, so only lowercase names read back as written.
    if len(value) > 40 or not re.match(r"^[a-z][a-z0-9]*([-_][a-z0-9]+)*$", value):
        raise ValueError(
            f"{value!r} is not a Slurm account name: use up to 40 lowercase letters, digits, "
            "'-' and '_', starting with a letter, such as 'ml-team-foo'"
        )
    return value


def _printable_line(value: str, limit: int) -> None:
    if not value.strip() or value != value.strip():
        raise ValueError(f"{value!r} must be non-empty, without leading or trailing spaces")
    if not value.isprintable():
        raise ValueError(f"{value!r} must be printable text on one line")
    if len(value) > limit:
        raise ValueError(f"{len(value)} characters; at most {limit}")


def _sacctmgr_text(value: str) -> str:
    _printable_line(value, 100)
    unsafe = sorted(set(value) & _SACCTMGR_UNSAFE)
    if unsafe:
        raise ValueError(
            f"{value!r} contains {' '.join(repr(c) for c in unsafe)}, which sacctmgr would "
            "misread; "
            "use letters, digits, spaces and . - _ ( ) /"
        )
    if value.startswith("-"):
        raise ValueError(f"{value!r} starts with '-', which sacctmgr reads as an option")
    return value


def _person_name(value: str) -> str:
    _printable_line(value, 128)
    if ":" in value:
        raise ValueError(f"{value!r} contains ':', which would break the user's passwd entry")
    return value


def _email(value: str) -> str:
    if not re.match(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$", value):
        raise ValueError(f"{value!r} is not an email address such as 'alice@tenant-foo.example'")
    return value


def _ticket(value: str) -> str:
    if not re.match(r"^[A-Z][A-Z0-9]+-[0-9]+$", value):
        raise ValueError(f"{value!r} is not a change ticket id such as 'OPS-1234'")
    return value


def _evict_on_release(value: bool) -> bool:
    if value:
        raise ValueError(
            "must be false: with evictOnRelease true, removing a node from the reservation "
            "(an RMA, say) kills the tenant's running jobs on it instead of draining them"
        )
    return value


def _unique(values: list[_T]) -> list[_T]:
    repeated = sorted({str(v) for v in values if values.count(v) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} listed more than once; list each once")
    return values


Slug = Annotated[str, AfterValidator(_slug)]
Username = Annotated[str, AfterValidator(_username)]
AccountName = Annotated[str, AfterValidator(_account_name)]
SacctmgrText = Annotated[str, AfterValidator(_sacctmgr_text)]
PersonName = Annotated[str, AfterValidator(_person_name)]
Email = Annotated[str, AfterValidator(_email)]
Ticket = Annotated[str, AfterValidator(_ticket)]
SshKey = Annotated[str, AfterValidator(_ssh_key)]
PosixId = Annotated[int, Field(ge=1, le=MAX_ID)]
Count = Annotated[int, Field(ge=1, le=MAX_ID)]
Day = Annotated[date, Field(strict=False)]  # a quoted ISO date is as clear as an unquoted one


def _qos_flag(value: str) -> str:
    # The Slurm provider's list: the spec accepts exactly what it can write.
    if value not in QOS_FLAGS:
        raise ValueError(
            f"{value!r} is not a Slurm 22.05 QoS flag; use one of {', '.join(QOS_FLAGS)}"
        )
    return value


QosFlag = Annotated[str, AfterValidator(_qos_flag)]
PreemptMode = Literal["off", "cancel", "requeue"]
Stage = Literal["active", "frozen", "drained", "archived", "snapshotted", "destroy"]

# --- the spec ------------------------------------------------------------------------------------


class Term(StrictModel):
    start: Day
    end: Day


class Contract(StrictModel):
    """What the tenant bought."""

    gpu_sku: DnsLabel
    gpus: Count
    partition_type: Literal["reserved", "on-demand", "spot"]
    term: Term
    wall_limit: WallTime
    interactive_wall_limit: WallTime
    gpu_minutes: Count  # the whole tenant's budget, split evenly between its users


class Reservation(StrictModel):
    hardware_pool: DnsLabel
    nodes: list[DnsLabel] = Field(default_factory=list)
    evict_on_release: Annotated[bool, AfterValidator(_evict_on_release)]


class Identity(StrictModel):
    gid: PosixId  # pinned: the outpost's own gidNumber is a hash prefix that collides
    admins: list[Username]
    # The `<slug>-admins` group's gidNumber, pinned for the same reason; needed when admins exist.
    admins_gid: PosixId | None = None


class User(StrictModel):
    username: Username
    name: PersonName
    email: Email
    uid: PosixId
    team: AccountName | None = None  # None: the user's association is on the tenant account
    ssh_keys: Annotated[list[SshKey], Field(min_length=1)]


class Team(StrictModel):
    """A Slurm sub-account of the tenant's account."""

    name: AccountName
    description: SacctmgrText
    fairshare: Count


class Qos(StrictModel):
    priority: Annotated[int, Field(ge=0, le=MAX_ID)]
    gpus: Count  # GrpTRES=gres/gpu=<gpus>
    flags: Annotated[list[QosFlag], AfterValidator(_unique)] = Field(default_factory=list)
    preempt_mode: PreemptMode | None = None  # None: the cluster's default


class QosSet(StrictModel):
    normal: Qos  # MaxWall = contract.wall_limit
    interactive: Qos  # MaxWall = contract.interactive_wall_limit


class Partition(StrictModel):
    default_time: WallTime
    oversubscribe: Literal["exclusive", "no"]
    preempt_mode: PreemptMode


class SlurmSpec(StrictModel):
    fairshare: Count
    grp_jobs: Count
    max_jobs_per_user: Count
    teams: list[Team] = Field(default_factory=list)
    qos: QosSet
    partition: Partition


class Quota(StrictModel):
    soft: Bytes
    hard: Bytes


class PersistentVolumeClaim(StrictModel):
    name: DnsLabel
    size: Bytes


class Storage(StrictModel):
    isolation: Literal["org", "directory"]  # org: a Weka org of its own; directory: shared org
    home_capacity: Bytes
    home_per_user: Quota
    scratch: Quota
    pvcs: list[PersistentVolumeClaim] = Field(default_factory=list)
    # Filesystems refuse `pulumi destroy` until offboarding has recorded a verified snapshot.
    # True only for a rehearsal or the rollback of a tenant that never held data.
    delete_without_snapshot: bool = False


class ResourceQuota(StrictModel):
    """The namespace's ResourceQuota; its GPU requests equal contract.gpus."""

    requests_cpu: MilliCpu
    requests_memory: Bytes
    limits_memory: Bytes
    persistent_volume_claims: Annotated[int, Field(ge=0, le=10000)]
    requests_storage: Bytes


class ContainerResources(StrictModel):
    cpu: MilliCpu
    memory: Bytes


class ContainerDefaults(StrictModel):
    """The namespace's LimitRange for containers that set no resources."""

    limit: ContainerResources
    request: ContainerResources


class KubernetesSpec(StrictModel):
    quota: ResourceQuota
    container_defaults: ContainerDefaults


class Network(StrictModel):
    """NetworkPolicies always isolate the namespace; `pkey` adds an InfiniBand partition."""

    isolation: Literal["networkpolicy", "pkey"]
    # The 15-bit base key; the membership bit is the fabric manager's. 0x7fff is the default
    # partition every port is in, so it isolates nothing.
    pkey: Annotated[int, Field(ge=0x0001, le=0x7FFE)] | None = None


class Login(StrictModel):
    hostname: DnsName
    replicas: Annotated[int, Field(ge=1, le=10)]


class SignOff(StrictModel):
    by: PersonName
    date: Day
    ticket: Ticket


class Lifecycle(StrictModel):
    """Offboarding moves `stage` forward one reviewed pull request at a time."""

    stage: Stage
    drain_mode: Literal["graceful", "hard"]
    drain_timeout: BoundedDuration  # graceful: wait for the queue; hard: TERM to KILL
    retention_days: Annotated[int, Field(ge=1, le=3650)]
    legal_hold: bool
    sign_off: SignOff | None = None


class TenantSpec(StrictModel):
    """One tenant. Names derived from the slug are properties, so they cannot drift apart."""

    slug: Slug
    display_name: SacctmgrText  # the Slurm account's Description
    contract: Contract
    reservation: Reservation
    identity: Identity
    users: Annotated[list[User], Field(min_length=1)]
    slurm: SlurmSpec
    storage: Storage
    kubernetes: KubernetesSpec
    network: Network
    login: Login
    lifecycle: Lifecycle

    @property
    def short_name(self) -> str:
        return self.slug.removeprefix("tenant-")

    @property
    def account(self) -> str:
        return self.slug

    @property
    def partition(self) -> str:
        return self.slug

    @property
    def namespace(self) -> str:
        return self.slug

    @property
    def reservation_name(self) -> str:
        return f"{self.slug}-reservation"

    @property
    def admins_group(self) -> str:
        return f"{self.slug}-admins"

    @property
    def qos_normal(self) -> str:
        return f"normal-{self.short_name}"

    @property
    def qos_interactive(self) -> str:
        return f"interactive-{self.short_name}"

    @property
    def gpu_minutes_per_user(self) -> int:
        """GrpTRESMins=gres/gpu=<this> on each user (an exact split; `check_spec` ensures it)."""
        return self.contract.gpu_minutes // len(self.users)

    @property
    def nodelist(self) -> str:
        """The reservation's nodes in Slurm hostlist form, as the partition names them."""
        return hostlist(self.reservation.nodes)

    def user_account(self, user: User) -> str:
        """The Slurm account a user's association sits on: their team, else the tenant's."""
        return user.team or self.account


def hostlist(nodes: Iterable[str]) -> str:
    """Slurm's compressed hostlist: gpu-01..gpu-08 -> `gpu-[01-08]`, gaps as `gpu-[01-03,05]`."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for node in sorted(set(nodes)):
        match = re.match(r"^(.*?)([0-9]+)$", node)
        if match:
            groups.setdefault((match.group(1), len(match.group(2))), []).append(int(match.group(2)))
        else:
            plain.append(node)
    parts = list(plain)
    for (prefix, width), numbers in sorted(groups.items()):
        numbers.sort()
        runs: list[list[int]] = []
        for number in numbers:
            if runs and number == runs[-1][-1] + 1:
                runs[-1].append(number)
            else:
                runs.append([number])
        ranges = [
            f"{r[0]:0{width}d}" if len(r) == 1 else f"{r[0]:0{width}d}-{r[-1]:0{width}d}"
            for r in runs
        ]
        single = len(ranges) == 1 and len(runs[0]) == 1
        parts.append(f"{prefix}{ranges[0]}" if single else f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)


# --- rules across fields -------------------------------------------------------------------------


def _repeats(keys: Iterable[Hashable]) -> Iterator[tuple[int, int]]:
    """(index, index of the first occurrence) for every key seen before."""
    first: dict[Hashable, int] = {}
    for index, key in enumerate(keys):
        if key in first:
            yield index, first[key]
        else:
            first[key] = index


def check_spec(spec: TenantSpec, platform: Platform) -> list[Problem]:
    """Every rule across fields and against the platform; needs a spec whose fields are valid."""
    return [
        *_capacity(spec, platform),
        *_identity(spec, platform),
        *_slurm(spec),
        *_storage_and_quota(spec),
        *_network_and_login(spec, platform),
        *_lifecycle(spec),
    ]


def _capacity(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    contract, reservation = spec.contract, spec.reservation
    sku = platform.skus.get(contract.gpu_sku)
    if sku is None:
        yield Problem(
            "contract.gpu_sku",
            f"{contract.gpu_sku!r} is not in the platform's SKU catalogue; "
            f"use one of {', '.join(sorted(platform.skus))}",
        )
    pool = platform.node_pools.get(reservation.hardware_pool)
    if pool is None:
        yield Problem(
            "reservation.hardware_pool",
            f"{reservation.hardware_pool!r} is not a node pool of cluster "
            f"{platform.cluster_name!r}; pools: {', '.join(sorted(platform.node_pools))}",
        )
    elif sku is not None and pool.sku != contract.gpu_sku:
        yield Problem(
            "reservation.hardware_pool",
            f"pool {reservation.hardware_pool} holds {pool.sku} nodes but contract.gpu_sku is "
            f"{contract.gpu_sku}; pick a pool of {contract.gpu_sku} nodes",
        )
    if contract.partition_type == "reserved" and not reservation.nodes:
        yield Problem(
            "reservation.nodes",
            "a reserved partition needs the named nodes of its reservation; list them",
        )
    if contract.partition_type != "reserved" and reservation.nodes:
        yield Problem(
            "reservation.nodes",
            f"partition_type {contract.partition_type} reserves no nodes; remove the list, "
            "or make partition_type reserved",
        )
    for index, first in _repeats(reservation.nodes):
        yield Problem(
            f"reservation.nodes.{index}",
            f"{reservation.nodes[index]} is listed twice (reservation.nodes.{first})",
        )
    if pool is not None:
        for index, node in enumerate(reservation.nodes):
            if node not in pool.nodes:
                yield Problem(
                    f"reservation.nodes.{index}",
                    f"{node} is not a node of pool {reservation.hardware_pool} "
                    f"({hostlist(pool.nodes)})",
                )
    if sku is None:
        return
    if contract.partition_type == "reserved" and reservation.nodes:
        nodes = len(set(reservation.nodes))
        if contract.gpus != nodes * sku.gpus_per_node:
            yield Problem(
                "contract.gpus",
                f"{contract.gpus} GPUs, but the reservation's {nodes} nodes x "
                f"{sku.gpus_per_node} GPUs per {contract.gpu_sku} node = "
                f"{nodes * sku.gpus_per_node}; make them agree",
            )
    elif contract.gpus > (inventory := platform.gpu_inventory()[contract.gpu_sku]):
        yield Problem(
            "contract.gpus",
            f"{contract.gpus} GPUs, but the fleet has {inventory} {contract.gpu_sku} GPUs",
        )
    users = len(spec.users)
    if contract.gpu_minutes % users:
        yield Problem(
            "contract.gpu_minutes",
            f"{contract.gpu_minutes} GPU-minutes do not split evenly between {users} users "
            f"({contract.gpu_minutes / users:.2f} each); use a multiple of {users}, such as "
            f"{contract.gpu_minutes // users * users}",
        )
    if contract.interactive_wall_limit > contract.wall_limit:
        yield Problem(
            "contract.interactive_wall_limit",
            f"{contract.interactive_wall_limit} is longer than wall_limit "
            f"{contract.wall_limit}; interactive jobs get at most the wall limit",
        )
    if contract.term.end <= contract.term.start:
        yield Problem(
            "contract.term.end",
            f"{contract.term.end} is not after term.start {contract.term.start}",
        )


def _identity(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    users, ldap = spec.users, platform.ldap
    if spec.identity.gid < ldap.gid_start_number:
        yield Problem(
            "identity.gid",
            f"{spec.identity.gid} is below the platform's gid_start_number "
            f"{ldap.gid_start_number}; pin a gid from {ldap.gid_start_number} up",
        )
    for index, first in _repeats(u.username for u in users):
        yield Problem(
            f"users.{index}.username",
            f"{users[index].username!r} is already users.{first}.username; usernames are unique",
        )
    for index, first in _repeats(u.uid for u in users):
        yield Problem(
            f"users.{index}.uid",
            f"{users[index].uid} is already {users[first].username}'s uid "
            f"(users.{first}.uid); pin an unused uid",
        )
    for index, first in _repeats(u.email.casefold() for u in users):
        yield Problem(
            f"users.{index}.email",
            f"{users[index].email} is already {users[first].username}'s email "
            f"(users.{first}.email)",
        )
    for index, user in enumerate(users):
        if user.uid < ldap.uid_start_number:
            yield Problem(
                f"users.{index}.uid",
                f"{user.uid} is below the platform's uid_start_number {ldap.uid_start_number}; "
                f"pin a uid from {ldap.uid_start_number} up",
            )
    admins_gid = spec.identity.admins_gid
    if spec.identity.admins and admins_gid is None:
        yield Problem(
            "identity.admins_gid",
            f"required when identity.admins is set: pin the gidNumber of {spec.admins_group}",
        )
    if admins_gid is not None and admins_gid == spec.identity.gid:
        yield Problem(
            "identity.admins_gid", f"{admins_gid} is already identity.gid; pin another gid"
        )
    if admins_gid is not None and admins_gid < ldap.gid_start_number:
        yield Problem(
            "identity.admins_gid",
            f"{admins_gid} is below the platform's gid_start_number {ldap.gid_start_number}",
        )
    names = [u.username for u in users]
    for index, admin in enumerate(spec.identity.admins):
        if admin not in names:
            yield Problem(
                f"identity.admins.{index}",
                f"{admin!r} is not a user of this tenant; admins are chosen from "
                f"{', '.join(names)}",
            )
    for index, first in _repeats(spec.identity.admins):
        yield Problem(f"identity.admins.{index}", f"listed twice (identity.admins.{first})")
    keys: dict[bytes, str] = {}
    for index, user in enumerate(users):
        for number, text in enumerate(user.ssh_keys):
            key = parse_ssh_key(text)
            where = f"users.{index}.ssh_keys.{number}"
            if key.blob in keys:
                yield Problem(
                    where,
                    f"key {key.fingerprint()} is already {keys[key.blob]}; every key "
                    "belongs to one user and is listed once",
                )
            keys.setdefault(key.blob, where)


def _slurm(spec: TenantSpec) -> Iterator[Problem]:
    slurm, teams = spec.slurm, spec.slurm.teams
    for index, first in _repeats(t.name for t in teams):
        yield Problem(f"slurm.teams.{index}.name", f"already slurm.teams.{first}.name")
    for index, team in enumerate(teams):
        if not team.name.endswith(f"-{spec.short_name}") or team.name == spec.slug:
            yield Problem(
                f"slurm.teams.{index}.name",
                f"{team.name!r}: Slurm accounts are cluster-wide, so a team's name ends in "
                f"'-{spec.short_name}' and differs from the slug, such as "
                f"'ml-team-{spec.short_name}'",
            )
    team_names = [t.name for t in teams]
    for index, user in enumerate(spec.users):
        if user.team is not None and user.team not in team_names:
            known = ", ".join(team_names) or "none are defined"
            yield Problem(
                f"users.{index}.team",
                f"{user.team!r} is not a team in slurm.teams ({known}); "
                "name one, or leave team out to use the tenant account",
            )
    if slurm.max_jobs_per_user > slurm.grp_jobs:
        yield Problem(
            "slurm.max_jobs_per_user",
            f"{slurm.max_jobs_per_user} is more than the tenant's grp_jobs {slurm.grp_jobs}",
        )
    for name, qos in (("normal", slurm.qos.normal), ("interactive", slurm.qos.interactive)):
        if qos.gpus > spec.contract.gpus:
            yield Problem(
                f"slurm.qos.{name}.gpus",
                f"{qos.gpus} is more than the contract's {spec.contract.gpus} GPUs",
            )
    if slurm.partition.default_time > spec.contract.wall_limit:
        yield Problem(
            "slurm.partition.default_time",
            f"{slurm.partition.default_time} is longer than contract.wall_limit "
            f"{spec.contract.wall_limit}",
        )


def _storage_and_quota(spec: TenantSpec) -> Iterator[Problem]:
    storage, quota = spec.storage, spec.kubernetes.quota
    for name, limits in (("home_per_user", storage.home_per_user), ("scratch", storage.scratch)):
        if limits.soft > limits.hard:
            yield Problem(
                f"storage.{name}.soft",
                f"{_size(limits.soft)} is above the hard limit {_size(limits.hard)}; "
                "the soft limit warns before the hard one stops writes",
            )
    homes = len(spec.users) * storage.home_per_user.hard
    if homes > storage.home_capacity:
        yield Problem(
            "storage.home_capacity",
            f"{_size(storage.home_capacity)} cannot hold {len(spec.users)} users x "
            f"{_size(storage.home_per_user.hard)} = {_size(homes)}",
        )
    for index, first in _repeats(p.name for p in storage.pvcs):
        yield Problem(f"storage.pvcs.{index}.name", f"already storage.pvcs.{first}.name")
    claimed = sum(p.size for p in storage.pvcs)
    if claimed > storage.scratch.hard:
        yield Problem(
            "storage.pvcs",
            f"the claims total {_size(claimed)}, more than the scratch hard limit "
            f"{_size(storage.scratch.hard)} they are carved from",
        )
    if claimed > quota.requests_storage:
        yield Problem(
            "kubernetes.quota.requests_storage",
            f"{_size(quota.requests_storage)} is less than the {_size(claimed)} of storage.pvcs",
        )
    if len(storage.pvcs) > quota.persistent_volume_claims:
        yield Problem(
            "kubernetes.quota.persistent_volume_claims",
            f"{quota.persistent_volume_claims} is fewer than the {len(storage.pvcs)} storage.pvcs",
        )
    if quota.requests_memory > quota.limits_memory:
        yield Problem(
            "kubernetes.quota.requests_memory",
            f"{_size(quota.requests_memory)} is above limits_memory {_size(quota.limits_memory)}",
        )
    request = spec.kubernetes.container_defaults.request
    limit = spec.kubernetes.container_defaults.limit
    where = "kubernetes.container_defaults"
    if request.cpu > limit.cpu:
        yield Problem(
            f"{where}.request.cpu",
            f"{_cpu(request.cpu)} CPUs is above limit.cpu {_cpu(limit.cpu)}",
        )
    if request.memory > limit.memory:
        yield Problem(
            f"{where}.request.memory",
            f"{_size(request.memory)} is above limit.memory {_size(limit.memory)}",
        )
    if request.cpu > quota.requests_cpu:
        yield Problem(
            f"{where}.request.cpu",
            f"{_cpu(request.cpu)} CPUs is above the namespace quota requests_cpu "
            f"{_cpu(quota.requests_cpu)}",
        )
    if limit.memory > quota.limits_memory:
        yield Problem(
            f"{where}.limit.memory",
            f"{_size(limit.memory)} is above the namespace quota limits_memory "
            f"{_size(quota.limits_memory)}",
        )


def _network_and_login(spec: TenantSpec, platform: Platform) -> Iterator[Problem]:
    network = spec.network
    if network.isolation == "pkey" and network.pkey is None:
        yield Problem("network.pkey", "pkey isolation needs the partition key, such as 0x0102")
    if network.isolation != "pkey" and network.pkey is not None:
        yield Problem("network.pkey", "a partition key is used only with isolation pkey; remove it")
    hostname, domain = spec.login.hostname, platform.dns_domain
    if not hostname.endswith(f".{domain}") or spec.slug not in hostname.split("."):
        yield Problem(
            "login.hostname",
            f"{hostname!r} must be under the platform's domain {domain} and name the tenant, "
            f"such as 'login.{spec.slug}.{domain}'",
        )


def _lifecycle(spec: TenantSpec) -> Iterator[Problem]:
    lifecycle = spec.lifecycle
    if lifecycle.stage == "destroy" and lifecycle.sign_off is None:
        yield Problem(
            "lifecycle.sign_off",
            "stage destroy needs a sign-off {by, date, ticket}: nothing is deleted on a "
            "reviewer's approval alone",
        )
    if lifecycle.stage != "destroy" and lifecycle.sign_off is not None:
        yield Problem(
            "lifecycle.sign_off",
            f"a sign-off authorises stage destroy only; at stage {lifecycle.stage} remove it, "
            "so an old sign-off cannot authorise a later destroy",
        )
    if lifecycle.stage == "destroy" and lifecycle.legal_hold:
        yield Problem(
            "lifecycle.stage",
            "the tenant is under legal hold, which forbids stage destroy; stay at "
            "snapshotted until legal releases the hold",
        )
    timeout = lifecycle.drain_timeout.seconds or 0
    low, high = (60, 3600) if lifecycle.drain_mode == "hard" else (60, 14 * 86400)
    if not low <= timeout <= high:
        meaning = (
            "the grace between TERM and KILL"
            if lifecycle.drain_mode == "hard"
            else "the wait for the queue to empty"
        )
        yield Problem(
            "lifecycle.drain_timeout",
            f"{lifecycle.drain_timeout} is outside {Duration(low)}..{Duration(high)} for a "
            f"{lifecycle.drain_mode} drain ({meaning})",
        )


# --- loading -------------------------------------------------------------------------------------


def load_spec(tenants_dir: Path, stack: str, platform: Platform) -> TenantSpec:
    """Load `<tenants_dir>/<stack>.yaml`, the spec of the tenant whose stack this is. Raises
    `SpecError` listing every problem: field errors first; when the fields are valid, the rules
    across fields and against the platform."""
    path = tenants_dir / f"{stack}.yaml"
    if not path.is_file():
        existing = sorted(p.name for p in tenants_dir.glob("*.y*ml"))
        if not tenants_dir.is_dir():
            known = f"the directory {tenants_dir} does not exist"
        elif existing:
            known = f"specs that exist: {', '.join(existing)}"
        else:
            known = f"no spec exists in {tenants_dir}"
        raise SpecError(
            path,
            [
                Problem(
                    "",
                    f"no spec for stack {stack!r}: looked for {path}; {known}. The stack name "
                    "is the tenant's slug; select the tenant's stack or add its spec",
                )
            ],
        )
    data = read_yaml_mapping(path, "a tenant spec (a mapping of fields)", SpecError)
    # A slug that is not the stack's counts as a field error: every name the rules derive from
    # it would be another tenant's, so the rules wait until it is fixed.
    problems = []
    slug = data.get("slug")
    if isinstance(slug, str) and slug != stack:
        problems.append(
            Problem(
                "slug",
                f"{slug!r} is not the stack name {stack!r}; the stack is named by the slug and "
                f"the file by the stack ({stack}.yaml), and a slug is never renamed",
            )
        )
    try:
        spec = TenantSpec.model_validate(data)
    except ValidationError as error:
        raise SpecError(path, problems + problems_from(error)) from None
    if problems:
        raise SpecError(path, problems)
    problems = check_spec(spec, platform)
    if problems:
        raise SpecError(path, problems)
    return spec
