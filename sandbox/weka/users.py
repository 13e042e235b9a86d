"""Local users: their roles and passwords, and which callers may manage them.

A user belongs to one organization and is seen only from it; its OrgAdmins (and in Root, its
ClusterAdmins) manage its users.
"""

from __future__ import annotations

import uuid

from sandbox.weka.core import Caller, Core
from sandbox.weka.errors import ApiError
from sandbox.weka.store import Org, User
from sandbox.weka.tokens import PASSWORD_RULE, hash_password, password_is_strong

ROLES = {r.lower(): r for r in ("ClusterAdmin", "OrgAdmin", "Regular", "ReadOnly", "CSI", "S3")}
USER_ADMINS = {"ClusterAdmin", "OrgAdmin"}


class Users(Core):
    def _user_by_name(self, org: Org, username: str) -> User | None:
        users = self.state.users.values()
        return next((u for u in users if u.org_uid == org.uid and u.username == username), None)

    def _check_password(self, password: str) -> None:
        if not password_is_strong(password):
            raise ApiError(400, PASSWORD_RULE)

    def _role(self, org: Org, role: str) -> str:
        canonical = ROLES.get(role.lower())
        if canonical is None:
            raise ApiError(400, f"Invalid role {role!r}; valid roles: {', '.join(ROLES.values())}")
        if canonical == "ClusterAdmin" and org.id != 0:
            raise ApiError(400, "ClusterAdmin users can only exist in the Root organization")
        return canonical

    def _add_user(self, org: Org, username: str, password: str, role: str) -> User:
        if not username:
            raise ApiError(400, "Username is required")
        if self._user_by_name(org, username) is not None:
            raise ApiError(409, f"User {username} already exists")
        user = User(str(uuid.uuid4()), org.uid, username, role, hash_password(password))
        self.state.users[user.uid] = user
        return user

    def list_users(self, caller: Caller) -> list[User]:
        self._require(caller, USER_ADMINS, "list users")
        return [u for u in self.state.users.values() if u.org_uid == caller.org.uid]

    def _find_user(self, caller: Caller, uid: str) -> User:
        user = self.state.users.get(uid)
        if user is None or user.org_uid != caller.org.uid:
            raise ApiError(404, f"User {uid} not found")
        return user

    def create_user(
        self,
        caller: Caller,
        username: str,
        password: str,
        role: str,
        posix_uid: int | None,
        posix_gid: int | None,
    ) -> User:
        self._require(caller, USER_ADMINS, "create users")
        canonical = self._role(caller.org, role)
        if canonical == "ClusterAdmin" and caller.user.role != "ClusterAdmin":
            raise ApiError(403, "Only a cluster admin can create cluster admins")
        self._check_password(password)
        user = self._add_user(caller.org, username, password, canonical)
        user.posix_uid, user.posix_gid = posix_uid, posix_gid
        return user

    def update_user(self, caller: Caller, uid: str, role: str | None, password: str | None) -> User:
        is_self = uid == caller.user.uid
        if not is_self or role is not None:
            self._require(caller, USER_ADMINS, "update other users")
        user = self._find_user(caller, uid)
        if role is not None:
            canonical = self._role(caller.org, role)
            if is_self and canonical != user.role:
                raise ApiError(400, "Users cannot change their own role")
            user.role = canonical
        if password is not None:
            self._check_password(password)
            user.password_hash = hash_password(password)
        return user

    def delete_user(self, caller: Caller, uid: str) -> None:
        self._require(caller, USER_ADMINS, "delete users")
        user = self._find_user(caller, uid)
        if user.uid == caller.user.uid:
            raise ApiError(400, "Users cannot delete themselves")
        self.tokens.revoke_user(user.uid)
        del self.state.users[user.uid]

    def revoke_user(self, caller: Caller, uid: str) -> None:
        self._require(caller, USER_ADMINS, "revoke user tokens")
        self.tokens.revoke_user(self._find_user(caller, uid).uid)
