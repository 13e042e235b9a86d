"""The dynamic provider of a quota on a Weka directory (onboarding runbook step 4e), set through
the REST API on the directory's inode.

Ownership, when create finds a quota already on the directory: it is adopted only when the
quota's `owner` field is this resource's `owner` (the tenant's slug), which the provider writes
on every quota it sets.

Pulumi pickles the provider into the state by module and class name: renaming either breaks
existing stacks (see `provider`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Schema, adopting, gone
from providers.errors import WekaError
from providers.weka.props import (
    CREDENTIALS,
    CREDENTIALS_GIVEN,
    WekaProvider,
    at_least,
    not_above,
    org_client,
    typed,
)

if TYPE_CHECKING:
    from providers.weka.client import WekaClient

__all__ = ["DirectoryQuotaProvider"]


def _absolute_path(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute path")
    # As the cluster spells it, so that read's live path diffs clean.
    return "/" + posixpath.normpath(path).lstrip("/")


def _nonempty(meaning: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value == "":
            raise ValueError(meaning)
        return value

    return check


class DirectoryQuotaProvider(WekaProvider):
    """A quota on a directory (/home/alice, /scratch/tenant-foo). The directory must exist:
    the REST API cannot make one (the CSI driver or an operator does, through a mount)."""

    schema = Schema(
        kind="directory quota",
        fields=(
            Field("filesystem_uid", typed(str), replaces=True),
            Field("path", typed(str, _absolute_path), replaces=True),
            *CREDENTIALS,
            Field("hard_limit_bytes", at_least(0, "cannot be negative")),  # 0 = none
            Field("soft_limit_bytes", at_least(0, "cannot be negative")),
            Field("grace_seconds", at_least(0, "cannot be negative"), 0),
            # The ownership mark: the tenant's slug.
            Field("owner", typed(str, _nonempty("is required: it marks the quota as ours"))),
        ),
        identity=("filesystem_uid", "path"),
        rules=(
            CREDENTIALS_GIVEN,
            not_above("soft_limit_bytes", "hard_limit_bytes", "cannot exceed hard_limit_bytes"),
        ),
    )

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        where = f"{props.get('path')} in filesystem {props.get('filesystem_uid')}"
        return f"{what} the Weka quota of {where}"

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
        fs_uid, path, owner = inputs["filesystem_uid"], inputs["path"], inputs["owner"]
        doing = self._doing("setting", inputs)
        with org_client(inputs) as weka:
            if weka.get_filesystem(fs_uid) is None:
                raise WekaError(
                    doing,
                    f"filesystem {fs_uid} does not exist in organization {weka.org!r}",
                    "check filesystem_uid and org (filesystems are seen only from their org)",
                )
            inode = weka.resolve_path(fs_uid, path)
            if inode is None:
                raise WekaError(
                    doing,
                    f"directory {path} does not exist",
                    "Weka's REST API cannot create directories: create it through a mount "
                    "(`mkdir -p` on a host that mounts the filesystem, or let the CSI driver "
                    "create it), then run `pulumi up` again",
                )
            existing = weka.get_quota(fs_uid, inode, path)
            adopted = adopting(props) and existing is not None and not existing.owner
            if existing is not None and existing.owner != owner and not adopted:
                raise WekaError(
                    doing,
                    f"the directory has a quota already, owned by {existing.owner or 'nobody'!r}",
                    "if it is a stale one of this tenant, remove it (`weka fs quota unset`) and "
                    "run `pulumi up` again; otherwise the directory is not this tenant's",
                )
            self._set(weka, inode, inputs)
        return CreateResult(f"{fs_uid}:{inode}", {**inputs, "inode_id": inode})

    def _set(self, weka: WekaClient, inode: str, inputs: Mapping[str, Any]) -> None:
        weka.set_quota(
            inputs["filesystem_uid"],
            inode,
            path=inputs["path"],
            hard_limit_bytes=inputs["hard_limit_bytes"],
            soft_limit_bytes=inputs["soft_limit_bytes"],
            grace_seconds=inputs["grace_seconds"],
            owner=inputs["owner"],
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        fs_uid, _, inode = id_.rpartition(":")
        with org_client(props) as weka:
            quota = weka.get_quota(fs_uid, inode, str(props.get("path", "")))
        if quota is None:
            return gone()
        live = {
            "filesystem_uid": fs_uid,
            "path": quota.path,
            "hard_limit_bytes": quota.hard_limit_bytes,
            "soft_limit_bytes": quota.soft_limit_bytes,
            "grace_seconds": quota.grace_seconds,
            "owner": quota.owner,
            "inode_id": inode,
        }
        return ReadResult(id_, {**self.schema.recorded(props), **live})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        inputs = self.schema.recorded(news)
        inode = id_.rpartition(":")[2]
        with org_client(inputs) as weka:
            self._set(weka, inode, inputs)
        return UpdateResult({**inputs, "inode_id": inode})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        fs_uid, _, inode = id_.rpartition(":")
        with org_client(props) as weka:
            weka.delete_quota(fs_uid, inode, str(props.get("path")))
