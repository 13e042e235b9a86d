"""Dynamic providers of the Weka resources: the onboarding runbook's steps 4e and 6 and the
offboarding runbook's step 4, one provider per kind of object.

The providers hold no data at all: Pulumi pickles them into the state. Each call reads the
cluster's address and cluster-admin login from the environment (`settings`) and, for objects in
a tenant's organization, logs in as that organization's admin with the credentials the resource
was given as (secret) inputs, which Pulumi keeps in its outputs encrypted, so that `refresh` and
`destroy` work from the state alone.

Outputs repeat every input (numbers as ints) beside what the cluster computed, because the
engine diffs the old outputs against the new inputs: that makes `preview --expect-no-changes`
pass right after `up`, and makes a change made behind Pulumi's back (read from the live cluster)
show as a diff that `up` reverts.

Ownership, when create finds the object already there (an interrupted `up`, or someone else's):
- Organization: adopted only when its admin `<name>-admin` logs in with the password this
  provider derives for it (`_org_admin_password`), which only a create of this provider, with this
  cluster's admin credential, can have set. Weka organizations carry no metadata to mark them;
  that login is the mark. Otherwise refused, and the error says how to clear it.
- Filesystem and OrgUser in a tenant's organization: adopted. The organization is the mark: the
  stack logs in with the admin password that its own Organization generated. The filesystem must
  be in the same group (its capacities are then set as asked); the user gets the asked role and
  a new password.
- Filesystem and OrgUser in Root: refused; nothing shows whose they are.
- Directory: adopted only when it already belongs to the asked uid:gid (the tenant's pinned
  numbers); directories are made through a mount (`mount`), not the REST API.
- DirectoryQuota: adopted only when the quota's `owner` field is this resource's `owner` (the
  tenant's slug), which the provider writes on every quota it sets.
Python dynamic resources cannot be imported (pulumi/pulumi#16175), hence the rules above.
"""

from __future__ import annotations

import hmac
import posixpath
import re
import secrets
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from providers.errors import WekaError
from providers.weka.client import ROOT_ORG, Credentials, FileSystem, WekaClient
from providers.weka.mount import mount_client, normalize_mode
from providers.weka.settings import Settings

__all__ = [
    "DirectoryProvider",
    "DirectoryQuotaProvider",
    "FilesystemProvider",
    "OrgUserProvider",
    "OrganizationProvider",
]

ORG_USER_ROLES = ("CSI", "OrgAdmin", "Regular")
_SLUG = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_REQUIRED: Any = object()


@dataclass(frozen=True)
class _Field:
    """One input: its type, its default (or required), whether changing it replaces, and
    whether it is only a login (a change is recorded, the object itself stays as it is)."""

    name: str
    kind: type[Any]
    default: Any = _REQUIRED
    replaces: bool = False
    login: bool = False


# Where the object lives, and how to log in there: Root means the cluster admin of `settings`.
_CREDENTIALS = (
    _Field("org", str, ROOT_ORG, replaces=True),
    _Field("org_admin_username", str, "", login=True),
    _Field("org_admin_password", str, "", login=True),
)


def _coerce(value: Any, kind: type[Any]) -> Any:
    """`value` as `kind`, or None when it is not one. Numbers cross the engine as floats."""
    if kind is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return value if isinstance(value, kind) else None


def _known(*values: Any) -> bool:
    """False while a preview does not know a value yet (an output of a resource not made or
    not updated yet). The engine's glue hands check and diff `Unknown` objects; the sentinel
    string is what such a value is on the wire."""
    return not any(isinstance(value, Unknown) or value == UNKNOWN for value in values)


class _WekaProvider(ResourceProvider):
    """Check and diff from the `fields` table; each subclass adds its rules and its calls."""

    fields: ClassVar[tuple[_Field, ...]]
    kind: ClassVar[str]
    # True where a replacement must remove the old object before making the new one.
    delete_before_replace: ClassVar[bool] = False

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        inputs: dict[str, Any] = {}
        failures: list[CheckFailure] = []
        for field in self.fields:
            value = news.get(field.name, field.default)
            if value is _REQUIRED:
                failures.append(CheckFailure(field.name, f"{field.name} is required"))
            elif not _known(value):
                inputs[field.name] = value
            elif (coerced := _coerce(value, field.kind)) is None:
                # The type only, never the value: it may be a password.
                reason = f"must be {field.kind.__name__}, not {type(value).__name__}"
                failures.append(CheckFailure(field.name, reason))
            else:
                inputs[field.name] = coerced
        if not failures:
            failures = self._rules(inputs, creating=not _olds)
        return CheckResult(inputs, failures)

    def _rules(self, inputs: dict[str, Any], *, creating: bool) -> list[CheckFailure]:
        """The resource's own checks of the typed `inputs`, which it may normalize in place."""
        return []

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [field.name for field in self.fields if self._changed(field, olds, news)]
        replaces = [f.name for f in self.fields if f.replaces and f.name in changed]
        return DiffResult(
            changes=bool(changed),
            replaces=replaces,
            delete_before_replace=self.delete_before_replace if replaces else None,
        )

    @staticmethod
    def _changed(field: _Field, olds: Mapping[str, Any], news: Mapping[str, Any]) -> bool:
        new = news.get(field.name, field.default)
        if not _known(new):
            # A preview does not know the organization's credentials while the organization is
            # being updated; they stay the same, and `up` diffs again with them known.
            return not field.login
        old = _coerce(olds.get(field.name, field.default), field.kind)
        return bool(old != _coerce(new, field.kind))

    def _inputs(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """The inputs recorded in `props` (inputs or old outputs), typed, defaults filled."""
        return {f.name: _coerce(props.get(f.name, f.default), f.kind) for f in self.fields}

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        name = props.get("name") or props.get("username") or ""
        where = f" in organization {props['org']!r}" if "org" in props else ""
        return f"{what} Weka {self.kind} {name!r}{where}"


def _gone() -> ReadResult:
    """What read answers for an object that no longer exists: an empty id (and a fresh dict,
    which the engine's glue writes into)."""
    return ReadResult("", {})


def _credential_rules(inputs: Mapping[str, Any]) -> list[CheckFailure]:
    org = inputs["org"]
    if not _known(org) or org == ROOT_ORG:
        return []
    return [
        CheckFailure(key, f"{key} is required for objects in organization {org!r}")
        for key in ("org_admin_username", "org_admin_password")
        if inputs[key] == ""
    ]


def _client(props: Mapping[str, Any]) -> WekaClient:
    """A client of the organization the object lives in, built for this one call."""
    settings = Settings.from_environment()
    org = str(props.get("org") or ROOT_ORG)
    if org == ROOT_ORG:
        return WekaClient.from_settings(settings)
    login = Credentials(str(props["org_admin_username"]), str(props["org_admin_password"]), org)
    return WekaClient.from_settings(settings, login)


def _new_password() -> str:
    """24 letters and digits, with each kind Weka's password rule asks for."""
    alphabet = string.ascii_letters + string.digits
    while True:
        candidate = "".join(secrets.choice(alphabet) for _ in range(24))
        if (
            any(c.isupper() for c in candidate)
            and any(c.islower() for c in candidate)
            and any(c.isdigit() for c in candidate)
        ):
            return candidate


# --- organization ---------------------------------------------------------------------------


def _org_admin_password(cluster_admin_password: str, org: str) -> str:
    """The password of organization `org`'s admin: an HMAC of the org's name keyed with the
    cluster admin's password, so that a create lost with its run can be recognized and taken over
    by the next one. Only a holder of the cluster admin credential can compute it."""
    digest = hmac.new(
        cluster_admin_password.encode(), f"gpu-tenants weka org admin {org}".encode(), "sha256"
    ).digest()
    alphabet = string.ascii_letters + string.digits
    # One upper, one lower and one digit first, for Weka's password rule.
    return "Aa1" + "".join(alphabet[byte % len(alphabet)] for byte in digest[:21])


class OrganizationProvider(_WekaProvider):
    """A Weka organization (strict isolation) and its admin user `<name>-admin`, whose password
    (`_org_admin_password`) is returned as the secret output `admin_password`."""

    kind = "organization"
    fields = (
        _Field("name", str),  # renamed in place, so that drift is put back without a replace
        _Field("ssd_quota", int, 0),  # bytes; 0 = unlimited
        _Field("total_quota", int, 0),
    )

    def _rules(self, inputs: dict[str, Any], *, creating: bool) -> list[CheckFailure]:
        failures = []
        name, ssd, total = inputs["name"], inputs["ssd_quota"], inputs["total_quota"]
        if _known(name) and not _SLUG.fullmatch(name):
            failures.append(CheckFailure("name", f"{name!r} is not a tenant slug (a DNS label)"))
        for key in ("ssd_quota", "total_quota"):
            if _known(inputs[key]) and inputs[key] < 0:
                failures.append(CheckFailure(key, "must be 0 (unlimited) or more bytes"))
        if _known(ssd, total) and ssd > 0 and 0 < total < ssd:
            failures.append(CheckFailure("ssd_quota", "cannot exceed total_quota"))
        return failures

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self._inputs(props)
        name = inputs["name"]
        admin = f"{name}-admin"
        settings = Settings.from_environment()
        password = _org_admin_password(settings.password, name)
        with WekaClient.from_settings(settings) as weka:
            existing = weka.find_organization(name)
            if existing is None:
                org = weka.create_organization(
                    name, admin, password, inputs["ssd_quota"], inputs["total_quota"]
                )
            else:
                self._require_ours(settings, Credentials(admin, password, name), inputs)
                org = weka.set_organization_limits(
                    existing.uid, inputs["ssd_quota"], inputs["total_quota"]
                )
        return CreateResult(
            org.uid, {**inputs, "admin_username": admin, "admin_password": password}
        )

    def _require_ours(
        self, settings: Settings, admin: Credentials, inputs: Mapping[str, Any]
    ) -> None:
        """Refuses an existing organization unless its admin takes our derived password."""
        with WekaClient.from_settings(settings, admin) as org_admin:
            if org_admin.logs_in():
                return
        name = inputs["name"]
        raise WekaError(
            self._doing("creating", inputs),
            f"an organization named {name!r} exists already, and it is not one that an "
            f"interrupted `pulumi up` of this stack left: its admin {admin.username!r} does not "
            "take the password this stack derives for it",
            f"if it is a leftover that `weka org` shows without filesystems, delete it (`weka "
            f"org delete {name}`) and run `pulumi up` again; otherwise the slug is taken: ask the "
            "platform team",
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with _client({}) as weka:
            org = weka.get_organization(id_)
        if org is None:
            return _gone()
        live = {"name": org.name, "ssd_quota": org.ssd_quota, "total_quota": org.total_quota}
        return ReadResult(id_, {**self._inputs(props), **live, **self._admin(props)})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self._inputs(olds), self._inputs(news)
        with _client({}) as weka:
            if old["name"] != new["name"]:
                weka.rename_organization(id_, new["name"])
            if (old["ssd_quota"], old["total_quota"]) != (new["ssd_quota"], new["total_quota"]):
                weka.set_organization_limits(id_, new["ssd_quota"], new["total_quota"])
        return UpdateResult({**new, **self._admin(olds)})

    @staticmethod
    def _admin(props: Mapping[str, Any]) -> dict[str, Any]:
        """The computed outputs, which only create can know."""
        return {key: props[key] for key in ("admin_username", "admin_password")}

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        with _client({}) as weka:
            weka.delete_organization(id_, str(props.get("name")))


# --- filesystem -----------------------------------------------------------------------------


class FilesystemProvider(_WekaProvider):
    """A filesystem in an organization (Root for directory isolation). Its delete is gated: it
    refuses unless `retained_snapshot_id` names a snapshot of this filesystem that still exists
    (recorded by the offboarding stage's `up`, verified then and again at delete), or unless
    `allow_delete_without_snapshot` is true (rollback of a fresh tenant's onboarding)."""

    kind = "filesystem"
    # A name exists once per organization, and the delete gate must speak before a new
    # filesystem is made beside the old one.
    delete_before_replace = True
    fields = (
        _Field("name", str),  # a rename is done in place: the data stays
        *_CREDENTIALS,
        _Field("group_name", str, "default", replaces=True),
        _Field("total_capacity", int),
        _Field("ssd_capacity", int, 0),  # 0 = all of total_capacity on SSD (no tiering)
        _Field("retained_snapshot_id", str, ""),
        _Field("allow_delete_without_snapshot", bool, False),
    )

    def _rules(self, inputs: dict[str, Any], *, creating: bool) -> list[CheckFailure]:
        failures = _credential_rules(inputs)
        name, total, ssd = inputs["name"], inputs["total_capacity"], inputs["ssd_capacity"]
        if _known(name) and not _NAME.fullmatch(name):
            failures.append(CheckFailure("name", f"{name!r} is not a Weka filesystem name"))
        if _known(total) and total <= 0:
            failures.append(CheckFailure("total_capacity", "must be a positive number of bytes"))
        if _known(total, ssd):
            if ssd == 0:
                inputs["ssd_capacity"] = total
            elif not 0 < ssd <= total:
                failures.append(CheckFailure("ssd_capacity", "must be 1 to total_capacity bytes"))
        snapshot = inputs["retained_snapshot_id"]
        if creating and _known(snapshot) and snapshot != "":
            reason = "a filesystem being created has no snapshot yet: leave it empty"
            failures.append(CheckFailure("retained_snapshot_id", reason))
        return failures

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self._inputs(props)
        with _client(inputs) as weka:
            existing = weka.find_filesystem(inputs["name"])
            if existing is None:
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
        with _client(props) as weka:
            fs = weka.get_filesystem(id_)
        if fs is None:
            return _gone()
        live = {
            "name": fs.name,
            "group_name": fs.group_name,
            "total_capacity": fs.total_capacity,
            "ssd_capacity": fs.ssd_capacity,
        }
        return ReadResult(id_, {**self._inputs(props), **live})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self._inputs(olds), self._inputs(news)
        with _client(new) as weka:
            snapshot = new["retained_snapshot_id"]
            if snapshot and snapshot != old["retained_snapshot_id"]:
                # Only a verified id enters the outputs that the delete gate trusts.
                self._verify_snapshot(weka, id_, new, self._doing("recording a snapshot of", new))
            sized = ("name", "total_capacity", "ssd_capacity")
            if any(old[key] != new[key] for key in sized):
                weka.update_filesystem(id_, new["name"], new["total_capacity"], new["ssd_capacity"])
        return UpdateResult(new)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        inputs = self._inputs(props)
        doing = self._doing("deleting", inputs)
        with _client(inputs) as weka:
            if weka.get_filesystem(id_) is None:
                return
            if not inputs["allow_delete_without_snapshot"]:
                if not inputs["retained_snapshot_id"]:
                    raise WekaError(
                        doing,
                        "refused: no verified offboarding snapshot is recorded for it, and "
                        "deleting it would destroy the only copy of the tenant's data",
                        "move the tenant to lifecycle stage 'snapshotted' and run `pulumi up`, "
                        "which records the verified snapshot's id here; then destroy again",
                    )
                self._verify_snapshot(weka, id_, inputs, doing)
            weka.delete_filesystem(id_, inputs["name"])

    def _verify_snapshot(
        self, weka: WekaClient, fs_uid: str, inputs: Mapping[str, Any], doing: str
    ) -> None:
        snapshot_id = inputs["retained_snapshot_id"]
        snapshot = weka.get_snapshot(snapshot_id)
        if snapshot is None:
            problem = f"snapshot {snapshot_id} does not exist in organization {weka.org!r}"
        elif snapshot.filesystem_uid != fs_uid:
            problem = f"snapshot {snapshot.name!r} is of filesystem {snapshot.filesystem_uid}"
        elif snapshot.is_removing:
            problem = f"snapshot {snapshot.name!r} is being removed"
        else:
            return
        raise WekaError(
            doing,
            f"refused: {problem}, so it does not keep this filesystem's data",
            "take and verify the offboarding snapshot of this filesystem (stage 'snapshotted'), "
            "record its id with `pulumi up`, then try again",
        )


# --- directory quota ------------------------------------------------------------------------


class DirectoryQuotaProvider(_WekaProvider):
    """A quota on a directory (/home/alice, /scratch/tenant-foo). The directory must exist:
    the REST API cannot make one (the CSI driver or an operator does, through a mount)."""

    kind = "directory quota"
    fields = (
        _Field("filesystem_uid", str, replaces=True),
        _Field("path", str, replaces=True),
        *_CREDENTIALS,
        _Field("hard_limit_bytes", int),  # 0 = none
        _Field("soft_limit_bytes", int),
        _Field("grace_seconds", int, 0),
        _Field("owner", str),  # the ownership mark: the tenant's slug
    )

    def _rules(self, inputs: dict[str, Any], *, creating: bool) -> list[CheckFailure]:
        failures = _credential_rules(inputs)
        path = inputs["path"]
        if _known(path):
            if not path.startswith("/"):
                failures.append(CheckFailure("path", f"{path!r} is not an absolute path"))
            else:  # as the cluster spells it, so that read's live path diffs clean
                inputs["path"] = "/" + posixpath.normpath(path).lstrip("/")
        hard, soft = inputs["hard_limit_bytes"], inputs["soft_limit_bytes"]
        for key in ("hard_limit_bytes", "soft_limit_bytes", "grace_seconds"):
            if _known(inputs[key]) and inputs[key] < 0:
                failures.append(CheckFailure(key, "cannot be negative"))
        if _known(hard, soft) and 0 < hard < soft:
            failures.append(CheckFailure("soft_limit_bytes", "cannot exceed hard_limit_bytes"))
        if inputs["owner"] == "":
            failures.append(CheckFailure("owner", "is required: it marks the quota as ours"))
        return failures

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        where = f"{props.get('path')} in filesystem {props.get('filesystem_uid')}"
        return f"{what} the Weka quota of {where}"

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self._inputs(props)
        fs_uid, path, owner = inputs["filesystem_uid"], inputs["path"], inputs["owner"]
        doing = self._doing("setting", inputs)
        with _client(inputs) as weka:
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
            existing = weka.get_quota(fs_uid, inode)
            if existing is not None and existing.owner != owner:
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
        with _client(props) as weka:
            quota = weka.get_quota(fs_uid, inode)
        if quota is None:
            return _gone()
        live = {
            "filesystem_uid": fs_uid,
            "path": quota.path,
            "hard_limit_bytes": quota.hard_limit_bytes,
            "soft_limit_bytes": quota.soft_limit_bytes,
            "grace_seconds": quota.grace_seconds,
            "owner": quota.owner,
            "inode_id": inode,
        }
        return ReadResult(id_, {**self._inputs(props), **live})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        inputs = self._inputs(news)
        inode = id_.rpartition(":")[2]
        with _client(inputs) as weka:
            self._set(weka, inode, inputs)
        return UpdateResult({**inputs, "inode_id": inode})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        fs_uid, _, inode = id_.rpartition(":")
        with _client(props) as weka:
            weka.delete_quota(fs_uid, inode, str(props.get("path")))


# --- directory ------------------------------------------------------------------------------

_MODE = re.compile(r"[0-7]{3,4}")
_PATH_PART = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]{0,254}")


class DirectoryProvider(_WekaProvider):
    """A directory of a filesystem (a tenant's /scratch/tenant-foo, a user's home), made through
    the mount host (`mount`) with its owner and mode. Its owner is the ownership mark: a directory
    found at create is adopted only when it already belongs to `uid`:`gid`. Delete removes an
    empty directory; one that holds data is removed only with `allow_delete_with_data` (the
    rehearsal flag), otherwise delete refuses and says what offboarding does first.

    The root ("/") of a filesystem in a tenant's own organization is taken over as it is (the
    organization is the mark) and left to the filesystem at delete: its data goes only with the
    filesystem, behind the snapshot gate."""

    kind = "directory"
    fields = (
        _Field("org", str, ROOT_ORG, replaces=True),
        _Field("filesystem", str, replaces=True),
        _Field("path", str, replaces=True),
        _Field("uid", int),
        _Field("gid", int),
        _Field("mode", str, "0750"),
        _Field("allow_delete_with_data", bool, False),
    )

    def _rules(self, inputs: dict[str, Any], *, creating: bool) -> list[CheckFailure]:
        failures = []
        path, mode = inputs["path"], inputs["mode"]
        if _known(path):
            parts = path.split("/")
            names = [] if path == "/" else parts[1:]
            plain = all(_PATH_PART.fullmatch(p) and p not in (".", "..") for p in names)
            if parts[0] != "" or not plain:
                reason = f"{path!r} is not an absolute path of plain names (no '..', no '//')"
                failures.append(CheckFailure("path", reason))
            elif path == "/" and inputs["org"] == ROOT_ORG:
                reason = "the root of a shared filesystem is the platform's, not a tenant's"
                failures.append(CheckFailure("path", reason))
        if _known(inputs["filesystem"]) and not _NAME.fullmatch(inputs["filesystem"]):
            reason = f"{inputs['filesystem']!r} is not a Weka filesystem name"
            failures.append(CheckFailure("filesystem", reason))
        for key in ("uid", "gid"):
            if _known(inputs[key]) and not 0 <= inputs[key] < 2**32 - 1:
                failures.append(CheckFailure(key, "must be a POSIX id"))
        if _known(mode):
            if _MODE.fullmatch(mode):
                inputs["mode"] = normalize_mode(mode)
            else:
                failures.append(CheckFailure("mode", f"{mode!r} is not an octal mode like 0750"))
        return failures

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        where = f"{props.get('path')} of filesystem {props.get('filesystem')!r}"
        return f"{what} the Weka directory {where} (organization {props.get('org')!r})"

    @staticmethod
    def _where(inputs: Mapping[str, Any]) -> tuple[str, str, str]:
        return inputs["org"], inputs["filesystem"], inputs["path"]

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self._inputs(props)
        doing = self._doing("creating", inputs)
        mount = mount_client()
        where = self._where(inputs)
        owner = (inputs["uid"], inputs["gid"])
        found = mount.stat(*where, doing)
        if found is None:
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
        inputs = self._inputs(props)
        found = mount_client().stat(*self._where(inputs), self._doing("reading", inputs))
        if found is None:
            return _gone()
        return ReadResult(id_, {**inputs, "uid": found.uid, "gid": found.gid, "mode": found.mode})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        inputs = self._inputs(news)
        mount_client().set_owner(
            *self._where(inputs),
            inputs["uid"],
            inputs["gid"],
            inputs["mode"],
            self._doing("updating", inputs),
        )
        return UpdateResult(inputs)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        inputs = self._inputs(props)
        doing = self._doing("deleting", inputs)
        mount = mount_client()
        where = self._where(inputs)
        if inputs["path"] == "/" or mount.remove_if_empty(*where, doing):
            return
        if not inputs["allow_delete_with_data"]:
            raise WekaError(
                doing,
                "refused: it holds the tenant's data",
                "offboarding snapshots the data first (runbook step 4), then empties the "
                f"directory ({mount.mount_path(*where)} on the mount host); destroy again after "
                "that, or mark a rehearsal with storage.delete_without_snapshot",
            )
        mount.remove_with_data(*where, doing)


# --- organization user ----------------------------------------------------------------------


class OrgUserProvider(_WekaProvider):
    """A local user of an organization, such as the CSI driver's (role CSI). Its password is
    generated at create and returned as the secret output `password`."""

    kind = "user"
    fields = (
        _Field("username", str, replaces=True),
        *_CREDENTIALS,
        _Field("role", str),
    )

    def _rules(self, inputs: dict[str, Any], *, creating: bool) -> list[CheckFailure]:
        failures = _credential_rules(inputs)
        username, role = inputs["username"], inputs["role"]
        if _known(username) and not _NAME.fullmatch(username):
            failures.append(CheckFailure("username", f"{username!r} is not a Weka username"))
        if _known(username) and username == inputs["org_admin_username"]:
            failures.append(CheckFailure("username", "is the organization admin's own name"))
        if _known(role) and role not in ORG_USER_ROLES:
            failures.append(CheckFailure("role", f"must be one of {', '.join(ORG_USER_ROLES)}"))
        return failures

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self._inputs(props)
        username, role = inputs["username"], inputs["role"]
        password = _new_password()
        with _client(inputs) as weka:
            existing = next((u for u in weka.list_users() if u.username == username), None)
            if existing is None:
                user = weka.create_user(username, password, role)
            elif inputs["org"] == ROOT_ORG:
                raise WekaError(
                    self._doing("creating", inputs),
                    f"user {username!r} exists already in the shared Root organization, and "
                    "nothing marks it as this stack's",
                    "choose another username, or delete the stale user "
                    f"(`weka user delete {username}`) and run `pulumi up` again",
                )
            else:
                user = weka.update_user(existing.uid, username, role=role, password=password)
        return CreateResult(user.uid, {**inputs, "password": password})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with _client(props) as weka:
            user = next((u for u in weka.list_users() if u.uid == id_), None)
        if user is None:
            return _gone()
        live = {"username": user.username, "role": user.role}
        return ReadResult(id_, {**self._inputs(props), **live, "password": props["password"]})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self._inputs(olds), self._inputs(news)
        if old["role"] != new["role"]:
            with _client(new) as weka:
                weka.update_user(id_, new["username"], role=new["role"])
        return UpdateResult({**new, "password": olds["password"]})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        with _client(props) as weka:
            weka.delete_user(id_, str(props.get("username")))
