"""Readiness probes: each answers quickly and never raises (the supervisor polls them)."""

from __future__ import annotations

import os
from collections.abc import Callable

from sandbox.slurm.commands import binary, run
from sandbox.slurm.settings import SlurmSettings
from sandbox.supervisor import port_in_use

# A sacctmgr or scontrol that cannot reach its daemon waits up to a minute; a probe must not.
_PROBE_TIMEOUT = 5.0


def never_raises(probe: Callable[[], bool]) -> Callable[[], bool]:
    def guarded() -> bool:
        try:
            return probe()
        except Exception:
            return False

    return guarded


def _slurm_env(s: SlurmSettings) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(s.slurm_conf)}


def munge_ready(s: SlurmSettings) -> bool:
    if not s.munge_socket.exists():
        return False
    socket = f"--socket={s.munge_socket}"
    cred = run([binary("munge"), "-n", socket], timeout=_PROBE_TIMEOUT)
    if cred is None or cred.returncode != 0:
        return False
    decoded = run([binary("unmunge"), socket], timeout=_PROBE_TIMEOUT, input_text=cred.stdout)
    return decoded is not None and decoded.returncode == 0


def mariadb_ready(s: SlurmSettings) -> bool:
    result = run(
        [binary("mariadb-admin"), f"--defaults-file={s.mariadb_cnf}", "ping"],
        timeout=_PROBE_TIMEOUT,
    )
    return result is not None and result.returncode == 0 and "alive" in result.stdout


def _clusters(s: SlurmSettings) -> list[str] | None:
    result = run(
        [binary("sacctmgr"), "-P", "-n", "show", "cluster", "format=Cluster,ControlHost"],
        timeout=_PROBE_TIMEOUT,
        env=_slurm_env(s),
    )
    if result is None or result.returncode != 0:
        return None
    return result.stdout.splitlines()


def slurmdbd_ready(s: SlurmSettings) -> bool:
    # The port check first: it is instant, and sacctmgr against a closed port is not.
    return port_in_use(s.slurmdbd_port) and _clusters(s) is not None


def slurmctld_ready(s: SlurmSettings) -> bool:
    result = run([binary("scontrol"), "ping"], timeout=_PROBE_TIMEOUT, env=_slurm_env(s))
    if result is None or "is UP" not in result.stdout:
        return False
    # slurmctld registers itself (cluster row, ControlHost, TRES) with slurmdbd shortly after it
    # answers; clients that run right after start expect to find the cluster.
    clusters = _clusters(s)
    return clusters is not None and any(
        line.startswith(f"{s.cluster_name}|") and line != f"{s.cluster_name}|" for line in clusters
    )
