"""A tenant as the runbook built it, read from every backend by the names the runbook gives its
objects: the Reservation and the nodes labelled for it, the namespace and what is in it, the Slurm
account with its sub-accounts, users, QoS and partition, the Authentik groups and their users, the
Weka organization (or the tenant's directories on the shared filesystems) with its quotas and the
owners of its directories. Read-only: nothing here writes to a backend.

Each backend's part is read as its client returns it, so that inferring the spec and checking
the tenant's consistency work on what the backends said, not on a reading of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from providers.authentik.client import AuthentikClient, Group, User
from providers.authentik.settings import Settings as AuthentikSettings
from providers.kubectl import kubectl_get
from providers.slurm.partitions import Partition
from providers.slurm.sacctmgr import AccountRecord, Association, QosRecord
from providers.slurm.settings import Settings as SlurmSettings
from providers.weka.client import WekaClient
from providers.weka.mount import DirectoryStat, mount_client
from providers.weka.records import FileSystem, Organization, Quota
from providers.weka.settings import Credentials
from providers.weka.settings import Settings as WekaSettings
from tenant_stack.adoption import existing_objects
from tenant_stack.errors import ClusterError
from tenant_stack.fleet.live_numbers import handed_out
from tenant_stack.live import TENANT_LABEL
from tenant_stack.platform import Platform

__all__ = [
    "LiveIdentity",
    "LiveKubernetes",
    "LiveSlurm",
    "LiveStorage",
    "LiveTenant",
    "UserHome",
    "read_tenant",
]


@dataclass(frozen=True)
class LiveKubernetes:
    namespace: dict[str, Any] | None
    reservation: dict[str, Any] | None
    quota: dict[str, Any] | None
    limit_range: dict[str, Any] | None
    release: dict[str, Any] | None
    authorized_keys: dict[str, Any] | None
    network_policies: list[str]
    claims: list[dict[str, Any]]
    csi_objects: list[str]  # the CSI driver's Secret and StorageClass, those that exist
    # `Kind/name` of each object of the kinds the program declares that is the tenant's: in its
    # namespace, and the namespace, Reservation and StorageClass of its names.
    objects: list[str] = field(default_factory=list)
    # Every node's holders: its label's tenant, and each Reservation that lists it.
    holders: dict[str, set[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class LiveSlurm:
    cluster: str
    account: AccountRecord | None
    teams: list[AccountRecord]
    users: list[Association]  # the user associations on the tenant's accounts
    normal: QosRecord | None
    interactive: QosRecord | None
    partition: Partition | None


@dataclass(frozen=True)
class LiveIdentity:
    group: Group | None
    admins: Group | None
    users: list[User]  # the tenant group's members (and the admins group's)
    uid_start: int  # what the outpost numbers users from, for users with no uidNumber
    gid_start: int

    def uid(self, user: User) -> int:
        """The uidNumber the LDAP outpost hands `user` today."""
        return handed_out([user], [], self.uid_start, self.gid_start)[0].number

    def gid(self, group: Group) -> int:
        """The gidNumber the LDAP outpost hands `group` today."""
        return handed_out([], [group], self.uid_start, self.gid_start)[0].number


@dataclass(frozen=True)
class UserHome:
    stat: DirectoryStat | None
    quota: Quota | None


@dataclass(frozen=True)
class LiveStorage:
    isolation: str | None  # org, directory, or None: nothing of the tenant's on Weka
    organization: Organization | None
    org_admin: str | None  # the org admin the import logged in as
    home_filesystem: FileSystem | None  # org isolation
    scratch_filesystem: FileSystem | None
    home_quota: Quota | None  # directory isolation: the quota on <shared home>/<slug>
    scratch_quota: Quota | None
    homes: dict[str, UserHome]
    csi_user: bool  # the CSI driver's Weka user `<slug>-csi` exists


@dataclass(frozen=True)
class LiveTenant:
    slug: str
    kubernetes: LiveKubernetes
    slurm: LiveSlurm
    identity: LiveIdentity
    storage: LiveStorage


def _items(*args: str) -> list[dict[str, Any]]:
    found = kubectl_get(*args)
    return list(found["items"]) if found else []


def read_kubernetes(slug: str) -> LiveKubernetes:
    namespace = kubectl_get("namespace", slug)

    def inside(kind: str, name: str) -> dict[str, Any] | None:
        return kubectl_get(kind, name, "--namespace", slug) if namespace else None

    def all_inside(kind: str) -> list[dict[str, Any]]:
        return _items(kind, "--namespace", slug) if namespace else []

    holders: dict[str, set[str]] = {}
    for node in _items("nodes"):
        tenant = (node["metadata"].get("labels") or {}).get(TENANT_LABEL)
        if tenant:
            holders.setdefault(node["metadata"]["name"], set()).add(tenant)
    for reservation in _items("reservations"):
        tenant = (reservation.get("spec") or {}).get("tenant") or reservation["metadata"]["name"]
        for node in (reservation.get("spec") or {}).get("reservedNodes") or []:
            holders.setdefault(node, set()).add(tenant)
    own = {
        ("Namespace", slug),
        ("Reservation", f"{slug}-reservation"),
        ("StorageClass", f"weka-{slug}"),
    }
    cluster_kinds = {kind for kind, _ in own}
    objects = sorted(
        f"{kind}/{name}"
        for kind, name in existing_objects(slug)
        if kind not in cluster_kinds or (kind, name) in own
    )
    csi = {
        "Secret": inside("secret", f"weka-{slug}-creds"),
        "StorageClass": kubectl_get("storageclass", f"weka-{slug}"),
    }
    return LiveKubernetes(
        namespace=namespace,
        reservation=kubectl_get("reservation", f"{slug}-reservation"),
        quota=inside("resourcequota", f"{slug}-quota"),
        limit_range=inside("limitrange", f"{slug}-defaults"),
        release=inside("helmrelease", f"login-{slug}"),
        authorized_keys=inside("secret", f"{slug}-authorized-keys"),
        network_policies=sorted(p["metadata"]["name"] for p in all_inside("networkpolicies")),
        claims=all_inside("persistentvolumeclaims"),
        csi_objects=[kind for kind, found in csi.items() if found is not None],
        holders=holders,
        objects=objects,
    )


def read_slurm(slug: str, short_name: str) -> LiveSlurm:
    client = SlurmSettings.from_environment().client()
    account = client.account(slug)
    teams: list[AccountRecord] = []
    if account is not None:
        doing = f"reading the sub-accounts of Slurm account '{slug}'"
        for assoc in client.associations(doing=doing, parent=slug):
            if not assoc.user and assoc.account != slug:
                team = client.account(assoc.account)
                if team is not None:
                    teams.append(team)
    users = [
        assoc
        for record in ([account] if account else []) + teams
        for assoc in record.associations
        if assoc.user and assoc.cluster == client.cluster
    ]
    return LiveSlurm(
        cluster=client.cluster,
        account=account,
        teams=sorted(teams, key=lambda t: t.name),
        users=sorted(users, key=lambda a: a.user),
        normal=client.qos(f"normal-{short_name}"),
        interactive=client.qos(f"interactive-{short_name}"),
        partition=client.partition(slug),
    )


def read_identity(slug: str, uid_start: int, gid_start: int) -> LiveIdentity:
    with AuthentikClient.from_settings(AuthentikSettings.from_environment()) as directory:
        groups = {}
        for name in (slug, f"{slug}-admins"):
            found = directory.find_group(name)
            groups[name] = directory.get_group(found.pk, include_users=True) if found else None
        usernames = sorted(
            {
                member.username
                for group in groups.values()
                if group is not None
                for member in group.members or ()
            }
        )
        users = [user for name in usernames if (user := directory.find_user(name)) is not None]
    return LiveIdentity(groups[slug], groups[f"{slug}-admins"], users, uid_start, gid_start)


def _quota(weka: WekaClient, filesystem: FileSystem | None, path: str) -> Quota | None:
    if filesystem is None:
        return None
    inode = weka.resolve_path(filesystem.uid, path)
    return weka.get_quota(filesystem.uid, inode, path) if inode is not None else None


def _homes(
    weka: WekaClient, filesystem: FileSystem | None, under: str, users: list[str], doing: str
) -> dict[str, UserHome]:
    """Each user's home directory `<under>/<user>` of `filesystem`: its owner and its quota."""
    if filesystem is None:
        return {}
    mount = mount_client()
    return {
        user: UserHome(
            mount.stat(weka.org, filesystem.name, f"{under}/{user}", doing),
            _quota(weka, filesystem, f"{under}/{user}"),
        )
        for user in users
    }


def read_storage(
    slug: str, usernames: list[str], platform: Platform, org_admin: Credentials | None
) -> LiveStorage:
    settings = WekaSettings.from_environment()
    with WekaClient.from_settings(settings) as root:
        organization = root.find_organization(slug)
        if organization is None:
            home_fs = root.find_filesystem(platform.weka.shared_home_filesystem)
            scratch_fs = root.find_filesystem(platform.weka.shared_scratch_filesystem)
            home_quota = _quota(root, home_fs, f"/{slug}")
            scratch_quota = _quota(root, scratch_fs, f"/{slug}")
            doing = f"reading {slug}'s directories on the shared filesystems"
            homes = _homes(root, home_fs, f"/{slug}", usernames, doing)
            found = home_quota is not None or scratch_quota is not None
            return LiveStorage(
                "directory" if found else None,
                None,
                None,
                None,
                None,
                home_quota,
                scratch_quota,
                homes,
                any(u.username == f"{slug}-csi" for u in root.list_users()),
            )
    if org_admin is None:
        raise ClusterError(
            f"reading Weka organization '{slug}': its filesystems and quotas are visible only "
            "to its own admin; give the organization admin's name (--weka-org-admin) and a file "
            "holding the password (--weka-org-password-file)"
        )
    with WekaClient.from_settings(settings, org_admin) as weka:
        home_fs = weka.find_filesystem(f"{slug}-home")
        scratch_fs = weka.find_filesystem(f"{slug}-scratch")
        doing = f"reading the home directories of Weka organization '{slug}'"
        homes = _homes(weka, home_fs, "", usernames, doing)
        return LiveStorage(
            "org",
            organization,
            org_admin.username,
            home_fs,
            scratch_fs,
            None,
            _quota(weka, scratch_fs, f"/{slug}"),
            homes,
            any(u.username == f"{slug}-csi" for u in weka.list_users()),
        )


def read_tenant(slug: str, platform: Platform, org_admin: Credentials | None) -> LiveTenant:
    """Everything of tenant `slug` every backend holds, by the runbook's names."""
    short_name = slug.removeprefix("tenant-")
    identity = read_identity(slug, *platform.ldap.start_numbers)
    slurm = read_slurm(slug, short_name)
    usernames = sorted({u.username for u in identity.users} | {a.user for a in slurm.users})
    return LiveTenant(
        slug,
        read_kubernetes(slug),
        slurm,
        identity,
        read_storage(slug, usernames, platform, org_admin),
    )
