"""Directories on Weka filesystems, made through a mount. Weka's REST API cannot create a
directory (the CSI driver and operators mkdir through a wekafs mount), so the tenant's home and
scratch directories are made the way an operator makes them: `mkdir`, `chown` and `chmod` run as
argv commands on a host, or in a pod, that mounts the cluster's filesystems, each filesystem F of
organization O at `<root>/O/F` (an automount on the operator host, a mount in the pod).

Read from the environment at call time, like the REST settings (`settings`):

    WEKA_MOUNT_TRANSPORT          `local` (default): run the commands on this host;
                                  `kubectl`: run them in a pod with `kubectl exec`
    WEKA_MOUNT_ROOT               where the filesystems are mounted (default /mnt/weka)
    WEKA_MOUNT_KUBECTL_NAMESPACE  kubectl transport: the pod's namespace (default weka-system)
    WEKA_MOUNT_KUBECTL_TARGET     kubectl transport: what to exec into (default deploy/weka-admin)
    WEKA_MOUNT_TIMEOUT            seconds to wait for one command (default 20)
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from providers.command import CommandResult, KubectlExecTransport, LocalTransport, Transport
from tenant_stack.errors import WekaError

__all__ = ["DirectoryStat", "MountClient", "MountSettings"]

BACKEND = "weka-mount"
_DOING = "reading the Weka mount settings from the environment"


@dataclass(frozen=True, kw_only=True)
class MountSettings:
    transport: str = "local"
    root: str = "/mnt/weka"
    kubectl_namespace: str = "weka-system"
    kubectl_target: str = "deploy/weka-admin"
    timeout: float = 20.0

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> MountSettings:
        env = os.environ if env is None else env
        transport = env.get("WEKA_MOUNT_TRANSPORT") or "local"
        if transport not in ("local", "kubectl"):
            raise WekaError(
                _DOING, f"WEKA_MOUNT_TRANSPORT={transport!r}", "set it to 'local' or 'kubectl'"
            )
        root = env.get("WEKA_MOUNT_ROOT") or "/mnt/weka"
        if not posixpath.isabs(root):
            raise WekaError(_DOING, f"WEKA_MOUNT_ROOT={root!r} is not absolute", "give a path")
        raw_timeout = env.get("WEKA_MOUNT_TIMEOUT") or "20"
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = 0.0
        if not timeout > 0:
            raise WekaError(
                _DOING, f"WEKA_MOUNT_TIMEOUT={raw_timeout!r}", "give seconds, such as 20"
            )
        return cls(
            transport=transport,
            root=posixpath.normpath(root),
            kubectl_namespace=env.get("WEKA_MOUNT_KUBECTL_NAMESPACE") or "weka-system",
            kubectl_target=env.get("WEKA_MOUNT_KUBECTL_TARGET") or "deploy/weka-admin",
            timeout=timeout,
        )

    def make_transport(self) -> Transport:
        if self.transport == "kubectl":
            return KubectlExecTransport(
                backend=BACKEND,
                timeout=self.timeout,
                namespace=self.kubectl_namespace,
                target=self.kubectl_target,
            )
        return LocalTransport(backend=BACKEND, timeout=self.timeout)


@dataclass(frozen=True)
class DirectoryStat:
    uid: int
    gid: int
    mode: str  # four octal digits, such as "0700" or "2770"


def normalize_mode(mode: str) -> str:
    """`mode` as four octal digits ("700" -> "0700"); stat prints it without the leading 0."""
    return mode.rjust(4, "0")


class MountClient:
    """Makes, reads, changes and removes directories of mounted Weka filesystems. Paths are
    absolute inside their filesystem ("/alice"); commands get them as absolute mount paths, so
    no argument can be read as an option."""

    def __init__(self, transport: Transport, root: str) -> None:
        self.transport = transport
        self.root = root

    @classmethod
    def from_environment(cls) -> MountClient:
        settings = MountSettings.from_environment()
        return cls(settings.make_transport(), settings.root)

    def mount_path(self, org: str, filesystem: str, path: str = "/") -> str:
        return posixpath.normpath(posixpath.join(self.root, org, filesystem, path.lstrip("/")))

    def stat(self, org: str, filesystem: str, path: str, doing: str) -> DirectoryStat | None:
        """The directory's owner and mode, or None if it does not exist."""
        self._require_mount(org, filesystem, doing)
        target = self.mount_path(org, filesystem, path)
        result = self._run(["stat", "--format=%F|%u|%g|%a", target], doing)
        if not result.ok:
            if "No such file or directory" in result.words:
                return None
            raise _error(doing, result)
        kind, uid, gid, mode = result.stdout.strip().split("|")
        if kind != "directory":
            raise WekaError(
                doing,
                f"{target} is a {kind}, not a directory",
                "move it out of the way on the mount host and run `pulumi up` again",
            )
        return DirectoryStat(int(uid), int(gid), normalize_mode(mode))

    def make(
        self, org: str, filesystem: str, path: str, uid: int, gid: int, mode: str, doing: str
    ) -> None:
        """mkdir (the parent must exist), then owner and mode."""
        target = self.mount_path(org, filesystem, path)
        result = self._run(["mkdir", target], doing)
        if not result.ok:
            raise _error(
                doing, result, "its parent directory must exist: check the path and the mount"
            )
        self.set_owner(org, filesystem, path, uid, gid, mode, doing)

    def set_owner(
        self, org: str, filesystem: str, path: str, uid: int, gid: int, mode: str, doing: str
    ) -> None:
        target = self.mount_path(org, filesystem, path)
        # chown first: changing the owner may clear a setgid bit that chmod then sets.
        self._must(["chown", f"{uid}:{gid}", target], doing)
        self._must(["chmod", mode, target], doing)

    def remove_if_empty(self, org: str, filesystem: str, path: str, doing: str) -> bool:
        """rmdir; False (and nothing done) when the directory holds anything."""
        result = self._run(["rmdir", self.mount_path(org, filesystem, path)], doing)
        if result.ok or "No such file or directory" in result.words:
            return True
        if "not empty" in result.words:
            return False
        raise _error(doing, result)

    def remove_with_data(self, org: str, filesystem: str, path: str, doing: str) -> None:
        target = self.mount_path(org, filesystem, path)
        self._must(["rm", "-r", "-f", "--one-file-system", target], doing)

    def _require_mount(self, org: str, filesystem: str, doing: str) -> None:
        mount = self.mount_path(org, filesystem)
        result = self._run(["stat", "--format=%F", mount], doing)
        if not result.ok or result.stdout.strip() != "directory":
            raise WekaError(
                doing,
                f"filesystem {filesystem!r} of organization {org!r} is not mounted at {mount} "
                f"({result.words})",
                "mount it there on the mount host (WEKA_MOUNT_ROOT/<org>/<filesystem>), or point "
                "WEKA_MOUNT_ROOT or WEKA_MOUNT_TRANSPORT at the host that mounts it, and run "
                "`pulumi up` again",
            )

    def _run(self, argv: list[str], doing: str) -> CommandResult:
        result = self.transport.run(argv)
        if result.returncode is None:
            raise _error(doing, result, "check that the mount host answers, then run again")
        return result

    def _must(self, argv: list[str], doing: str) -> CommandResult:
        result = self._run(argv, doing)
        if not result.ok:
            raise _error(doing, result)
        return result


def _error(doing: str, result: CommandResult, next_step: str = "") -> WekaError:
    return WekaError(doing, f"`{' '.join(result.argv)}`: {result.words}", next_step)
