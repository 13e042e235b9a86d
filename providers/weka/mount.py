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
    WEKA_MOUNT_STALL_TIMEOUT      seconds without a byte that fail an archive or its unpacking
                                  (default 120)
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from providers.command import (
    CommandResult,
    CommandStream,
    StreamError,
    StreamingTransport,
    TransportSettings,
)
from providers.errors import WekaError

__all__ = ["DirectoryArchive", "DirectoryStat", "MountClient", "mount_client", "normalize_mode"]

# Counted with the REST calls in the benchmark's call log: both are the Weka resources' cost.
BACKEND = "weka"
_UNREACHABLE = (
    "check that the mount host answers (WEKA_MOUNT_TRANSPORT, and for kubectl the pod "
    "WEKA_MOUNT_KUBECTL_TARGET in WEKA_MOUNT_KUBECTL_NAMESPACE), then run again"
)


def mount_client() -> MountClient:
    """A client of the mount host the environment names."""
    env = os.environ
    root = env.get("WEKA_MOUNT_ROOT") or "/mnt/weka"
    try:
        if not posixpath.isabs(root):
            raise ValueError(f"WEKA_MOUNT_ROOT={root!r}: give an absolute path")
        transport = TransportSettings.from_environment(
            env, "WEKA_MOUNT", namespace="weka-system", target="deploy/weka-admin"
        )
    except ValueError as error:
        raise WekaError(
            "reading the Weka mount settings from the environment", str(error)
        ) from None
    return MountClient(transport.make(BACKEND), posixpath.normpath(root))


@dataclass(frozen=True)
class DirectoryStat:
    uid: int
    gid: int
    mode: str  # four octal digits, such as "0700" or "2770"


# The archive, made on the mount host: a gzipped tar with numeric owners, modes, times, sparse
# files as sparse and hard links as links, of one filesystem only. tar writes the name of each
# member to an index file on the host (nothing grows in memory), counted once tar is done; the
# count is the script's last line on stderr.
_ARCHIVE = (
    "set -o pipefail; index=$(mktemp) || exit 1; trap 'rm -f \"$index\"' EXIT; "
    'tar --numeric-owner --sparse --one-file-system --index-file="$index" -v -C "$1" -cf - . '
    '| gzip -c || exit; echo "members $(wc -l <"$index")" >&2'
)
_MEMBERS = re.compile(r"^members (\d+)$", re.MULTILINE)


# The way back: an archive unpacked on the mount host into a staging directory beside its
# directory, cleared first of what an unpacking killed midway left there. Moving it into place is
# a step of its own (`mv -T`), taken once the archive has read back whole: a directory is never
# seen half restored, and `mv -T` refuses to put it over a directory that holds anything.
_UNPACK = (
    'set -e; staging="$1"; rm -rf --one-file-system -- "$staging"; mkdir -- "$staging"; '
    'tar --numeric-owner --same-owner --same-permissions -xzf - -C "$staging"'
)


def normalize_mode(mode: str) -> str:
    """`mode` as four octal digits ("700" -> "0700"); stat prints it without the leading 0."""
    return mode.rjust(4, "0")


class DirectoryArchive:
    """A directory's archive as it streams from the mount host (`MountClient.archive`)."""

    def __init__(self, stream: CommandStream, target: str, doing: str) -> None:
        self._stream = stream
        self._target = target
        self._doing = doing
        self.members: int | None = None  # how many the archive holds, once read to its end

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except StreamError as failed:
            raise self._failed(failed.result.words) from None
        counted = _MEMBERS.findall(self._stream.stderr)
        if not counted:
            raise self._failed(f"it ended without its member count: {self._stream.stderr}")
        self.members = int(counted[-1])

    def _failed(self, words: str) -> WekaError:
        return WekaError(
            self._doing,
            f"the archive of {self._target} on the mount host: {words.strip()}",
            "fix what tar says on the mount host and run `pulumi up` again: the upload was "
            "aborted, nothing was kept",
        )


class MountClient:
    """Makes, reads, changes and removes directories of mounted Weka filesystems. Paths are
    absolute inside their filesystem ("/alice"); commands get them as absolute mount paths, so
    no argument can be read as an option."""

    def __init__(self, transport: StreamingTransport, root: str) -> None:
        self.transport = transport
        self.root = root

    def mount_path(self, org: str, filesystem: str, path: str = "/") -> str:
        return posixpath.normpath(posixpath.join(self.root, org, filesystem, path.lstrip("/")))

    def stat(self, org: str, filesystem: str, path: str, doing: str) -> DirectoryStat | None:
        """The directory's owner and mode, or None if it does not exist (on a filesystem that
        is mounted: a missing mount is an error, never an absent directory)."""
        target = self.mount_path(org, filesystem, path)
        result = self._run(["stat", "--format=%F|%u|%g|%a", target], doing)
        if not result.ok:
            # Only now is the mount itself in question: a host that does not answer, or a
            # filesystem not mounted, is reported as that, never as an absent directory.
            self._require_mount(org, filesystem, doing)
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
        # chown first: changing the owner may clear a setgid bit that chmod then sets. The extra
        # leading 0 makes GNU chmod clear the setgid bit a directory inherits from its parent
        # (a 4-digit mode keeps it on directories).
        self._must(["chown", f"{uid}:{gid}", target], doing)
        self._must(["chmod", f"0{mode}", target], doing)

    def remove_if_empty(self, org: str, filesystem: str, path: str, doing: str) -> bool:
        """rmdir; False (and nothing done) when the directory holds anything."""
        result = self._run(["rmdir", self.mount_path(org, filesystem, path)], doing)
        if result.ok or "No such file or directory" in result.words:
            return True
        if "not empty" in result.words:
            return False
        raise _error(doing, result)

    def files(self, org: str, filesystem: str, path: str, doing: str) -> list[tuple[int, str]]:
        """Every entry under the directory that is not a directory (size in bytes, path below
        it), on its filesystem only; none when the directory does not exist. A filesystem's
        snapshots (`.snapshots` at its root) are not its files."""
        self._require_mount(org, filesystem, doing)
        target = self.mount_path(org, filesystem, path)
        result = self._run(
            ["find", target, "-xdev", "-path", f"{target.rstrip('/')}/.snapshots", "-prune",
             "-o", "!", "-type", "d", "-printf", "%s\\t%P\\0"],
            doing,
        )  # fmt: skip
        if not result.ok:
            if "No such file or directory" in result.words:
                return []
            raise _error(doing, result)
        found = []
        for entry in result.stdout.split("\0")[:-1]:  # NUL-ended: a name may hold a newline
            size, _, name = entry.partition("\t")
            found.append((int(size), name))
        return found

    def remove_with_data(self, org: str, filesystem: str, path: str, doing: str) -> None:
        target = self.mount_path(org, filesystem, path)
        self._must(["rm", "-r", "-f", "--one-file-system", target], doing)

    @contextmanager
    def archive(
        self, org: str, filesystem: str, path: str, doing: str
    ) -> Iterator[DirectoryArchive]:
        """The directory's tree as a gzipped tar, made on the mount host as it is read, for
        offboarding's retained copy of a tenant on shared filesystems: iterate it for its bytes
        (a bounded chunk at a time), then read its `members`. A stall fails it, not its length."""
        target = self.mount_path(org, filesystem, path)
        argv = ["bash", "-c", _ARCHIVE, "bash", target]
        try:
            with self.transport.stream(argv) as stream:
                yield DirectoryArchive(stream, target, doing)
        except StreamError as failed:
            raise _error(doing, failed.result, _UNREACHABLE) from None

    def unpack(
        self,
        org: str,
        filesystem: str,
        path: str,
        archive: Iterable[bytes],
        verify: Callable[[], str | None],
        doing: str,
    ) -> None:
        """Makes the directory at `path` from `archive` (as `archive` made it: owners, modes,
        times, sparse files, hard links), unpacked on the mount host as it streams in; `verify`
        says, once the archive is in, why it cannot be trusted (None when it can), and nothing
        is then put in place. The directory must not exist, or be empty."""
        target = self.mount_path(org, filesystem, path)
        parent, name = posixpath.split(target)
        staging = posixpath.join(parent, f".{name}.restoring")
        result = self.transport.feed(["bash", "-c", _UNPACK, "bash", staging], archive)
        problem = verify() if result.ok else None
        if not result.ok or problem:
            # Best effort: the next unpack clears it too, and the error to tell is the one above.
            self.transport.run(["rm", "-rf", "--one-file-system", "--", staging])
        if result.returncode is None:
            raise _error(doing, result, _UNREACHABLE)
        if not result.ok:
            raise _error(doing, result, "fix what tar says on the mount host, then run again")
        if problem:
            raise WekaError(doing, problem, "nothing was put in place; run `pulumi up` again")
        self._must(["mv", "-T", "--", staging, target], doing)

    def erase_users(
        self, org: str, filesystem: str, path: str, users: Mapping[str, int], doing: str
    ) -> None:
        """Removes each user's files under `path` (`providers.retention.erasure` says which):
        the directory named after them, and whatever else their uid owns (a directory of theirs
        that still holds another user's files stays, for those files)."""
        script = (
            'set -e; top="$1"; shift; while [ "$#" -gt 0 ]; do '
            'rm -rf --one-file-system -- "$top/$1"; '
            'find "$top" -xdev -depth -uid "$2" \\( ! -type d -o -empty \\) -delete; '
            "shift 2; done"
        )
        pairs = [str(item) for user, uid in users.items() for item in (user, uid)]
        target = self.mount_path(org, filesystem, path)
        self._must(["bash", "-c", script, "bash", target, *pairs], doing)

    def _require_mount(self, org: str, filesystem: str, doing: str) -> None:
        mount = self.mount_path(org, filesystem)
        result = self._run(["stat", "--format=%F", mount], doing)
        if result.ok and result.stdout.strip() == "directory":
            return
        if result.ok or "No such file or directory" in result.words:
            raise WekaError(
                doing,
                f"filesystem {filesystem!r} of organization {org!r} is not mounted at {mount}",
                "mount it there on the mount host (WEKA_MOUNT_ROOT/<org>/<filesystem>), or point "
                "WEKA_MOUNT_ROOT or WEKA_MOUNT_TRANSPORT at the host that mounts it, and run "
                "`pulumi up` again",
            )
        raise _error(doing, result, _UNREACHABLE)

    def _run(self, argv: list[str], doing: str) -> CommandResult:
        result = self.transport.run(argv)
        if result.returncode is None:
            raise _error(doing, result, _UNREACHABLE)
        return result

    def _must(self, argv: list[str], doing: str) -> CommandResult:
        result = self._run(argv, doing)
        if not result.ok:
            raise _error(doing, result)
        return result


def _error(doing: str, result: CommandResult, next_step: str = "") -> WekaError:
    return WekaError(doing, f"`{' '.join(result.argv)}`: {result.words}", next_step)
