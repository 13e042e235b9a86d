"""A tenant's GPU usage now against its caps, per scope, the way the vendor's page reports it: the
tenant (every job of its account and its teams' sub-accounts, plus the GPUs its namespace's pods
request) against the contract, and each team (its sub-account's jobs) against its own cap, the
lower of the team's and the contract's. A scope is oversubscribed when a cap was lowered under
running work: Slurm keeps running what started under the old cap and holds back new jobs. Also
each association's GPU-minutes used against its budget (GrpTRESMins)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from providers.kubectl import kubectl_json
from providers.slurm.settings import Settings as SlurmSettings
from providers.slurm.usage import GpuMinutes, SlurmUsage
from tenant_stack.spec import TenantSpec

__all__ = ["ScopeUsage", "Usage", "read_usage"]

GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class ScopeUsage:
    scope: str  # "tenant" or "team <name>"
    slurm: int  # GPUs held by running jobs
    kubernetes: int  # GPUs requested by the namespace's pods that have not ended
    cap: int
    cap_from: str  # the spec field the cap comes from

    @property
    def used(self) -> int:
        return self.slurm + self.kubernetes

    @property
    def over(self) -> bool:
        return self.used > self.cap

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "used": self.used, "over": self.over}


@dataclass(frozen=True)
class Usage:
    scopes: list[ScopeUsage]
    gpu_minutes: list[GpuMinutes]

    def as_json(self) -> dict[str, object]:
        return {
            "scopes": [scope.as_json() for scope in self.scopes],
            "gpu_minutes": [asdict(row) for row in self.gpu_minutes],
        }


def read_usage(spec: TenantSpec) -> Usage:
    settings = SlurmSettings.from_environment()
    slurm = SlurmUsage(settings.make_transport())
    jobs = slurm.running(spec.slurm_accounts)
    pods = kubectl_json("get", "pods", namespace=spec.namespace)["items"]
    requested = sum(
        int((container.get("resources") or {}).get("requests", {}).get(GPU_RESOURCE, 0))
        for pod in pods
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        for container in pod["spec"].get("containers") or []
    )
    scopes = [
        ScopeUsage(
            "tenant", sum(job.gpus for job in jobs), requested, spec.contract.gpus, "contract.gpus"
        )
    ]
    for index, team in enumerate(spec.slurm.teams):
        own = team.gpus is not None and team.gpus < spec.contract.gpus
        scopes.append(
            ScopeUsage(
                f"team {team.name}",
                sum(job.gpus for job in jobs if job.account == team.name),
                0,
                team.gpus if own and team.gpus is not None else spec.contract.gpus,
                f"slurm.teams.{index}.gpus" if own else "contract.gpus",
            )
        )
    return Usage(scopes, slurm.gpu_minutes(spec.slurm_accounts))
