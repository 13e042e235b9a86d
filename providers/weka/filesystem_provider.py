"""The dynamic provider of a Weka filesystem, with the delete gate that keeps a tenant's data
until its offboarding snapshot is verified.

Ownership, when create finds the filesystem already there: in a tenant's organization it is
adopted, since the organization is the mark (the stack logs in with the admin password that its
own Organization generated); it must be in the same group, and its capacities are then set as
asked. In Root it is refused: nothing shows whose it is.

Pulumi pickles the provider into the state by module and class name: renaming either breaks
existing stacks (see `provider`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pulumi.dynamic import CheckResult, CreateResult, ReadResult, UpdateResult

from providers.base import Field, Schema, gone
from providers.errors import WekaError
from providers.weka.props import (
    CREDENTIALS,
    CREDENTIALS_GIVEN,
    NAME,
    WekaProvider,
    at_least,
    matching,
    not_above,
    org_client,
    typed,
)
from providers.weka.settings import ROOT_ORG

if TYPE_CHECKING:
    from providers.weka.client import WekaClient
    from providers.weka.records import FileSystem

__all__ = ["FilesystemProvider"]


class FilesystemProvider(WekaProvider):
    """A filesystem in an organization (Root for directory isolation). Its delete is gated: it
    refuses unless `retained_locator` is the locator of this filesystem's snapshot uploaded to
    bucket `object_store` (recorded by the offboarding stage's `up`, read back from the bucket
    then and again at delete: the snapshot itself dies with the filesystem), or unless
    `allow_delete_without_snapshot` is true (a rehearsal that holds no data).

    Created with a `retained_locator` (a tenant restored after its filesystems were deleted, or a
    filesystem deleted behind the stack's back after its snapshot was kept), it is made from that
    upload (`weka fs download`): the data as it was when the snapshot was taken."""

    schema = Schema(
        kind="filesystem",
        fields=(
            # A rename is done in place: the data stays.
            Field("name", matching(NAME, "a Weka filesystem name")),
            *CREDENTIALS,
            Field("group_name", typed(str), "default", replaces=True),
            Field("total_capacity", at_least(1, "must be a positive number of bytes")),
            # 0 = all of total_capacity on SSD (no tiering); check writes it out.
            Field("ssd_capacity", at_least(0, "must be 1 to total_capacity bytes"), 0),
            Field("retained_locator", typed(str), ""),
            Field("object_store", typed(str), ""),
            Field("allow_delete_without_snapshot", typed(bool), False),
        ),
        rules=(
            CREDENTIALS_GIVEN,
            not_above("ssd_capacity", "total_capacity", "must be 1 to total_capacity bytes"),
        ),
    )

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        result = super().check(olds, news)
        inputs, failures = result.inputs, list(result.failures or [])
        total, ssd = inputs.get("total_capacity"), inputs.get("ssd_capacity")
        if ssd == 0 and isinstance(total, int):
            inputs["ssd_capacity"] = total
        return CheckResult(inputs, failures)

    def delete_before_replace(self, replaces: list[str]) -> bool:
        # A name exists once per organization, and the delete gate must speak before a new
        # filesystem is made beside the old one.
        return True

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
        with org_client(inputs) as weka:
            existing = weka.find_filesystem(inputs["name"])
            if existing is None and inputs["retained_locator"]:
                fs = weka.create_filesystem_from_locator(
                    inputs["name"],
                    inputs["group_name"],
                    inputs["total_capacity"],
                    inputs["ssd_capacity"],
                    obs_name=inputs["object_store"],
                    locator=inputs["retained_locator"],
                )
            elif existing is None:
                fs = weka.create_filesystem(
                    inputs["name"],
                    inputs["group_name"],
                    inputs["total_capacity"],
                    inputs["ssd_capacity"],
                )
            else:
                fs = self._adopt(weka, existing, inputs)
        return CreateResult(fs.uid, inputs)

    def _adopt(self, weka: WekaClient, fs: FileSystem, inputs: dict[str, Any]) -> FileSystem:
        org, name = inputs["org"], inputs["name"]
        if org == ROOT_ORG or fs.group_name != inputs["group_name"]:
            where = "the shared Root organization" if org == ROOT_ORG else f"group {fs.group_name}"
            raise WekaError(
                self._doing("creating", inputs),
                f"a filesystem named {name!r} exists already in {where}, and nothing marks it "
                "as this stack's",
                f"if an interrupted `pulumi up` left it and it holds no data, delete it (`weka fs "
                f"delete {name}`) and run `pulumi up` again; otherwise choose another name",
            )
        if (fs.total_capacity, fs.ssd_capacity) == (
            inputs["total_capacity"],
            inputs["ssd_capacity"],
        ):
            return fs
        return weka.update_filesystem(
            fs.uid, name, inputs["total_capacity"], inputs["ssd_capacity"]
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with org_client(props) as weka:
            fs = weka.get_filesystem(id_)
        if fs is None:
            return gone()
        live = {
            "name": fs.name,
            "group_name": fs.group_name,
            "total_capacity": fs.total_capacity,
            "ssd_capacity": fs.ssd_capacity,
        }
        return ReadResult(id_, {**self.schema.recorded(props), **live})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self.schema.recorded(olds), self.schema.recorded(news)
        with org_client(new) as weka:
            locator = new["retained_locator"]
            if locator and locator != old["retained_locator"]:
                # Only a verified locator enters the outputs that the delete gate trusts.
                self._verify_copy(weka, new, self._doing("recording the uploaded snapshot of", new))
            sized = ("name", "total_capacity", "ssd_capacity")
            if any(old[key] != new[key] for key in sized):
                weka.update_filesystem(id_, new["name"], new["total_capacity"], new["ssd_capacity"])
        return UpdateResult(new)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        inputs = self.schema.recorded(props)
        doing = self._doing("deleting", inputs)
        with org_client(inputs) as weka:
            if weka.get_filesystem(id_) is None:
                return
            if not inputs["allow_delete_without_snapshot"]:
                if not inputs["retained_locator"]:
                    raise WekaError(
                        doing,
                        "refused: no uploaded offboarding snapshot is recorded for it, and "
                        "deleting it would destroy the only copy of the tenant's data",
                        "move the tenant to lifecycle stage 'snapshotted' and run `pulumi up`, "
                        "which uploads the snapshot and records its locator here; then destroy "
                        "again",
                    )
                self._verify_copy(weka, inputs, doing)
            weka.delete_filesystem(id_, inputs["name"])

    def _verify_copy(self, weka: WekaClient, inputs: Mapping[str, Any], doing: str) -> None:
        """Refuses unless the bucket still holds an upload of this filesystem at the recorded
        locator: read from the bucket itself, whatever became of the snapshot."""
        locator, bucket = inputs["retained_locator"], inputs["object_store"]
        try:
            info = weka.locator_info(bucket, locator)
        except WekaError as error:
            problem = f"bucket {bucket!r} does not answer for {locator}: {error.backend_says}"
        else:
            if info.fs_name == inputs["name"]:
                return
            problem = f"locator {locator} holds a snapshot of {info.fs_name!r}"
        raise WekaError(
            doing,
            f"refused: {problem}, so nothing keeps this filesystem's data",
            "take and upload the offboarding snapshot again (lifecycle.stage snapshotted, "
            "`pulumi up`), then try again",
        )
