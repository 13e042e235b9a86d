"""The dynamic provider of a directory of a Weka filesystem (a tenant's scratch directory, a
user's home), made with its owner and mode through a host that mounts the filesystem (`mount`):
the REST API cannot make directories.

Ownership, when create finds the directory already there: it is adopted only when it already
belongs to the asked uid:gid (the tenant's pinned numbers). The root of a filesystem in a
tenant's own organization is taken over as it is (the organization is the mark).

Restore: a directory made while offboarding's copy of it is recorded (`retained_copy`: a
tenant restored after its destroy, or a directory deleted behind the stack's back after the copy
was kept) is made from that copy, unpacked on the mount host as it streams from the retention
store, and put in place only once the copy has read back as the digest it is marked with. Its
directories and files come back with their owners, modes and times; a directory inside it (a
user's home) is then found there, its owner the mark.

Pulumi pickles the provider into the state by module and class name: renaming either breaks
existing stacks (see `provider`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Rule, Schema, gone
from providers.errors import WekaError
from providers.retention.client import MarkedRead, RetentionStore, holds
from providers.retention.objects import COPIED_PATH
from providers.weka.mount import MountClient, mount_client, normalize_mode
from providers.weka.props import NAME, WekaProvider, matching, typed
from providers.weka.settings import ROOT_ORG

__all__ = ["DirectoryProvider"]

_MODE = re.compile(r"[0-7]{3,4}")
_PATH_PART = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]{0,254}")


def _plain_path(path: str) -> str:
    parts = path.split("/")
    names = [] if path == "/" else parts[1:]
    plain = all(_PATH_PART.fullmatch(p) and p not in (".", "..") for p in names)
    if parts[0] != "" or not plain:
        raise ValueError(f"{path!r} is not an absolute path of plain names (no '..', no '//')")
    return path


def _posix_id(value: int) -> int:
    if not 0 <= value < 2**32 - 1:
        raise ValueError("must be a POSIX id")
    return value


def _mode(mode: str) -> str:
    if not _MODE.fullmatch(mode):
        raise ValueError(f"{mode!r} is not an octal mode like 0750")
    return normalize_mode(mode)


def _restored(mount: MountClient, where: tuple[str, str, str], key: str, doing: str) -> bool:
    """Makes the directory at `where` from the copy at `key`, when the copy is of it; False,
    with nothing done, when the copy is of a directory above it."""
    with RetentionStore.from_environment() as store:
        copy = MarkedRead(store, key)
        if problem := copy.why_not_marked():
            raise WekaError(
                doing,
                f"its retained copy cannot be restored: {problem}",
                "check the copy in the retention store (`gpu-tenants retention "
                "calendar` lists what is kept) and, once it is whole there, run `pulumi up` again",
            )
        if copy.metadata.get(COPIED_PATH) != where[2]:
            return False
        mount.unpack(*where, copy, copy.why_not_whole, doing)
    return True


class DirectoryProvider(WekaProvider):
    """A directory of a filesystem (a tenant's /scratch/tenant-foo, a user's home), made through
    the mount host (`mount`) with its owner and mode. Its owner is the ownership mark: a directory
    found at create is adopted only when it already belongs to `uid`:`gid`. Delete removes an
    empty directory; one that holds data is removed only with `allow_delete_with_data` (the
    rehearsal flag), otherwise delete refuses and says what offboarding does first.

    The root ("/") of a filesystem in a tenant's own organization is taken over as it is (the
    organization is the mark) and left to the filesystem at delete: its data goes only with the
    filesystem, behind the snapshot gate."""

    schema = Schema(
        kind="directory",
        fields=(
            Field("org", typed(str), ROOT_ORG, replaces=True),
            Field("filesystem", matching(NAME, "a Weka filesystem name"), replaces=True),
            Field("path", typed(str, _plain_path), replaces=True),
            Field("uid", typed(int, _posix_id)),
            Field("gid", typed(int, _posix_id)),
            Field("mode", typed(str, _mode), "0750"),
            Field("allow_delete_with_data", typed(bool), False),
            # The retention store key of offboarding's copy of this directory's tree.
            Field("retained_copy", typed(str), ""),
        ),
        identity=("org", "filesystem", "path"),
        rules=(
            Rule(
                ("path", "org"),
                lambda p: (
                    [("path", "the root of a shared filesystem is the platform's, not a tenant's")]
                    if p["path"] == "/" and p["org"] == ROOT_ORG
                    else []
                ),
            ),
        ),
    )

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        where = f"{props.get('path')} of filesystem {props.get('filesystem')!r}"
        return f"{what} the Weka directory {where} (organization {props.get('org')!r})"

    @staticmethod
    def _where(inputs: Mapping[str, Any]) -> tuple[str, str, str]:
        return inputs["org"], inputs["filesystem"], inputs["path"]

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
        doing = self._doing("creating", inputs)
        mount = mount_client()
        where = self._where(inputs)
        owner = (inputs["uid"], inputs["gid"])
        found = mount.stat(*where, doing)
        copy = inputs["retained_copy"]
        if found is None and copy and _restored(mount, where, copy, doing):
            mount.set_owner(*where, *owner, inputs["mode"], doing)
        elif found is None:
            mount.make(*where, *owner, inputs["mode"], doing)
        elif inputs["path"] == "/":
            mount.set_owner(*where, *owner, inputs["mode"], doing)
        elif (found.uid, found.gid) != owner:
            raise WekaError(
                doing,
                f"it exists already, owned by {found.uid}:{found.gid}, not by this tenant's "
                f"{owner[0]}:{owner[1]}",
                f"if an interrupted `pulumi up` of this tenant made it, `chown {owner[0]}:"
                f"{owner[1]} {mount.mount_path(*where)}` on the mount host and run `pulumi up` "
                "again; otherwise it is not this tenant's: choose another path",
            )
        elif found.mode != inputs["mode"]:
            mount.set_owner(*where, *owner, inputs["mode"], doing)
        return CreateResult(f"{inputs['org']}/{inputs['filesystem']}{inputs['path']}", inputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        inputs = self.schema.recorded(props)
        found = mount_client().stat(*self._where(inputs), self._doing("reading", inputs))
        if found is None:
            return gone()
        return ReadResult(id_, {**inputs, "uid": found.uid, "gid": found.gid, "mode": found.mode})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        inputs = self.schema.recorded(news)
        mount_client().set_owner(
            *self._where(inputs),
            inputs["uid"],
            inputs["gid"],
            inputs["mode"],
            self._doing("updating", inputs),
        )
        return UpdateResult(inputs)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        inputs = self.schema.recorded(props)
        doing = self._doing("deleting", inputs)
        mount = mount_client()
        where = self._where(inputs)
        if inputs["path"] == "/" or mount.remove_if_empty(*where, doing):
            return
        copy = inputs["retained_copy"]
        missing = None if inputs["allow_delete_with_data"] else holds(copy) if copy else "none"
        if missing:
            raise WekaError(
                doing,
                f"refused: it holds the tenant's data, and {missing}",
                "offboarding keeps a copy first (lifecycle.stage snapshotted, then `pulumi up`), "
                "then destroy deletes it; a rehearsal that holds no data says lifecycle.rehearsal",
            )
        mount.remove_with_data(*where, doing)
