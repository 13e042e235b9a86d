"""The tenant spec: the models of `tenants/<slug>.yaml`, the reviewed single source of truth of one
tenant, and the rules that tie its fields to each other and to the platform.

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
  (remove it when rolling back, so an old sign-off cannot authorise a later destroy). The sign-off
  names who confirmed for the customer, or, with no customer counterparty, who gave the internal
  escalation sign-off: a second person, not the one signing off (runbook step 0).
  `lifecycle.abandoned` (the rollback of an onboarding) only at stage active, under no legal
  hold, and not for an imported tenant. A legal hold
  forbids moving a live tenant to stage `destroy` (the program's preflight refuses it: only the
  live cluster tells a live tenant from an offboarded one), and makes the retention purge skip an
  offboarded tenant, its timers paused. A graceful drain waits at most 14
  days for the queue to empty; a hard drain's TERM-to-KILL grace is 60 s (the runbook's minimum)
  to 1 h.

The modules, each importing only those listed before it: `quantities` (durations, sizes, CPU),
`ssh_keys` and `names` (field formats), `models` (the pydantic models), `rules` (`check_spec`, the
rules across fields), `loading` (`load_spec`, both passes and the report), `stage_edit` (the
`stage` command's edit of a spec's `lifecycle`, comments and layout kept) and `fleet` (the rules
across tenants, over every spec in `tenants/`).
"""

from tenant_stack.spec.loading import load_spec
from tenant_stack.spec.models import (
    Contract,
    Identity,
    KubernetesSpec,
    Lifecycle,
    Login,
    Network,
    Qos,
    Reservation,
    SlurmSpec,
    Storage,
    Team,
    TenantSpec,
    User,
    hostlist,
)
from tenant_stack.spec.quantities import Duration, parse_cpu, parse_duration, parse_size
from tenant_stack.spec.rules import check_spec
from tenant_stack.spec.ssh_keys import SshPublicKey, parse_ssh_key

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
