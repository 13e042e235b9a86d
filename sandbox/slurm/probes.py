"""Readiness probes: each answers quickly and never raises (the supervisor polls them)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from providers.processes import start_time
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


# A node slurmd serves that can take jobs: its base state, and flags that say it cannot.
_USABLE_STATES = {"IDLE", "ALLOCATED", "MIXED"}
_UNUSABLE_FLAGS = {"DRAIN", "FAIL", "INVALID_REG", "NOT_RESPONDING", "POWERED_DOWN"}


def _node_field(show_node: str, name: str) -> str:
    return next((f.split("=", 1)[1] for f in show_node.split() if f.startswith(f"{name}=")), "")


def node_state(show_node: str) -> str:
    """The State= field of `scontrol show node NAME -o`: `IDLE`, `IDLE+DRAIN`, `DOWN*`, ..."""
    return _node_field(show_node, "State")


def node_usable(show_node: str) -> bool:
    """Whether `scontrol show node NAME -o` shows a node that takes jobs: IDLE, ALLOCATED or
    MIXED, and neither draining, not responding nor powered down (`State=IDLE+DRAIN`,
    `State=DOWN*`, ...)."""
    state = node_state(show_node)
    base, *flags = state.rstrip("*").split("+")
    return base in _USABLE_STATES and not state.endswith("*") and not _UNUSABLE_FLAGS & set(flags)


def _shown(text: str, name: str) -> str:
    """The value of `name = value` in `scontrol show slurmd` or `scontrol show config`."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == name:
            return value.strip()
    return ""


def slurmd_registered(show_node: str, slurmd_started: str, show_config: str = "") -> bool:
    """Whether slurmctld has the slurmd started at `slurmd_started` (local ISO time, to the
    second) registered for the node of `scontrol show node NAME -o`, and can give it jobs.

    Either the node is usable and slurmd reported a start (`SlurmdStartTime`) no earlier than
    that, so not an older slurmd's, or slurmctld restarted after this slurmd started
    (`BOOT_TIME` of `scontrol show config`): a restarted slurmctld holds the node UNKNOWN, with
    no start time, until it next asks slurmd to register (about 5 s). Replacing that slurmd, as
    `up` replaces a service that is not ready, would gain nothing."""
    if node_usable(show_node):
        return _node_field(show_node, "SlurmdStartTime") >= slurmd_started
    slurmctld_started = _shown(show_config, "BOOT_TIME")
    # Both are ISO 8601 local times, so they compare as text.
    return node_state(show_node) == "UNKNOWN" and slurmd_started < slurmctld_started


def _process_started(pid_file: Path) -> str | None:
    """When the process of `pid_file` started, as local ISO time to the second, one second
    early: /proc counts from a boot time given in whole seconds, and slurmd notes its own start
    after exec, so the true start is never earlier than this."""
    try:
        ticks = start_time(int(pid_file.read_text().split()[0]))
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    if ticks is None:
        return None
    started = boot + int(ticks) // os.sysconf("SC_CLK_TCK") - 1
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))


def slurmd_ready(s: SlurmSettings, node: str) -> bool:
    # slurmctld keeps a node's state across a restart of slurmd, so ask both: this host when
    # the node's slurmd started (from its pid file: `scontrol show slurmd` reaches only the
    # slurmd at SlurmdPort, and a bare connect to a port would log an error in slurmd's log at
    # every poll), slurmctld whether it has it registered since.
    started = _process_started(s.slurmd_pid_file(node))
    if started is None:
        return False
    env = _slurm_env(s)

    def scontrol(*args: str) -> str | None:
        result = run([binary("scontrol"), *args], timeout=_PROBE_TIMEOUT, env=env)
        return result.stdout if result is not None and result.returncode == 0 else None

    show_node = scontrol("show", "node", node, "-o")
    if show_node is None:
        return False
    if node_state(show_node) == "UNKNOWN":
        return slurmd_registered(show_node, started, scontrol("show", "config") or "")
    return slurmd_registered(show_node, started)
