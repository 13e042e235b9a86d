"""The dynamic providers of the Authentik resources: onboarding runbook step 2 (group, users, SSH
keys, pinned uid/gid) and offboarding step 5 (users disabled and removed from the group).

A provider holds no state at all: Pulumi pickles it into the stack's state, so each call builds
its client from the environment (settings.py) and closes it again.

Outputs repeat the inputs as Authentik has them now, so that `diff(olds=outputs, news=inputs)`
answers "would `up` change anything" and a change made behind Pulumi's back shows after a refresh:
- `tenant` is the tenant the object belongs to (carried over from the inputs), `marked` whether
  the object still carries that tenant's mark attribute;
- `attributes` holds only the extra attributes the program sets; attributes others set (Authentik
  keeps user settings there) are neither reported nor touched;
- a user's `groups` are the groups it is in that this tenant manages (those carrying the tenant's
  mark, and those the program names); other memberships are left alone.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pulumi.dynamic import (
    CreateResult,
    ReadResult,
    UpdateResult,
)

from providers.authentik.props import (
    GID_ATTRIBUTE,
    GROUP,
    KEPT_UNTIL_ATTRIBUTE,
    MARK_ATTRIBUTE,
    SSH_KEYS_ATTRIBUTE,
    UID_ATTRIBUTE,
    USER,
    join_keys,
    posix_id,
    split_keys,
)
from providers.authentik.settings import Settings
from providers.base import ADOPT, SchemaProvider, gone
from providers.errors import AuthentikError
from providers.retention.ledger import refuse_deletion
from providers.retention.objects import kept_until

if TYPE_CHECKING:
    from providers.authentik.client import AuthentikClient, Group, User

__all__ = ["TenantGroupProvider", "TenantUserProvider"]

_NOT_MARKED_ADVICE = (
    "`pulumi import` cannot bring objects into a dynamic resource: if it really is {tenant}'s, "
    "add the attribute {mark}: {tenant} to it in Authentik and run `pulumi up` again, which "
    "adopts it; otherwise rename one of the two"
)


@contextmanager
def _client() -> Iterator[AuthentikClient]:
    # Imported here, the one place the providers make a client: a preview only checks and
    # diffs, so neither the program nor the dynamic-provider host loads the HTTP stack for it.
    from providers.authentik.client import AuthentikClient

    with AuthentikClient.from_settings(Settings.from_environment()) as client:
        yield client


def _require_mark(
    attributes: Mapping[str, Any], inputs: Mapping[str, Any], pk: str, what: str, doing: str
) -> None:
    """Adopt only what this tenant made: a create that finds the object already there (after a
    crash between Authentik's reply and the state write) takes it over only when it is marked;
    for a tenant brought in by `import`, also when it carries no tenant's mark at all and is
    the very object `import` recorded (`adopt` holds its primary key, `pk` here)."""
    tenant = inputs["tenant"]
    found = attributes.get(MARK_ATTRIBUTE)
    if found == tenant or (found is None and inputs.get(ADOPT) == pk):
        return
    has = "no such attribute" if found is None else f"{MARK_ATTRIBUTE}: {found!r}"
    raise AuthentikError(
        doing,
        f"{what} already exists and does not carry this tenant's mark "
        f"{MARK_ATTRIBUTE}: {tenant!r} (it has {has})",
        _NOT_MARKED_ADVICE.format(tenant=tenant, mark=MARK_ATTRIBUTE),
    )


def _refuse_unadoptable(user: User, wanted: Collection[Group], doing: str) -> None:
    """Never adopted, even when `import` recorded it (`User.never_adopted`)."""
    reason = user.never_adopted({group.pk for group in wanted}, {})
    if reason:
        raise AuthentikError(
            doing,
            f"user {user.username!r} {reason}: it is never adopted into a tenant",
            "choose another username for the tenant's user; nothing was changed",
        )


def _gone(doing: str, what: str, id_: str) -> AuthentikError:
    return AuthentikError(
        doing,
        f"{what} (id {id_}) no longer exists",
        "run `pulumi refresh` so the state forgets it; the next `pulumi up` creates it again",
    )


# groups


def _group_attributes(
    live: Mapping[str, Any], inputs: Mapping[str, Any], previous: Collection[str]
) -> dict[str, Any]:
    """Everything the group should carry: what others set, untouched; the extra attributes the
    program set last time and no longer does, dropped; the program's own; the mark."""
    kept = {k: v for k, v in live.items() if k not in previous}
    return {
        **kept,
        **inputs["attributes"],
        # A string: Authentik 2024.10 ignores an integer gidNumber and numbers the group itself.
        GID_ATTRIBUTE: str(int(inputs["gid"])),
        MARK_ATTRIBUTE: inputs["tenant"],
    }


def _parent(client: AuthentikClient, inputs: Mapping[str, Any], doing: str) -> Group:
    parent = client.find_group(inputs["parent"])
    if parent is None:
        raise AuthentikError(
            doing,
            f"its parent group {inputs['parent']!r} does not exist",
            "it is the platform's (Pulumi.prod.yaml authentik.tenants_group), made once at "
            "platform setup, as the onboarding runbook assumes: create it in Authentik, or "
            "correct the name, and run `pulumi up` again",
        )
    return parent


def _parent_name(client: AuthentikClient, group: Group) -> str | None:
    if not group.parents:
        return None
    if group.parent_names is not None:
        names = list(group.parent_names)
    else:
        names = []
        for pk in group.parents:
            parent = client.get_group(pk)
            names.append(pk if parent is None else parent.name)
    # From 2025.12 a group may have several parents; any but the one asked for is a difference.
    return ", ".join(sorted(names))


def _group_outputs(
    client: AuthentikClient, group: Group, props: Mapping[str, Any], extra_keys: Collection[str]
) -> dict[str, Any]:
    attributes = group.attributes
    tenant = props["tenant"]
    return {
        "tenant": tenant,
        "lifecycle": props.get("lifecycle"),
        "marked": attributes.get(MARK_ATTRIBUTE) == tenant,
        "name": group.name,
        "parent": _parent_name(client, group),
        "gid": posix_id(attributes.get(GID_ATTRIBUTE)),
        "attributes": {k: attributes[k] for k in sorted(extra_keys) if k in attributes},
        "pk": group.pk,
        "num_pk": group.num_pk,
    }


class TenantGroupProvider(SchemaProvider):
    """An Authentik group of one tenant (`<slug>` or `<slug>-admins`) under a parent group, with a
    pinned gidNumber. Deleting it removes it only once no member is left."""

    schema = GROUP
    error = AuthentikError

    def create(self, props: dict[str, Any]) -> CreateResult:
        name, tenant = props["name"], props["tenant"]
        doing = f"creating Authentik group {name!r} for tenant {tenant!r}"
        with _client() as client:
            parent = _parent(client, props, doing)
            existing = client.find_group(name)
            if existing is None:
                group = client.create_group(
                    name=name, parent=parent.pk, attributes=_group_attributes({}, props, ())
                )
            else:
                _require_mark(existing.attributes, props, existing.pk, f"group {name!r}", doing)
                group = client.patch_group(
                    existing,
                    parent=parent.pk,
                    attributes=_group_attributes(existing.attributes, props, ()),
                )
            outputs = _group_outputs(client, group, props, props["attributes"])
            return CreateResult(group.pk, outputs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with _client() as client:
            group = client.get_group(id_)
            if group is None:
                return gone()
            outputs = _group_outputs(client, group, props, props.get("attributes") or {})
            return ReadResult(id_, outputs)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        doing = f"updating Authentik group {news['name']!r} of tenant {news['tenant']!r}"
        with _client() as client:
            group = client.get_group(id_)
            if group is None:
                raise _gone(doing, f"group {news['name']!r}", id_)
            parent = _parent(client, news, doing)
            attributes = _group_attributes(group.attributes, news, olds.get("attributes") or {})
            group = client.patch_group(group, parent=parent.pk, attributes=attributes)
            return UpdateResult(_group_outputs(client, group, news, news["attributes"]))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        doing = f"deleting Authentik group {props['name']!r} of tenant {props['tenant']!r}"
        self.refuse_before_offboarding(f"group {props['name']!r}", props, doing)
        with _client() as client:
            group = client.get_group(id_, include_users=True)
            if group is None:
                return
            if group.members is None:
                raise AuthentikError(
                    doing, "Authentik did not list the group's members", "run the destroy again"
                )
            if group.members:
                names = ", ".join(sorted(m.username for m in group.members))
                raise AuthentikError(
                    doing,
                    f"it still has {len(group.members)} member(s): {names}",
                    "revoke them first (deleting a TenantUser disables it and takes it out of "
                    "the tenant's groups, and a destroy does that before it deletes the group); "
                    "remove anyone else by hand in Authentik, then run the destroy again",
                )
            client.delete_group(group)


# users


def _user_groups(client: AuthentikClient, user: User) -> list[Group]:
    """The user's groups with their attributes (to see whose mark they carry)."""
    if user.groups_obj is not None:
        return list(user.groups_obj)
    found = (client.get_group(pk) for pk in user.groups)
    return [g for g in found if g is not None]


def _manages(group: Group, tenants: Collection[str], names: Collection[str]) -> bool:
    return group.attributes.get(MARK_ATTRIBUTE) in tenants or group.name in names


def _member_groups(client: AuthentikClient, names: list[str], doing: str) -> list[Group]:
    groups = []
    for name in names:
        group = client.find_group(name)
        if group is None:
            raise AuthentikError(
                doing,
                f"group {name!r} does not exist",
                "its TenantGroup creates it: pass the group's `name` output (not a plain string) "
                "so that the user is created after it",
            )
        groups.append(group)
    return groups


def _user_attributes(
    live: Mapping[str, Any], inputs: Mapping[str, Any], until: str | None
) -> dict[str, Any]:
    attributes = {
        **{k: v for k, v in live.items() if k != KEPT_UNTIL_ATTRIBUTE},
        # Strings: Authentik 2024.10 ignores integer uidNumber/gidNumber.
        UID_ATTRIBUTE: str(int(inputs["uid"])),
        GID_ATTRIBUTE: str(int(inputs["gid"])),
        SSH_KEYS_ATTRIBUTE: join_keys(list(inputs["ssh_keys"])),
        MARK_ATTRIBUTE: inputs["tenant"],
    }
    if until is not None:
        attributes[KEPT_UNTIL_ATTRIBUTE] = until
    return attributes


def _user_outputs(
    client: AuthentikClient, user: User, tenant: str, names: Collection[str]
) -> dict[str, Any]:
    attributes = user.attributes
    managed = (g.name for g in _user_groups(client, user) if _manages(g, {tenant}, names))
    return {
        "tenant": tenant,
        "marked": attributes.get(MARK_ATTRIBUTE) == tenant,
        "username": user.username,
        "name": user.name,
        "email": user.email,
        "uid": posix_id(attributes.get(UID_ATTRIBUTE)),
        "gid": posix_id(attributes.get(GID_ATTRIBUTE)),
        "ssh_keys": split_keys(attributes.get(SSH_KEYS_ATTRIBUTE)),
        "groups": sorted(set(managed)),
        "is_active": user.is_active,
        "active": user.is_active,
        "pk": user.pk,
        "uuid": user.uuid,
    }


def _apply_user(
    client: AuthentikClient,
    user: User,
    inputs: Mapping[str, Any],
    wanted: list[Group],
    previous: Mapping[str, Any],
    until: str | None,
) -> User:
    """PATCH the user to the inputs, a tombstone's with the day it is kept until. A PATCH with
    `groups` sets the whole membership, so it lists the groups this tenant does not manage as
    they are, and of the managed ones exactly those wanted."""
    tenants = {inputs["tenant"], previous.get("tenant", inputs["tenant"])}
    names = {*inputs["groups"], *(previous.get("groups") or ())}
    kept = [g.pk for g in _user_groups(client, user) if not _manages(g, tenants, names)]
    return client.patch_user(
        user,
        name=inputs["name"],
        email=inputs["email"],
        is_active=inputs.get("active", True),
        groups=[*kept, *(g.pk for g in wanted if g.pk not in kept)],
        attributes=_user_attributes(user.attributes, inputs, until),
    )


def _tombstone(news: Mapping[str, Any], olds: Mapping[str, Any]) -> dict[str, Any]:
    """A disabled user's retention: `retention_until` is stamped when it becomes a tombstone
    (or its retention_days change), then kept."""
    days = news.get("retention_days")
    if days is None or news.get("active", True):
        return {"retention_days": None, "retention_until": None}
    return {"retention_days": int(days), "retention_until": kept_until(olds, int(days))}


def _abandoned(props: Mapping[str, Any]) -> dict[str, Any]:
    """The abandoned onboarding's flag, kept in the outputs for the delete that reads it, and
    absent otherwise, as in the inputs."""
    return {"abandoned": True} if props.get("abandoned") else {}


def _forget_logins(
    client: AuthentikClient, user: User, inputs: Mapping[str, Any]
) -> dict[str, Any]:
    """For an erased user: their audit events redacted and their sessions ended."""
    if not inputs.get("erased"):
        return {"erased": False}
    client.redact_events(user)
    client.end_sessions(user)
    return {"erased": True}


class TenantUserProvider(SchemaProvider):
    """An Authentik user of one tenant with pinned uidNumber/gidNumber, SSH keys and the tenant's
    groups. Deleting it disables the user and takes it out of the tenant's groups; the record
    stays as the audit trail's tombstone. Deleting a tombstone (a disabled user with a
    `retention_until`) is the retention purge's, after that date: the user is deleted."""

    schema = USER
    error = AuthentikError

    def create(self, props: dict[str, Any]) -> CreateResult:
        username, tenant = props["username"], props["tenant"]
        doing = f"creating Authentik user {username!r} for tenant {tenant!r}"
        with _client() as client:
            wanted = _member_groups(client, list(props["groups"]), doing)
            existing = client.find_user(username)
            tombstone = _tombstone(props, {})
            if existing is None:
                user = client.create_user(
                    username=username,
                    name=props["name"],
                    email=props["email"],
                    groups=[g.pk for g in wanted],
                    attributes=_user_attributes({}, props, tombstone["retention_until"]),
                )
            else:
                what = f"user {username!r}"
                _require_mark(existing.attributes, props, str(existing.pk), what, doing)
                if existing.attributes.get(MARK_ATTRIBUTE) is None:
                    _refuse_unadoptable(existing, wanted, doing)
                user = _apply_user(
                    client, existing, props, wanted, {}, tombstone["retention_until"]
                )
            outputs = _user_outputs(client, user, tenant, props["groups"])
            erased = _forget_logins(client, user, props)
            flags = {**tombstone, **erased, **_abandoned(props)}
            return CreateResult(str(user.pk), {**outputs, **flags})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        with _client() as client:
            user = client.get_user(int(id_))
            if user is None:
                return gone()
            outputs = _user_outputs(client, user, props["tenant"], props.get("groups") or ())
            kept = {k: props.get(k) for k in ("retention_days", "retention_until", "erased")}
            return ReadResult(id_, {**outputs, **kept, **_abandoned(props)})

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        doing = f"updating Authentik user {news['username']!r} of tenant {news['tenant']!r}"
        with _client() as client:
            user = client.get_user(int(id_))
            if user is None:
                raise _gone(doing, f"user {news['username']!r}", id_)
            wanted = _member_groups(client, list(news["groups"]), doing)
            tombstone = _tombstone(news, olds)
            user = _apply_user(client, user, news, wanted, olds, tombstone["retention_until"])
            outputs = _user_outputs(client, user, news["tenant"], news["groups"])
            erased = _forget_logins(client, user, news)
            return UpdateResult({**outputs, **tombstone, **erased, **_abandoned(news)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """Offboarding step 5: disable (never delete) and remove from the tenant's groups; for a
        tombstone past its retention, the purge, and for an abandoned onboarding's user: delete
        it."""
        until = props.get("retention_until")
        if until and not props.get("active", True):
            what = f"the tombstone of Authentik user {props.get('username')!r}"
            refuse_deletion(AuthentikError, props["tenant"], what, until)
        with _client() as client:
            user = client.get_user(int(id_))
            if user is None:
                return
            if props.get("abandoned") or (until and not props.get("active", True)):
                client.delete_user(user)
                return
            groups = _user_groups(client, user)
            names = props.get("groups") or ()
            kept = [g.pk for g in groups if not _manages(g, {props["tenant"]}, names)]
            if user.is_active or len(kept) != len(groups):
                client.patch_user(user, is_active=False, groups=kept)
