"""Runbook steps 7 and 8: the smoke-test job scripts, and the connection sheet the tenant receives
(login host, users, SSH snippet, partition, account, QoS, GPU pool, wall limits, filesystems with
quotas, and the capacity contract so the customer knows what they bought). Its offboarding
counterparts are the notice sent when the tenant is frozen (what stops, what is kept, how long),
and the one sent once it is offboarded (what is kept until when, how to ask for it back).

Both are rendered from the reviewed spec alone, so a pull request shows them before `up`; the
tenant stack exports them, and `gpu-tenants handover <slug>` prints the sheet.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from email.utils import formataddr
from typing import Literal

from providers.notices.delivery import Notice
from tenant_stack.components.login_pod import ssh_config
from tenant_stack.platform import Platform, Support
from tenant_stack.retention_calendar import Retained
from tenant_stack.spec import TenantSpec
from tenant_stack.spec.quantities import readable_size


def smoke_tests(spec: TenantSpec) -> dict[str, str]:
    """The batch scripts of runbook step 7, one per check, ready for `sbatch`."""
    header = (
        "#!/bin/bash\n"
        f"#SBATCH --partition={spec.partition}\n"
        f"#SBATCH --account={spec.account}\n"
        f"#SBATCH --qos={spec.qos_normal}\n"
    )
    return {
        "single-node-gpu.sh": header + "#SBATCH --gres=gpu:1\n#SBATCH --time=00:05:00\n"
        "set -euo pipefail\n"
        "hostname\n"
        "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader\n"
        "nvidia-smi -L\n"
        "# Exactly one GPU: cgroup ConstrainDevices is on.\n"
        'test "$(nvidia-smi -L | wc -l)" -eq 1\n',
        "two-node-nccl.sh": header + "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
        "#SBATCH --gres=gpu:8\n#SBATCH --time=00:15:00\n"
        "set -euo pipefail\n"
        "module load nccl-tests\n"
        "srun --mpi=pmix all_reduce_perf -b 8 -e 4G -f 2 -g 1\n"
        "# Expect busbw near the tier's figure at 4 GB messages.\n",
        "storage.sh": header + "#SBATCH --time=00:05:00\n"
        "set -euo pipefail\n"
        f"cd /scratch/{spec.slug}\n"
        "# 10 GiB, unless the run asks for another size.\n"
        "dd if=/dev/urandom of=smoke.bin bs=1M count=${SMOKE_WRITE_MIB:-10240} status=progress\n"
        "dd if=smoke.bin of=/dev/null bs=1M\n"
        "# The Weka mount, not the host's root filesystem:\n"
        f"df -h /scratch/{spec.slug}\n"
        "rm smoke.bin\n",
    }


def connection_sheet(spec: TenantSpec, platform: Platform, smoke_run: str | None = None) -> str:
    """The Markdown sheet of runbook step 8, to send to the tenant as it is; with `smoke_run`,
    the last smoke-test run's result (`gpu-tenants smoke`), as the handover checklist asks."""
    contract = spec.contract
    sku = platform.skus[contract.gpu_sku]
    alias = f"login-{spec.short_name}"
    users = ", ".join(u.username for u in spec.users)
    nodes = len(spec.reservation.nodes)
    pool = (
        f"{nodes}x {sku.gpu_model} nodes ({contract.gpus} GPUs total)"
        if nodes
        else f"{contract.gpus} {sku.gpu_model} GPUs ({contract.partition_type})"
    )
    home, scratch = spec.storage.home_per_user, spec.storage.scratch
    example = ssh_config(alias, spec.login.hostname, spec.users[0].username)
    lines = [
        f"# {spec.display_name}: connection sheet",
        "",
        f"- Tenant: `{spec.slug}`",
        f"- Login host: `{spec.login.hostname}` (port 22)",
        f"- Users: {users}",
        "",
        "## SSH",
        "",
        "Add this to `~/.ssh/config` (with your own user name), then `ssh " + alias + "`:",
        "",
        "```",
        example.rstrip(),
        "```",
        "",
        "## Slurm",
        "",
        f"- Partition: `{spec.partition}`",
        "- Accounts: "
        + ", ".join(f"`{a}`" for a in sorted({spec.user_account(u) for u in spec.users})),
        f"- Default QoS: `{spec.qos_normal}`",
        f"- Interactive QoS: `{spec.qos_interactive}` (`--qos={spec.qos_interactive}`)",
        f"- GPU pool: {pool}",
        f"- Wall limit: {contract.wall_limit} normal,"
        f" {contract.interactive_wall_limit} interactive",
        "",
        "## Filesystems",
        "",
        f"- `/home/<user>`: {readable_size(home.hard)} per user"
        f" (warning at {readable_size(home.soft)})",
        f"- `/scratch/{spec.slug}`: {readable_size(scratch.hard)} shared"
        f" (warning at {readable_size(scratch.soft)}), no backup",
        "",
        "## Containers",
        "",
        "pyxis + enroot: `srun --container-image=docker://pytorch/pytorch:2.4-cuda ...`",
        "",
        "## Your capacity contract",
        "",
        f"- GPUs: {contract.gpus} {contract.gpu_sku} (Slurm `GrpTRES=gres/gpu={contract.gpus}`)",
        f"- Concurrent jobs: {spec.slurm.grp_jobs} (`GrpJobs`), {spec.slurm.max_jobs_per_user}"
        " per user",
        f"- GPU-minutes: {contract.gpu_minutes} in total, {spec.gpu_minutes_per_user} per user",
        f"- Partition nodes: `{spec.nodelist or 'none (no reserved nodes)'}`",
        f"- /scratch quota: {readable_size(scratch.hard)}",
        f"- Term: {contract.term.start} to {contract.term.end}",
        "",
    ]
    lines += _support(platform.support)
    if smoke_run is not None:
        lines += ["## Smoke tests (runbook step 7)", "", smoke_run, ""]
    return "\n".join(lines)


def _support(support: Support) -> list[str]:
    sla = support.first_response
    return [
        "## Documentation",
        "",
        *(f"- [{link.title}]({link.url})" for link in support.docs),
        "",
        "## Getting help",
        "",
        f"- Email: {support.email}",
        f"- Chat: {support.chat}",
        f"- Out of hours, the on-call rota: {support.on_call}",
        f"- First response: within {sla.business_hours} in business hours,"
        f" {sla.otherwise} otherwise",
        "",
    ]


def offboarding_notice(spec: TenantSpec, platform: Platform) -> str:
    """The Markdown notice the customer receives when offboarding starts (stage frozen)."""
    lifecycle, retention = spec.lifecycle, platform.retention
    drain = (
        f"running jobs may finish for up to {lifecycle.drain_timeout}"
        if lifecycle.drain_mode == "graceful"
        else f"running jobs receive TERM (checkpoint now) and are killed {lifecycle.drain_timeout}"
        " later"
    )
    lines = [
        f"# {spec.display_name}: offboarding notice",
        "",
        f"- Tenant: `{spec.slug}`: offboarding has begun.",
        f"- New jobs are refused on `{spec.partition}` and account `{spec.account}`; pending jobs"
        f" are cancelled; {drain}.",
        f"- The login host `{spec.login.hostname}` stays reachable for copying data out until the"
        " storage snapshots are taken; then it is stopped.",
        "",
        "## What is kept, and for how long",
        "",
        f"- Snapshots of /home and /scratch/{spec.slug}, in the retention store: "
        f"{lifecycle.retention_days} days after they are taken.",
        f"- Your job accounting records (jobs, steps, accounts): {retention.accounting_days} days.",
        f"- Scheduler logs: {retention.logs_days} days.",
        "- Your user accounts are disabled, not deleted, until the snapshots' retention ends.",
    ]
    if lifecycle.legal_hold:
        lines.append("- A legal hold is in force: nothing is deleted until it is lifted.")
    return "\n".join([*lines, ""])


def completion_notice(spec: TenantSpec, platform: Platform, retained: Sequence[Retained]) -> str:
    """The Markdown notice the customer receives once offboarding is complete (runbook step 8,
    "customer notified of completion"): what is kept and until when, and how to ask for a
    restore or for erasure before then."""
    kept: dict[str, list[date]] = {}
    for item in retained:
        kept.setdefault(_kept_as(item.item), []).append(item.until)
    lines = [
        f"# {spec.display_name}: offboarding complete",
        "",
        f"- Tenant `{spec.slug}` is offboarded: its nodes are returned, its Slurm accounts, "
        f"logins ({spec.login.hostname}) and live filesystems are gone, and nothing of it runs.",
        "",
        "## What is kept, and until when",
        "",
        *(f"- {what}: until {max(days)}." for what, days in sorted(kept.items())),
        *([] if kept else ["- Nothing: what was kept has been deleted after its retention."]),
        "",
        "Each is deleted after its date, unless a legal hold is in force.",
        "",
        "## Restores and erasure",
        "",
        f"- To have your data brought back before its date (a restore), or your users' "
        f"personal data erased sooner, write to {platform.support.email} naming `{spec.slug}`.",
    ]
    if spec.lifecycle.legal_hold:
        lines.append("- A legal hold is in force: nothing is deleted until it is lifted.")
    return "\n".join([*lines, ""])


def _kept_as(item: str) -> str:
    """A retained item (retention_calendar's words) in the customer's."""
    kind, _, name = item.partition(":")
    if kind == "copy":
        return f"A copy of your directories on the shared filesystem {name}"
    if kind == "snapshot":
        return f"A snapshot of your filesystem {name}"
    if kind == "user":
        return "Your user accounts, disabled (their names and numbers are not given to others)"
    if kind == "logs":
        return "Scheduler logs of your jobs"
    return "Your job accounting records (jobs, steps, accounts)"


def customer_notice(
    spec: TenantSpec, platform: Platform, kind: Literal["start", "completion"], text: str
) -> Notice | None:
    """The notice of `kind` to the tenant's contact, with `text` (`offboarding_notice`,
    `completion_notice`); None where the platform sends no notices or the spec names no one."""
    notices, contact = platform.notices, spec.contract.contact
    if notices is None or contact is None:
        return None
    about = "offboarding notice" if kind == "start" else "offboarding complete"
    return Notice(
        tenant=spec.slug,
        kind=kind,
        sender=formataddr((notices.from_name, notices.from_address)),
        to=formataddr((contact.name, contact.email)),
        subject=f"{spec.display_name}: {about}",
        text=text,
    )
