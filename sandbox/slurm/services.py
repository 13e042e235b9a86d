"""The Slurm sandbox's processes as `Service`s, in start order, and the clients' environment."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path

from sandbox.service import Service
from sandbox.slurm import config, prepare, probes
from sandbox.slurm.commands import binary
from sandbox.slurm.settings import NODE_SCRATCH, SlurmSettings


def client_env(state_dir: Path) -> dict[str, str]:
    """What a Slurm client (sacctmgr, scontrol, sinfo, sacct) needs to reach this sandbox."""
    return {"SLURM_CONF": str(SlurmSettings(state_dir).slurm_conf)}


def slurm_services(state_dir: Path, port_offset: int = 0) -> list[Service]:
    """munged, mariadb, slurmdbd, slurmctld: start in this order, stop in reverse."""
    s = SlurmSettings(state_dir, port_offset)
    env = client_env(state_dir)
    munged = Service(
        name="munged",
        argv=[
            binary("munged"),
            "--foreground",
            # munged insists that every directory above its socket is searchable by all, which
            # ~ (0700) and pytest's tmp dirs are not; the sandbox's clients all run as root, so
            # that check is moot. --force turns it (and the others) into warnings; it would also
            # take over a live socket, which prepare_munge guards against.
            "--force",
            f"--socket={s.munge_socket}",
            f"--key-file={s.munge_key}",
            f"--pid-file={s.run_dir / 'munged.pid'}",
            f"--log-file={s.log_dir / 'munged.log'}",
            f"--seed-file={s.munge_dir / 'munged.seed'}",
        ],
        ready=probes.never_raises(partial(probes.munge_ready, s)),
        cwd=state_dir,
        prepare=partial(prepare.prepare_munge, s),
        ready_timeout=30.0,
    )
    mariadb = Service(
        name="mariadb",
        # --defaults-file must come first; it keeps /etc/mysql (the system server's) out.
        argv=[binary("mariadbd"), f"--defaults-file={s.mariadb_cnf}"],
        ready=probes.never_raises(partial(probes.mariadb_ready, s)),
        ports=[s.mariadb_port],
        cwd=state_dir,
        prepare=partial(prepare.prepare_mariadb, s),
    )
    slurmdbd = Service(
        name="slurmdbd",
        # slurmdbd has no config-file option: it reads slurmdbd.conf beside SLURM_CONF.
        argv=[binary("slurmdbd"), "-D"],
        ready=probes.never_raises(partial(probes.slurmdbd_ready, s)),
        ports=[s.slurmdbd_port],
        env=env,
        cwd=state_dir,
        prepare=partial(prepare.prepare_slurmdbd, s),
    )
    slurmctld = Service(
        name="slurmctld",
        # -i: start even if the saved state is unreadable (e.g. after a SIGKILL mid-write).
        argv=[binary("slurmctld"), "-D", "-i"],
        ready=probes.never_raises(partial(probes.slurmctld_ready, s)),
        ports=[s.slurmctld_port],
        env=env,
        cwd=state_dir,
        prepare=partial(prepare.prepare_slurmctld, s),
        # slurm.conf is rendered at start: a new rendering (an Include, a port) needs a restart.
        revision=lambda: config.slurm_conf(s) + config.gres_conf(s),
    )
    return [munged, mariadb, slurmdbd, slurmctld]


def slurmd_services(state_dir: Path, port_offset: int, scratch: Path) -> list[Service]:
    """One slurmd per node of `SlurmSettings.slurmd_nodes`, each in a mount namespace of its own
    where `scratch` (the Weka emulator's shared scratch filesystem) is mounted at /scratch, as
    the NodeSet's volume mount puts Weka there in a slurmd pod. Start them after slurmctld and
    after the Weka emulator has made its filesystems."""
    s = SlurmSettings(state_dir, port_offset)
    env = client_env(state_dir)
    # unshare execs the shell and the shell execs slurmd: one process, the one recorded.
    node_mount = f'mount --bind {shlex.quote(str(scratch))} {NODE_SCRATCH} && exec "$@"'
    return [
        Service(
            name=f"slurmd-{node}",
            argv=[
                "unshare",
                "--mount",
                "--propagation=private",
                "--",
                "/bin/sh",
                "-c",
                node_mount,
                "slurmd",
                # -N: serve the node named so in slurm.conf, not this host's name.
                *(binary("slurmd"), "-D", "-N", node),
            ],
            ready=probes.never_raises(partial(probes.slurmd_ready, s, node)),
            ports=[port],
            env=env,
            cwd=state_dir,
            prepare=partial(prepare.prepare_slurmd, s, node, scratch),
            revision=lambda: config.slurm_conf(s) + config.gres_conf(s),
        )
        for node, port in s.slurmd_ports.items()
    ]
