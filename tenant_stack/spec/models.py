"""The pydantic models of `tenants/<slug>.yaml`, each field checked on its own: types, ranges and
formats. The names derived from the slug are properties of `TenantSpec`, so they cannot drift
apart; `hostlist` is here because `TenantSpec.nodelist` writes its nodes in Slurm's form. The rules
that tie fields to each other live in `rules`, which needs valid fields first.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from datetime import date
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, Field

from providers.identities import MAX_ID
from tenant_stack.lifecycle import SIGNED_OFF

# Re-exported: the spec's readers take a tenant's stages from its models.
from tenant_stack.lifecycle import STAGES as STAGES
from tenant_stack.lifecycle import Stage as Stage
from tenant_stack.partition_types import PartitionType
from tenant_stack.spec.names import (
    AccountName,
    Email,
    PersonName,
    QosFlag,
    SacctmgrText,
    Slug,
    Ticket,
    Username,
)
from tenant_stack.spec.quantities import BoundedDuration, Bytes, MilliCpu, WallTime
from tenant_stack.spec.ssh_keys import SshKey
from tenant_stack.strict_models import DnsLabel, DnsName, StrictModel

_T = TypeVar("_T", bound=Hashable)


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


PosixId = Annotated[int, Field(ge=1, le=MAX_ID)]
Count = Annotated[int, Field(ge=1, le=MAX_ID)]
Day = Annotated[date, Field(strict=False)]  # a quoted ISO date is as clear as an unquoted one
PreemptMode = Literal["off", "cancel", "requeue"]


class Term(StrictModel):
    start: Day
    end: Day


class Contact(StrictModel):
    """Who at the customer receives the offboarding notices."""

    name: PersonName
    email: Email


class Contract(StrictModel):
    """What the tenant bought."""

    gpu_sku: DnsLabel
    gpus: Count
    partition_type: PartitionType
    term: Term
    wall_limit: WallTime
    interactive_wall_limit: WallTime
    gpu_minutes: Count  # the whole tenant's budget, split evenly between its users
    # Required once offboarding starts where the platform sends notices (Platform.notices).
    contact: Contact | None = None


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
    """A Slurm sub-account of the tenant's account (the tenant's "project")."""

    name: AccountName
    description: SacctmgrText
    fairshare: Count
    # The team's own GPU cap (its sub-account's GrpTRES=gres/gpu), never above the contract's.
    # The teams' caps may add up to more than the tenant's: Slurm enforces both, the lower wins.
    gpus: Count | None = None


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


class Confirmation(StrictModel):
    """Offboarding step 0's paper trail: the customer's counterparty who confirmed the
    offboarding, or, when there is none, whoever gave the internal escalation sign-off."""

    kind: Literal["customer", "escalation"]
    by: PersonName

    @property
    def described(self) -> str:
        if self.kind == "customer":
            return f"confirmed for the customer by {self.by}"
        return f"no customer confirmation: {self.by} gave the internal escalation sign-off"


class SignOff(StrictModel):
    by: PersonName
    date: Day
    ticket: Ticket
    confirmation: Confirmation

    def record(self) -> dict[str, str]:
        """As the offboarding gate records it, in the stack and in the tenant's ledger."""
        return {
            "by": self.by,
            "date": self.date.isoformat(),
            "ticket": self.ticket,
            "confirmation": self.confirmation.kind,
            "confirmed_by": self.confirmation.by,
        }


class Lifecycle(StrictModel):
    """Offboarding moves `stage` forward one reviewed pull request at a time."""

    stage: Stage
    drain_mode: Literal["graceful", "hard"]
    drain_timeout: BoundedDuration  # graceful: wait for the queue; hard: TERM to KILL
    retention_days: Annotated[int, Field(ge=1, le=3650)]
    legal_hold: bool
    sign_off: SignOff | None = None
    # A rehearsal: `pulumi destroy` may delete it at any stage, with no archive, snapshot or
    # sign-off. Declared from the tenant's first `up` on (the preflight refuses it later).
    rehearsal: bool = False
    # The rollback of an onboarding that went wrong before the tenant ran a job or wrote a file:
    # `pulumi destroy` deletes it whole at stage active, keeping nothing (no archive, no
    # tombstone: its users are deleted and their uids given back). Checked live when it is set
    # (the preflight) and again by the delete gate: no job of its accounts in sacct, and nothing
    # but the directories onboarding made on its filesystems.
    abandoned: bool = False
    # The rollback past step 4 (the filesystems deleted): the tenant is brought back from what
    # offboarding kept, each filesystem made from its uploaded snapshot.
    restore: bool = False
    # The tenant never ran a job: the empty billing export is what there is, and the archived
    # stage accepts it (runbook 3b checks the row count; the change ticket says why it is 0).
    no_jobs: bool = False

    def reached(self, stage: Stage) -> bool:
        return STAGES.index(self.stage) >= STAGES.index(stage)

    @property
    def next_stage(self) -> Stage | None:
        index = STAGES.index(self.stage)
        return STAGES[index + 1] if index + 1 < len(STAGES) else None

    @property
    def waits_for(self) -> str:
        """What the next stage waits for, from the spec alone: its pull request."""
        following = self.next_stage
        if following is None:
            return "none: the stage is destroy; `pulumi destroy --exclude-protected` ends it"
        said = f"a reviewed pull request setting lifecycle.stage: {following}"
        if following in SIGNED_OFF and self.sign_off is None:
            said += ", with lifecycle.sign_off (by, date, ticket, confirmation)"
        return said


class Found(StrictModel):
    """What `import` found made by hand for the tenant, which its first `up` may adopt, and
    nothing else: Authentik's users and groups by their primary keys (a name alone could be a
    staff account's), the Kubernetes and Slurm objects as `Kind/name`."""

    authentik_users: dict[Username, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    authentik_groups: dict[DnsLabel, Annotated[str, Field(min_length=1)]] = Field(
        default_factory=dict
    )
    kubernetes: list[Annotated[str, Field(pattern=r"^[A-Za-z]+/[a-z0-9][-a-z0-9.]*$")]] = Field(
        default_factory=list
    )
    # The Slurm QoS, accounts and partition as `Kind/name` (Qos, Account, Partition).
    slurm: list[Annotated[str, Field(pattern=r"^(Qos|Account|Partition)/[A-Za-z0-9._-]+$")]] = (
        Field(default_factory=list)
    )


class Imported(StrictModel):
    """A tenant onboarded by hand before this program managed it, brought in by `import`. The
    names the runbook let its operator choose stay as they are: the rules that are this project's
    own naming conventions (a team's name ending in the short name) do not apply to it."""

    date: Day  # when `import` read the live tenant
    # The Weka organization's admin, as the runbook's operator named it (this program's own
    # tenants have `<slug>-admin`).
    weka_org_admin: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] | None = (
        None
    )
    # The reviewed flag of the first `up`: the objects made by hand are adopted, marked as the
    # tenant's, rather than refused (tenant_stack/adoption.py). Set false once they are.
    adopt: bool = False
    # What `import` recorded of them: adoption takes over these and no other object.
    found: Found | None = None


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
    imported: Imported | None = None

    @property
    def short_name(self) -> str:
        return self.slug.removeprefix("tenant-")

    @property
    def account(self) -> str:
        return self.slug

    @property
    def own_filesystem_bytes(self) -> int:
        """What Weka provisions for the tenant's own filesystems (home and scratch, org
        isolation); 0 on the shared filesystems, which the platform provisioned."""
        storage = self.storage
        return storage.home_capacity + storage.scratch.hard if storage.isolation == "org" else 0

    @property
    def slurm_accounts(self) -> list[str]:
        """The tenant's account and its teams' sub-accounts."""
        return [self.account, *(team.name for team in self.slurm.teams)]

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
        match = re.fullmatch(r"(.*?)([0-9]+)", node)
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
