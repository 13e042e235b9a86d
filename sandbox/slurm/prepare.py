"""Idempotent preparation before each daemon starts: directories, keys, configs, the database.

Everything here keeps existing state (munge key, MariaDB datadir, accounting data, the
partitions file) and re-renders only the configuration that the sandbox owns.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from sandbox.slurm import config
from sandbox.slurm.commands import binary, run
from sandbox.slurm.settings import (
    ACCOUNTING_DB,
    ACCOUNTING_DB_USER,
    MAX_SOCKET_PATH,
    NODE_SCRATCH,
    SlurmSettings,
)
from sandbox.supervisor import SandboxError

# The GPU tools a real node has, as stand-ins (their own headers say what each does).
STAND_INS = Path(__file__).with_name("stand_ins")

PARTITIONS_PLACEHOLDER = "# Tenant partitions (runbook step 4d), written by the Slurm provider.\n"


def _mkdir(path: Path, mode: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    # mkdir's mode is filtered by the umask, and an existing directory keeps its old mode.
    path.chmod(mode)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    # Written aside then renamed, so a daemon (or a reconfigure) never reads half a file, and
    # created with its final mode, so a secret is never readable by others even briefly.
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    tmp.chmod(mode)
    os.replace(tmp, path)


def _check_socket(path: Path) -> None:
    if len(str(path)) > MAX_SOCKET_PATH:
        raise SandboxError(
            f"unix socket path {path} is longer than {MAX_SOCKET_PATH} bytes and cannot be "
            "bound; use a shorter sandbox state directory"
        )


def _base_dirs(s: SlurmSettings) -> None:
    _mkdir(s.state_dir, 0o755)
    _mkdir(s.log_dir, 0o755)
    _mkdir(s.run_dir, 0o755)


def _munge_answers(s: SlurmSettings) -> bool:
    result = run([binary("munge"), "-n", f"--socket={s.munge_socket}"], timeout=5)
    return result is not None and result.returncode == 0


def prepare_munge(s: SlurmSettings) -> None:
    _base_dirs(s)
    _check_socket(s.munge_socket)
    # munged refuses a socket directory that others may write to, and clients must be able to
    # reach the socket in it: exactly 0755.
    _mkdir(s.munge_dir, 0o755)
    _mkdir(s.node_dir, 0o755)
    _mkdir(s.munge_socket.parent, 0o755)
    # Only reached when the supervisor's own munged is not running, so an answer here comes
    # from a munged someone else started; munged --force would silently steal its socket.
    if s.munge_socket.exists() and _munge_answers(s):
        raise SandboxError(
            f"another munged already serves {s.munge_socket} (not started by this sandbox's "
            "supervisor); stop it (fuser -v on the socket shows which) and retry"
        )
    if s.munge_key.exists():
        return
    result = run([binary("mungekey"), "--create", f"--keyfile={s.munge_key}"], timeout=30)
    if result is None or result.returncode != 0:
        detail = "" if result is None else result.stderr.strip()
        raise SandboxError(f"mungekey --create failed for {s.munge_key}: {detail}")


def prepare_mariadb(s: SlurmSettings) -> None:
    _base_dirs(s)
    _check_socket(s.mariadb_socket)
    _mkdir(s.mariadb_dir, 0o700)
    _mkdir(s.mariadb_tmpdir, 0o700)
    _write(s.mariadb_cnf, config.mariadb_cnf(s))
    if s.mariadb_datadir.exists():
        return
    # Initialised aside and renamed, so an interrupted install is redone rather than taken for
    # a datadir that holds data.
    staging = s.mariadb_dir / "data.initialising"
    shutil.rmtree(staging, ignore_errors=True)
    result = run(
        [
            binary("mariadb-install-db"),
            f"--defaults-file={s.mariadb_cnf}",
            f"--datadir={staging}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ],
        timeout=180,
    )
    if result is None or result.returncode != 0:
        detail = "(timed out)" if result is None else (result.stdout + result.stderr)[-2000:]
        raise SandboxError(f"mariadb-install-db failed in {staging}: {detail}")
    staging.rename(s.mariadb_datadir)


def _db_password(s: SlurmSettings) -> str:
    # Made once per sandbox and kept: the database user created with it outlives restarts.
    if not s.db_password_file.exists():
        _write(s.db_password_file, secrets.token_hex(16) + "\n", 0o600)
    return s.db_password_file.read_text().strip()


def _create_accounting_db(s: SlurmSettings, password: str) -> None:
    # slurmdbd reaches MariaDB over TCP on 127.0.0.1; skip-name-resolve makes that the host
    # part of the account. ALTER keeps the password in step if the password file was lost.
    user = f"'{ACCOUNTING_DB_USER}'@'127.0.0.1'"
    sql = (
        f"CREATE DATABASE IF NOT EXISTS {ACCOUNTING_DB};"
        f"CREATE USER IF NOT EXISTS {user} IDENTIFIED BY '{password}';"
        f"ALTER USER {user} IDENTIFIED BY '{password}';"
        f"GRANT ALL PRIVILEGES ON {ACCOUNTING_DB}.* TO {user};"
    )
    result = run(
        [binary("mariadb"), f"--defaults-file={s.mariadb_cnf}", "--batch"],
        timeout=30,
        input_text=sql,
    )
    if result is None or result.returncode != 0:
        detail = "(timed out)" if result is None else result.stderr.strip()
        raise SandboxError(
            f"could not create the accounting database in MariaDB ({s.mariadb_cnf}); is the "
            f"mariadb service running? {detail}"
        )


def _slurm_configs(s: SlurmSettings) -> None:
    try:
        _mkdir(s.etc_dir, 0o755)
    except PermissionError as error:
        raise SandboxError(
            f"cannot make the Slurm configuration directory {s.etc_dir} ({error.strerror}); "
            "slurmd runs as root, start the sandbox as root"
        ) from error
    _write(s.slurm_conf, config.slurm_conf(s))
    _write(s.gres_conf, config.gres_conf(s))
    # Owned by the project's Slurm provider once it exists: create, never overwrite. A comment
    # rather than nothing: every Slurm client warns on stderr about an empty included file.
    for partitions in (s.partitions_conf, s.configmap_partitions_conf):
        if not partitions.exists():
            _write(partitions, PARTITIONS_PLACEHOLDER)


def prepare_slurmdbd(s: SlurmSettings) -> None:
    _base_dirs(s)
    _slurm_configs(s)
    _mkdir(s.archive_dir, 0o700)
    password = _db_password(s)
    # slurmdbd refuses a slurmdbd.conf that others may read.
    _write(s.slurmdbd_conf, config.slurmdbd_conf(s, password), 0o600)
    _create_accounting_db(s, password)


def prepare_slurmctld(s: SlurmSettings) -> None:
    _base_dirs(s)
    _slurm_configs(s)
    _mkdir(s.ctld_state_dir, 0o700)


def _gpu_devices(s: SlurmSettings) -> None:
    _mkdir(s.gpu_devices_dir, 0o755)
    for index in range(s.gpus_per_node):
        device = s.gpu_devices_dir / f"nvidia{index}"
        if not device.is_symlink() or os.readlink(device) != os.devnull:
            device.unlink(missing_ok=True)
            device.symlink_to(os.devnull)


def _stand_ins(s: SlurmSettings) -> None:
    # The sandbox's nodes are H100 nodes (Feature=h100 in slurm.conf); the bus bandwidth is what
    # a two-node run of 8x H100 with 8x 400G InfiniBand shows at 4 GiB messages.
    values = {
        "@GPUS_PER_NODE@": str(s.gpus_per_node),
        "@GPU_NAME@": "NVIDIA H100 80GB HBM3",
        "@GPU_MEMORY_MIB@": "81559",
        "@BUSBW_GBPS@": "340",
        "@CGROUP_CONF@": str(s.cgroup_conf),
    }
    _mkdir(s.node_bin_dir, 0o755)
    for source in sorted(STAND_INS.iterdir()):
        text = source.read_text()
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        _write(s.node_bin_dir / source.name, text, 0o755)
    _write(s.task_prolog, config.task_prolog(s), 0o755)
    _write(s.epilog, config.epilog(s), 0o755)
    _mkdir(s.faults_dir, 0o755)
    _write(s.cgroup_conf, config.cgroup_conf())


def prepare_slurmd(s: SlurmSettings, node: str, scratch: Path) -> None:
    _base_dirs(s)
    _slurm_configs(s)
    _gpu_devices(s)
    _stand_ins(s)
    if not scratch.is_dir():
        raise SandboxError(
            f"the shared scratch filesystem {scratch} that slurmd mounts at {NODE_SCRATCH} is "
            "missing: the Weka emulator makes it when it first starts; run `make sandbox-up`"
        )
    # Only the mount point, in the host's tree: the mount itself is in slurmd's namespace, and
    # a /scratch this host already has (a real one) keeps its mode and content.
    NODE_SCRATCH.mkdir(mode=0o755, exist_ok=True)
    _mkdir(s.slurmd_spool_dir / node, 0o755)
    _mkdir(s.node_tmp_dir(node), 0o1777)
