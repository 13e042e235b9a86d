"""Organizations: the cluster's tenants, each with its own users, filesystems and snapshots, and
SSD and total quotas on what its filesystems may allocate. Only a cluster admin creates,
changes or deletes them; any other caller sees its own organization only.
"""

from __future__ import annotations

import uuid

from sandbox.weka.core import Caller, check_name
from sandbox.weka.errors import ApiError
from sandbox.weka.store import Org
from sandbox.weka.users import Users

MAX_ORGS = 256  # including Root, per the Weka docs


class Organizations(Users):
    def _org_by_name(self, name: str) -> Org | None:
        return next((o for o in self.state.orgs.values() if o.name == name), None)

    def org_allocated(self, org: Org) -> tuple[int, int]:
        """(SSD, total) bytes allocated to the organization's filesystems."""
        mine = [fs for fs in self.state.filesystems.values() if fs.org_uid == org.uid]
        return sum(fs.ssd_budget for fs in mine), sum(fs.total_budget for fs in mine)

    def list_orgs(self, caller: Caller) -> list[Org]:
        if caller.user.role == "ClusterAdmin":
            return sorted(self.state.orgs.values(), key=lambda o: o.id)
        return [caller.org]

    def get_org(self, caller: Caller, uid: str) -> Org:
        if caller.user.role != "ClusterAdmin" and uid != caller.org.uid:
            raise ApiError(403, "Only a cluster admin can view other organizations")
        org = self.state.orgs.get(uid)
        if org is None:
            raise ApiError(404, f"Organization {uid} not found")
        return org

    def create_org(
        self, caller: Caller, name: str, username: str, password: str, ssd: int, total: int
    ) -> Org:
        self._require(caller, {"ClusterAdmin"}, "create organizations")
        check_name("Organization", name)
        if self._org_by_name(name) is not None:
            raise ApiError(409, f"Organization {name} already exists")
        if len(self.state.orgs) >= MAX_ORGS:
            raise ApiError(400, f"Cannot create more than {MAX_ORGS} organizations")
        self._check_password(password)
        self._check_limits(ssd, total)
        org = Org(str(uuid.uuid4()), self.state.next_org_id, name, ssd, total)
        self.state.next_org_id += 1
        self.state.orgs[org.uid] = org
        self._add_user(org, username, password, "OrgAdmin")
        return org

    def rename_org(self, caller: Caller, uid: str, new_name: str) -> Org:
        self._require(caller, {"ClusterAdmin"}, "rename organizations")
        org = self.get_org(caller, uid)
        if org.id == 0:
            raise ApiError(400, "The Root organization cannot be renamed")
        other = self._org_by_name(new_name)
        if other is not None and other is not org:
            raise ApiError(409, f"Organization {new_name} already exists")
        check_name("Organization", new_name)
        if new_name != org.name:
            self.mounts.rename_org(org.name, new_name)
        org.name = new_name
        return org

    def set_org_limits(self, caller: Caller, uid: str, ssd: int | None, total: int | None) -> Org:
        self._require(caller, {"ClusterAdmin"}, "set organization quotas")
        org = self.get_org(caller, uid)
        if org.id == 0:
            raise ApiError(400, "The Root organization cannot be limited")
        new_ssd = org.ssd_quota if ssd is None else ssd
        new_total = org.total_quota if total is None else total
        self._check_limits(new_ssd, new_total)
        ssd_used, total_used = self.org_allocated(org)
        if new_total and new_total < total_used:
            raise ApiError(
                400, f"Total quota {new_total} is below the {total_used} bytes already allocated"
            )
        if new_ssd and new_ssd < ssd_used:
            raise ApiError(
                400, f"SSD quota {new_ssd} is below the {ssd_used} bytes already allocated"
            )
        org.ssd_quota, org.total_quota = new_ssd, new_total
        return org

    def _check_limits(self, ssd: int, total: int) -> None:
        if ssd < 0 or total < 0:
            raise ApiError(400, "Quotas cannot be negative (0 means unlimited)")
        if ssd and total and ssd > total:
            raise ApiError(400, "SSD quota cannot exceed the total quota")

    def delete_org(self, caller: Caller, uid: str) -> None:
        self._require(caller, {"ClusterAdmin"}, "delete organizations")
        org = self.get_org(caller, uid)
        if org.id == 0:
            raise ApiError(400, "The Root organization cannot be deleted")
        filesystems = [fs.name for fs in self.state.filesystems.values() if fs.org_uid == uid]
        if filesystems:
            raise ApiError(
                400,
                f"Organization {org.name} still has filesystems: {', '.join(sorted(filesystems))}",
            )
        self.mounts.remove_org(org.name)
        # Like the real cluster, everything else that belongs to the org goes with it.
        for user in [u for u in self.state.users.values() if u.org_uid == uid]:
            self.tokens.revoke_user(user.uid)
            del self.state.users[user.uid]
        for snap_uid in [s.uid for s in self.state.snapshots.values() if s.org_uid == uid]:
            del self.state.snapshots[snap_uid]
        del self.state.orgs[uid]
