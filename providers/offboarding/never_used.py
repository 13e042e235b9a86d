"""What an abandoned onboarding must show before anything of it is deleted (`lifecycle.abandoned`,
the rollback of an onboarding that went wrong): the tenant never ran a job and never wrote a file.
Read live, by the preflight when the flag is set and again by the offboarding gate at destroy:

- jobs: every job of the tenant's accounts that Slurm's accounting holds, over the whole history,
  after slurmdbd has taken every record slurmctld sent it (`accounting_export.export`);
- files: every entry that is not a directory under the tenant's directories (its own
  filesystems, or its directories on the shared ones), read on the mount host: onboarding makes
  directories only (the homes, the scratch directory).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from providers.errors import BackendError
from providers.slurm.accounting_export import export
from providers.slurm.settings import Settings as SlurmSettings
from providers.weka.mount import mount_client

__all__ = ["refuse_if_used", "signs_of_use"]

# How many job ids and file names a refusal names; it counts them all.
_NAMED = 10


def signs_of_use(accounts: Sequence[str], places: Sequence[Sequence[str]]) -> list[str]:
    """Why the tenant is not one that never ran a job or wrote a file (its `accounts`, its
    directories as (organization, filesystem, path)); empty when it is one."""
    found = []
    jobs = export(SlurmSettings.from_environment().make_transport(), "jobs", accounts, True)
    if jobs.rows:
        rows = csv.DictReader(io.StringIO(jobs.data.decode()), delimiter="|")
        ids = sorted({row["JobID"] for row in rows}, key=lambda job: (len(job), job))
        found.append(
            f"Slurm's accounting holds {len(ids)} jobs of {', '.join(accounts)}: "
            + ", ".join(ids[:_NAMED])
            + (", ..." if len(ids) > _NAMED else "")
        )
    mount = mount_client()
    for org, filesystem, path in places:
        doing = f"reading what {path} of filesystem {filesystem!r} holds"
        files = mount.files(org, filesystem, path, doing)
        if files:
            named = ", ".join(name for _, name in files[:_NAMED])
            found.append(
                f"{mount.mount_path(org, filesystem, path)} holds {len(files)} files of "
                f"{sum(size for size, _ in files)} bytes: {named}"
                + (", ..." if len(files) > _NAMED else "")
            )
    return found


def refuse_if_used(
    error: type[BackendError], accounts: Sequence[str], places: Sequence[Sequence[str]], doing: str
) -> None:
    """Raises `error` naming every sign that the tenant ran a job or wrote a file."""
    found = signs_of_use(accounts, places)
    if found:
        raise error(
            doing,
            "refused: an abandoned onboarding deletes the tenant whole, keeping nothing, and "
            f"this tenant has been used: {'; '.join(found)}",
            "offboard it by its stages instead, which keep what it made (remove "
            "lifecycle.abandoned, then lifecycle.stage: frozen); nothing was deleted",
        )
