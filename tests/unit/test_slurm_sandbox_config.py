"""The Slurm sandbox's pure parts: the node lines it renders (fourteen CLOUD nodes and two that
real slurmd daemons serve) and the readiness check of a slurmd node, on `scontrol show node -o`
output captured from the sandbox's Slurm 22.05."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.slurm import config
from sandbox.slurm.probes import node_state, node_usable, slurmd_registered
from sandbox.slurm.settings import SlurmSettings

STATE = Path("/state")

# --- captured from the sandbox (fields after State= cut) -----------------------------------------

_NODE = (
    "NodeName=gpu-14 Arch=x86_64 CoresPerSocket=56  CPUAlloc=0 CPUEfctv=224 CPUTot=224 "
    "CPULoad=0.97 AvailableFeatures=h100 ActiveFeatures=h100 Gres=gpu:8 NodeAddr=127.0.0.1 "
    "NodeHostName=gpu-14 Version=22.05.8 RealMemory=2000000 AllocMem=0 Sockets=2 Boards=1 "
)
_STARTED = "BootTime=2026-11-30T20:07:29 SlurmdStartTime=2026-11-30T23:20:01"
IDLE = _NODE + f"State=IDLE ThreadsPerCore=2 TmpDisk=0 Weight=1 {_STARTED}\n"
ALLOCATED = _NODE + f"State=ALLOCATED ThreadsPerCore=2 TmpDisk=0 Weight=1 {_STARTED}\n"
DRAINED = _NODE + "State=IDLE+DRAIN ThreadsPerCore=2 Reason=captured [root@2026-11-30T23:00:53]\n"
DRAINING = _NODE + "State=ALLOCATED+DRAIN ThreadsPerCore=2 Reason=captured\n"
# Just after `scontrol update State=RESUME`, until slurmd answers slurmctld's ping.
NOT_RESPONDING = _NODE + "State=IDLE+NOT_RESPONDING ThreadsPerCore=2 BootTime=None\n"
# slurmd 22.05 reporting 0 GPUs of a gres.conf line without File= (see config.gres_conf).
INVALID = (
    _NODE + "State=UNKNOWN+DRAIN+INVALID_REG ThreadsPerCore=2 "
    "Reason=gres/gpu count reported lower than configured (0 < 8) [root@2026-11-30T22:53:13]\n"
)
# A node of the sandbox before it had a slurmd (and every other node still).
CLOUD = _NODE + "State=IDLE+CLOUD+POWERED_DOWN ThreadsPerCore=2 BootTime=None\n"
# For about 5 s after slurmctld restarts, until it asks slurmd to register again.
UNKNOWN = _NODE + "State=UNKNOWN ThreadsPerCore=2 BootTime=None SlurmdStartTime=None\n"

# When the slurmd process started (from /proc, one second early), and that of a newer one.
SLURMD = "2026-11-30T23:20:00"
NEWER_SLURMD = "2026-11-30T23:25:40"
# `scontrol show config` of a slurmctld started after SLURMD, and of one started before it.
CONFIG_RESTARTED = (
    "Configuration data as of 2026-11-30T23:20:23\n"
    "BOOT_TIME               = 2026-11-30T23:20:17\n"
    "CLUSTER_NAME            = production\n"
)
CONFIG_OLDER = CONFIG_RESTARTED.replace("23:20:17", "23:10:00")


@pytest.mark.parametrize("line", [IDLE, ALLOCATED])
def test_a_registered_node_takes_jobs(line: str) -> None:
    assert node_usable(line)


@pytest.mark.parametrize(
    "line", [DRAINED, DRAINING, NOT_RESPONDING, INVALID, CLOUD, UNKNOWN, "State=DOWN*", ""]
)
def test_a_node_that_cannot_take_jobs_is_not_usable(line: str) -> None:
    assert not node_usable(line)


def test_node_state_is_read_from_its_field() -> None:
    assert node_state(INVALID) == "UNKNOWN+DRAIN+INVALID_REG"
    assert node_state(UNKNOWN) == "UNKNOWN"
    assert node_state("NodeName=gpu-14 Arch=x86_64") == ""


def test_slurmd_is_registered_when_slurmctld_has_a_start_time_since_the_process_began() -> None:
    assert slurmd_registered(IDLE, SLURMD)
    assert slurmd_registered(ALLOCATED, SLURMD)
    # slurmctld still shows the node as the slurmd before this one left it.
    assert not slurmd_registered(IDLE, NEWER_SLURMD)
    assert not slurmd_registered(DRAINED, SLURMD)
    assert not slurmd_registered(INVALID, SLURMD, CONFIG_RESTARTED)


def test_an_unknown_node_is_registered_only_under_a_restarted_slurmctld() -> None:
    assert slurmd_registered(UNKNOWN, SLURMD, CONFIG_RESTARTED)
    # A new slurmd that slurmctld has not registered yet (or cannot).
    assert not slurmd_registered(UNKNOWN, SLURMD, CONFIG_OLDER)
    assert not slurmd_registered(UNKNOWN, SLURMD)


def node_lines(settings: SlurmSettings) -> list[str]:
    return [
        line
        for line in config.slurm_conf(settings).splitlines()
        if line.startswith("NodeName=") and not line.startswith("NodeName=DEFAULT")
    ]


def test_two_nodes_are_served_by_slurmd_each_on_its_port_and_the_others_stay_cloud() -> None:
    s = SlurmSettings(STATE)
    assert node_lines(s) == [
        "NodeName=gpu-[01-13] State=CLOUD",
        "NodeName=gpu-14 NodeAddr=127.0.0.1 Port=26818",
        "NodeName=gpu-15 NodeAddr=127.0.0.1 Port=26820",
        "NodeName=gpu-16 State=CLOUD",
    ]
    conf = config.slurm_conf(s)
    assert "SuspendExcNodes=gpu-[14-15]\n" in conf
    assert "SlurmdParameters=config_overrides\n" in conf
    assert "SlurmdPort=26818\n" in conf
    # Each slurmd keeps its spool, pid, log and TmpFS apart by its node's name.
    assert f"SlurmdSpoolDir={s.slurmd_spool_dir}/%n\n" in conf
    assert f"SlurmdPidFile={s.run_dir}/slurmd-%n.pid\n" in conf
    assert f"TmpFS={s.node_dir}/tmp/%n\n" in conf
    assert f"TaskProlog={s.node_dir}/task-prolog\n" in conf
    assert f"Epilog={s.node_dir}/epilog\n" in conf
    # The epilog waits while its node's fault file exists, which the shell names at run time.
    assert f'while [ -e "{s.node_dir}/faults/epilog-hangs-$SLURMD_NODENAME" ]' in config.epilog(s)
    assert "\nPartitionName=platform Nodes=ALL " in conf


def test_the_test_sandbox_moves_each_slurmd_port_by_its_offset() -> None:
    assert SlurmSettings(STATE, port_offset=1000).slurmd_ports == {
        "gpu-14": 27818,
        "gpu-15": 27820,
    }


@pytest.mark.parametrize(
    ("nodes", "lines"),
    [
        (("gpu-01", "gpu-02"), ["NodeName=gpu-01 NodeAddr=127.0.0.1 Port=26818",
                                "NodeName=gpu-02 NodeAddr=127.0.0.1 Port=26820",
                                "NodeName=gpu-[03-16] State=CLOUD"]),
        (("gpu-03", "gpu-16"), ["NodeName=gpu-[01-02] State=CLOUD",
                                "NodeName=gpu-03 NodeAddr=127.0.0.1 Port=26818",
                                "NodeName=gpu-[04-15] State=CLOUD",
                                "NodeName=gpu-16 NodeAddr=127.0.0.1 Port=26820"]),
    ],
)  # fmt: skip
def test_the_slurmd_nodes_may_be_any_nodes(nodes: tuple[str, str], lines: list[str]) -> None:
    assert node_lines(SlurmSettings(STATE, slurmd_nodes=nodes)) == lines


def test_every_gpu_has_a_stand_in_device() -> None:
    s = SlurmSettings(STATE)
    assert config.gres_conf(s) == "NodeName=gpu-[01-16] Name=gpu File=/state/gpus/nvidia[0-7]\n"


def test_each_sandbox_has_its_own_node_directory_outside_its_state() -> None:
    one, other = SlurmSettings(STATE), SlurmSettings(Path("/other"))
    assert one.node_dir.parent == Path("/var/spool/gpu-tenants")
    assert one.node_dir != other.node_dir
    assert one.node_dir == SlurmSettings(STATE, port_offset=1000).node_dir
    # What a job's user reads lives there, not in the state directory.
    for path in (one.slurm_conf, one.partitions_conf, one.slurmd_spool_dir, one.node_bin_dir):
        assert path.is_relative_to(one.node_dir)
