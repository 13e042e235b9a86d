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
from collections.abc import Callable, Mapping
from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, ReadResult, UpdateResult

from providers.base import Field, Rule, Schema, SchemaProvider, gone, is_unknown
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


def _typed(kind: type[Any], check: Callable[[Any], Any] | None = None) -> Callable[[Any], Any]:
    """A parse that takes a value of `kind` (numbers cross the engine as floats) and then runs
    `check` on it. Its errors name the type only, never the value: it may be a password."""

    def parse(value: Any) -> Any:
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"must be {kind.__name__}, not {type(value).__name__}")
        return value if check is None else check(value)

    return parse


def _at_least(low: int, meaning: str) -> Callable[[Any], Any]:
    def check(value: int) -> int:
        if value < low:
            raise ValueError(meaning)
        return value

    return _typed(int, check)


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[Any], Any]:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return _typed(str, check)


# Where the object lives, and how to log in there: Root means the cluster admin of `settings`.
_CREDENTIALS = (
    Field("org", _typed(str), ROOT_ORG, replaces=True),
    Field("org_admin_username", _typed(str), "", login=True),
    Field("org_admin_password", _typed(str), "", login=True),
)


def _credentials_given(p: Mapping[str, Any]) -> list[tuple[str, str]]:
    if p["org"] == ROOT_ORG:
        return []
    return [
        (key, f"{key} is required for objects in organization {p['org']!r}")
        for key in ("org_admin_username", "org_admin_password")
        if p[key] == ""
    ]


_CREDENTIALS_GIVEN = Rule(("org", "org_admin_username", "org_admin_password"), _credentials_given)


def _not_above(low: str, high: str, reason: str) -> Rule:
    """`low` may not exceed `high` when both are set (0 means unset: no limit, or all)."""
    return Rule(
        (low, high),
        lambda p: [(low, reason)] if p[low] > 0 and 0 < p[high] < p[low] else [],
    )


class _WekaProvider(SchemaProvider):
    """A Weka resource kind: its schema, and how its errors name the object."""

    error = WekaError

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        name = props.get("name") or props.get("username") or ""
        where = f" in organization {props['org']!r}" if "org" in props else ""
        return f"{what} Weka {self.schema.kind} {name!r}{where}"


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

    schema = Schema(
        kind="organization",
        fields=(
            # Renamed in place, so that drift is put back without a replace.
            Field("name", _matching(_SLUG, "a tenant slug (a DNS label)")),
            Field("ssd_quota", _at_least(0, "must be 0 (unlimited) or more bytes"), 0),
            Field("total_quota", _at_least(0, "must be 0 (unlimited) or more bytes"), 0),
        ),
        rules=(_not_above("ssd_quota", "total_quota", "cannot exceed total_quota"),),
    )

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
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
            return gone()
        live = {"name": org.name, "ssd_quota": org.ssd_quota, "total_quota": org.total_quota}
        return ReadResult(id_, {**self.schema.recorded(props), **live, **self._admin(props)})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self.schema.recorded(olds), self.schema.recorded(news)
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

    schema = Schema(
        kind="filesystem",
        fields=(
            # A rename is done in place: the data stays.
            Field("name", _matching(_NAME, "a Weka filesystem name")),
            *_CREDENTIALS,
            Field("group_name", _typed(str), "default", replaces=True),
            Field("total_capacity", _at_least(1, "must be a positive number of bytes")),
            # 0 = all of total_capacity on SSD (no tiering); check writes it out.
            Field("ssd_capacity", _at_least(0, "must be 1 to total_capacity bytes"), 0),
            Field("retained_snapshot_id", _typed(str), ""),
            Field("allow_delete_without_snapshot", _typed(bool), False),
        ),
        rules=(
            _CREDENTIALS_GIVEN,
            _not_above("ssd_capacity", "total_capacity", "must be 1 to total_capacity bytes"),
        ),
    )

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        result = super().check(olds, news)
        inputs, failures = result.inputs, list(result.failures or [])
        total, ssd = inputs.get("total_capacity"), inputs.get("ssd_capacity")
        if ssd == 0 and isinstance(total, int):
            inputs["ssd_capacity"] = total
        snapshot = inputs.get("retained_snapshot_id")
        if not olds and isinstance(snapshot, str) and snapshot and not is_unknown(snapshot):
            reason = "a filesystem being created has no snapshot yet: leave it empty"
            failures.append(CheckFailure("retained_snapshot_id", reason))
        return CheckResult(inputs, failures)

    def delete_before_replace(self, replaces: list[str]) -> bool:
        # A name exists once per organization, and the delete gate must speak before a new
        # filesystem is made beside the old one.
        return True

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
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
        inputs = self.schema.recorded(props)
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


class DirectoryQuotaProvider(_WekaProvider):
    """A quota on a directory (/home/alice, /scratch/tenant-foo). The directory must exist:
    the REST API cannot make one (the CSI driver or an operator does, through a mount)."""

    schema = Schema(
        kind="directory quota",
        fields=(
            Field("filesystem_uid", _typed(str), replaces=True),
            Field("path", _typed(str, _absolute_path), replaces=True),
            *_CREDENTIALS,
            Field("hard_limit_bytes", _at_least(0, "cannot be negative")),  # 0 = none
            Field("soft_limit_bytes", _at_least(0, "cannot be negative")),
            Field("grace_seconds", _at_least(0, "cannot be negative"), 0),
            # The ownership mark: the tenant's slug.
            Field("owner", _typed(str, _nonempty("is required: it marks the quota as ours"))),
        ),
        identity=("filesystem_uid", "path"),
        rules=(
            _CREDENTIALS_GIVEN,
            _not_above("soft_limit_bytes", "hard_limit_bytes", "cannot exceed hard_limit_bytes"),
        ),
    )

    def _doing(self, what: str, props: Mapping[str, Any]) -> str:
        where = f"{props.get('path')} in filesystem {props.get('filesystem_uid')}"
        return f"{what} the Weka quota of {where}"

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
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


def _role(role: str) -> str:
    if role not in ORG_USER_ROLES:
        raise ValueError(f"must be one of {', '.join(ORG_USER_ROLES)}")
    return role


class DirectoryProvider(_WekaProvider):
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
            Field("org", _typed(str), ROOT_ORG, replaces=True),
            Field("filesystem", _matching(_NAME, "a Weka filesystem name"), replaces=True),
            Field("path", _typed(str, _plain_path), replaces=True),
            Field("uid", _typed(int, _posix_id)),
            Field("gid", _typed(int, _posix_id)),
            Field("mode", _typed(str, _mode), "0750"),
            Field("allow_delete_with_data", _typed(bool), False),
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

    schema = Schema(
        kind="user",
        fields=(
            Field("username", _matching(_NAME, "a Weka username"), replaces=True),
            *_CREDENTIALS,
            Field("role", _typed(str, _role)),
        ),
        identity=("username", "org"),
        rules=(
            _CREDENTIALS_GIVEN,
            Rule(
                ("username", "org_admin_username"),
                lambda p: (
                    [("username", "is the organization admin's own name")]
                    if p["username"] == p["org_admin_username"]
                    else []
                ),
            ),
        ),
    )

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs = self.schema.recorded(props)
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
            return gone()
        live = {"username": user.username, "role": user.role}
        return ReadResult(
            id_, {**self.schema.recorded(props), **live, "password": props["password"]}
        )

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        old, new = self.schema.recorded(olds), self.schema.recorded(news)
        if old["role"] != new["role"]:
            with _client(new) as weka:
                weka.update_user(id_, new["username"], role=new["role"])
        return UpdateResult({**new, "password": olds["password"]})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        with _client(props) as weka:
            weka.delete_user(id_, str(props.get("username")))
