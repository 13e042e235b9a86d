"""Contract tests of the Authentik providers (providers.authentik) against the tests' sandbox
emulator, calling the providers' methods as the engine would. The client on a mock transport is
tested in tests/unit/test_authentik_client.py.

Every test names what it makes uniquely (a uuid suffix) and removes it again; the `tenants` parent
group is shared and left in place.
"""

from __future__ import annotations

import base64
import pickle
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pulumi.dynamic import ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime.rpc import UNKNOWN

from providers.authentik.client import AuthentikClient, User
from providers.authentik.props import MARK_ATTRIBUTE
from providers.authentik.provider import TenantGroupProvider, TenantUserProvider
from providers.authentik.settings import Settings
from providers.errors import AuthentikError
from tests.backends import authentik as authentik_api

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

TENANTS = "tenants"
KEYS = [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFDBAZZrr9Jd3E6aLuiTFpVuwxcamRPmBumGmmKzd+VQ a@laptop",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIoWqqywQA4+WoSEHjrw1abaAORyYCQAb+riJZwgoRqn a@desktop",
]
GROUPS = TenantGroupProvider()
USERS = TenantUserProvider()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The sandbox's token file is the credential; a token left in the shell would override it.
    monkeypatch.delenv("AUTHENTIK_TOKEN", raising=False)
    monkeypatch.setenv("AUTHENTIK_MAX_ATTEMPTS", "2")


@pytest.fixture
def client() -> Iterator[AuthentikClient]:
    with AuthentikClient.from_settings(Settings.from_environment()) as api:
        if api.find_group(TENANTS) is None:
            api.create_group(name=TENANTS, parent=None, attributes={})
        yield api


@pytest.fixture
def sandbox_url() -> str:
    return Settings.from_environment().url


class Made:
    """Names of what a test made, removed at teardown whoever made them (users first)."""

    def __init__(self, api: AuthentikClient) -> None:
        self.api = api
        self.users: list[str] = []
        self.groups: list[str] = []

    def clean(self) -> None:
        for username in self.users:
            if (user := self.api.find_user(username)) is not None:
                self.api.delete_user(user)
        for name in reversed(self.groups):
            if (group := self.api.find_group(name)) is not None:
                self.api.delete_group(group)


@pytest.fixture
def made(client: AuthentikClient) -> Iterator[Made]:
    record = Made(client)
    yield record
    record.clean()


def checked(provider: ResourceProvider, raw: dict[str, Any]) -> dict[str, Any]:
    result = provider.check({}, raw)
    assert [(f.property, f.reason) for f in result.failures] == []
    return result.inputs


def group_inputs(made: Made, tenant: str, *, gid: int = 4500) -> dict[str, Any]:
    made.groups.append(tenant)
    return checked(
        GROUPS,
        {
            "tenant": tenant,
            "name": tenant,
            "parent": TENANTS,
            "gid": gid,
            "attributes": {"tenant_slug": tenant},
        },
    )


def user_inputs(made: Made, tenant: str, groups: list[str], *, uid: int = 2500) -> dict[str, Any]:
    username = unique("u")
    made.users.append(username)
    return checked(
        USERS,
        {
            "tenant": tenant,
            "username": username,
            "name": "Alice Researcher",
            "email": f"{username}@tenant.example",
            "uid": uid,
            "gid": 4500,
            "ssh_keys": KEYS,
            "groups": groups,
        },
    )


def tenant_with_group(made: Made) -> tuple[str, str, dict[str, Any]]:
    """A tenant slug and its group, made by the provider: (slug, group id, group outputs)."""
    tenant = unique("t")
    created = GROUPS.create(group_inputs(made, tenant))
    assert created.outs is not None
    return tenant, created.id, created.outs


def live_user(client: AuthentikClient, id_: str) -> User:
    user = client.get_user(int(id_))
    assert user is not None
    return user


# groups


def test_group_is_created_as_the_runbook_says_and_reads_back_unchanged(
    client: AuthentikClient, made: Made
) -> None:
    tenant = unique("t")
    inputs = group_inputs(made, tenant, gid=4321)
    created = GROUPS.create(inputs)

    group = client.get_group(created.id)
    assert group is not None
    tenants = client.find_group(TENANTS)
    assert tenants is not None
    assert group.parents == (tenants.pk,)
    assert group.attributes == {"tenant_slug": tenant, "gidNumber": "4321", MARK_ATTRIBUTE: tenant}
    assert created.outs == {
        "tenant": tenant,
        "lifecycle": None,  # a group made outside a tenant stack records no offboarding stage
        "marked": True,
        "name": tenant,
        "parent": TENANTS,
        "gid": 4321,
        "attributes": {"tenant_slug": tenant},
        "pk": group.pk,
        "num_pk": group.num_pk,
    }
    read = GROUPS.read(created.id, created.outs)
    assert (read.id, read.outs) == (created.id, created.outs)
    assert GROUPS.diff(created.id, created.outs, inputs).changes is False


def test_group_drift_shows_on_read_and_update_puts_it_back(
    client: AuthentikClient, made: Made
) -> None:
    tenant, id_, outs = tenant_with_group(made)
    inputs = group_inputs(made, tenant)
    group = client.get_group(id_)
    assert group is not None
    client.patch_group(group, attributes={"gidNumber": "9999", "note": "added by hand"})

    drifted = GROUPS.read(id_, outs).outs
    assert drifted is not None
    assert (drifted["gid"], drifted["attributes"], drifted["marked"]) == (9999, {}, False)
    diff = GROUPS.diff(id_, drifted, inputs)
    assert (diff.changes, diff.replaces) == (True, [])

    updated = GROUPS.update(id_, drifted, inputs)
    assert updated.outs == outs
    assert GROUPS.read(id_, outs).outs == outs
    group = client.get_group(id_)
    assert group is not None
    assert group.attributes["note"] == "added by hand"  # what others set is left alone


def test_group_create_adopts_a_group_carrying_the_tenants_mark(
    client: AuthentikClient, made: Made
) -> None:
    tenant = unique("t")
    inputs = group_inputs(made, tenant)
    # As if a create had reached Authentik and the engine crashed before writing the state.
    first = client.create_group(name=tenant, parent=None, attributes={MARK_ATTRIBUTE: tenant})

    created = GROUPS.create(inputs)

    assert created.id == first.pk
    assert created.outs is not None
    assert (created.outs["parent"], created.outs["gid"]) == (TENANTS, 4500)


def test_group_create_refuses_an_unmarked_group_and_says_how_to_take_it_over(
    client: AuthentikClient, made: Made
) -> None:
    tenant = unique("t")
    inputs = group_inputs(made, tenant)
    client.create_group(name=tenant, parent=None, attributes={MARK_ATTRIBUTE: "someone-else"})

    with pytest.raises(AuthentikError) as failed:
        GROUPS.create(inputs)

    message = str(failed.value)
    assert "already exists" in message
    assert "pulumi import" in message
    assert f"{MARK_ATTRIBUTE}: {tenant}" in message
    assert "rename" in message


def test_group_create_without_the_parent_group_names_the_platform_setting(made: Made) -> None:
    tenant = unique("t")
    missing = unique("missing")
    inputs = {**group_inputs(made, tenant), "parent": missing}

    with pytest.raises(AuthentikError) as refused:
        GROUPS.create(inputs)
    message = str(refused.value)
    assert f"its parent group {missing!r} does not exist" in message
    assert "Pulumi.prod.yaml authentik.tenants_group" in message


def test_group_delete_refuses_while_members_remain_then_deletes(
    client: AuthentikClient, made: Made
) -> None:
    tenant, group_id, group_outs = tenant_with_group(made)
    inputs = user_inputs(made, tenant, [tenant])
    user = USERS.create(inputs)
    assert user.outs is not None

    with pytest.raises(AuthentikError, match=rf"still has 1 member.*{inputs['username']}"):
        GROUPS.delete(group_id, group_outs)
    assert client.get_group(group_id) is not None

    USERS.delete(user.id, user.outs)
    GROUPS.delete(group_id, group_outs)
    assert client.get_group(group_id) is None
    GROUPS.delete(group_id, group_outs)  # already gone: nothing to do


# users


def test_user_is_created_as_the_runbook_says_and_reads_back_unchanged(
    client: AuthentikClient, made: Made, sandbox_url: str
) -> None:
    tenant, group_id, _ = tenant_with_group(made)
    inputs = user_inputs(made, tenant, [tenant], uid=2777)
    created = USERS.create(inputs)

    user = live_user(client, created.id)
    assert user.groups == (group_id,)
    assert user.is_active
    assert user.attributes == {
        "uidNumber": "2777",
        "gidNumber": "4500",
        "ssh_keys": "\n".join(KEYS),
        MARK_ATTRIBUTE: tenant,
    }
    assert created.outs is not None
    assert created.outs["groups"] == [tenant]
    assert (created.outs["uid"], created.outs["gid"], created.outs["ssh_keys"]) == (
        2777,
        4500,
        KEYS,
    )
    read = USERS.read(created.id, created.outs)
    assert (read.id, read.outs) == (created.id, created.outs)
    assert USERS.diff(created.id, created.outs, inputs).changes is False
    ldap = httpx.get(f"{sandbox_url}/_emulator/ldap/users/{inputs['username']}").json()
    assert (str(ldap["uidNumber"]), str(ldap["gidNumber"])) == ("2777", "4500")


def test_user_drift_shows_on_read_and_update_puts_it_back_keeping_other_groups(
    client: AuthentikClient, made: Made
) -> None:
    tenant, group_id, _ = tenant_with_group(made)
    other_name = unique("other")
    made.groups.append(other_name)
    other = client.create_group(name=other_name, parent=None, attributes={})
    inputs = user_inputs(made, tenant, [tenant])
    created = USERS.create(inputs)
    assert created.outs is not None
    user = live_user(client, created.id)
    client.add_user(other, user)
    group = client.get_group(group_id)
    assert group is not None
    client.remove_user(group, user)
    client.patch_user(user, is_active=False, attributes={**user.attributes, "ssh_keys": ""})

    drifted = USERS.read(created.id, created.outs).outs
    assert drifted is not None
    assert (drifted["groups"], drifted["ssh_keys"], drifted["is_active"]) == ([], [], False)
    diff = USERS.diff(created.id, drifted, inputs)
    assert (diff.changes, diff.replaces) == (True, [])

    updated = USERS.update(created.id, drifted, inputs)
    assert updated.outs == created.outs
    assert set(live_user(client, created.id).groups) == {group_id, other.pk}


def test_user_update_moves_membership_between_the_tenants_groups(
    client: AuthentikClient, made: Made
) -> None:
    tenant, group_id, _ = tenant_with_group(made)
    admins = f"{tenant}-admins"
    made.groups.append(admins)
    admins_group = GROUPS.create(
        checked(GROUPS, {"tenant": tenant, "name": admins, "parent": TENANTS, "gid": 4501})
    )
    inputs = user_inputs(made, tenant, [tenant, admins])
    created = USERS.create(inputs)
    assert created.outs is not None
    assert set(live_user(client, created.id).groups) == {group_id, admins_group.id}

    news = checked(USERS, {**inputs, "groups": [tenant], "uid": 2600})
    diff = USERS.diff(created.id, created.outs, news)
    assert (diff.changes, diff.replaces) == (True, [])
    updated = USERS.update(created.id, created.outs, news)

    assert updated.outs is not None
    assert (updated.outs["groups"], updated.outs["uid"]) == ([tenant], 2600)
    assert live_user(client, created.id).groups == (group_id,)


def test_user_create_adopts_a_marked_user_and_refuses_an_unmarked_one(
    client: AuthentikClient, made: Made
) -> None:
    tenant, group_id, _ = tenant_with_group(made)
    inputs = user_inputs(made, tenant, [tenant])
    first = client.create_user(
        username=inputs["username"],
        name="Half Made",
        email="",
        groups=[],
        attributes={MARK_ATTRIBUTE: tenant},
    )

    created = USERS.create(inputs)

    assert created.id == str(first.pk)
    adopted = live_user(client, created.id)
    assert (adopted.name, adopted.groups) == ("Alice Researcher", (group_id,))

    stranger = user_inputs(made, tenant, [tenant])
    client.create_user(
        username=stranger["username"], name="Someone", email="", groups=[], attributes={}
    )
    with pytest.raises(AuthentikError, match=r"pulumi import.*rename"):
        USERS.create(stranger)


def test_user_delete_disables_and_leaves_only_the_tenants_groups(
    client: AuthentikClient, made: Made
) -> None:
    tenant, _, _ = tenant_with_group(made)
    other_name = unique("other")
    made.groups.append(other_name)
    other = client.create_group(name=other_name, parent=None, attributes={})
    created = USERS.create(user_inputs(made, tenant, [tenant]))
    assert created.outs is not None
    client.add_user(other, live_user(client, created.id))

    USERS.delete(created.id, created.outs)

    revoked = live_user(client, created.id)  # disabled, never deleted: the audit trail stays
    assert not revoked.is_active
    assert revoked.groups == (other.pk,)
    USERS.delete(created.id, created.outs)  # a rerun changes nothing
    client.delete_user(revoked)
    USERS.delete(created.id, created.outs)  # a user already gone is fine


def test_an_abandoned_onboardings_user_is_deleted_and_the_flag_survives_update_and_read(
    client: AuthentikClient, made: Made
) -> None:
    """Issue 46, item 1: the delete reads the flag from the outputs the `up` and a refresh
    recorded, so both must keep it."""
    tenant, _, _ = tenant_with_group(made)
    inputs = user_inputs(made, tenant, [tenant])
    created = USERS.create(inputs)
    assert created.outs is not None
    updated = USERS.update(created.id, created.outs, {**inputs, "abandoned": True})
    assert updated.outs is not None
    assert updated.outs["abandoned"] is True
    read = USERS.read(created.id, updated.outs)
    assert read.outs is not None
    assert read.outs["abandoned"] is True
    USERS.delete(created.id, read.outs)
    assert client.get_user(int(created.id)) is None  # deleted: its uid is free again


def test_read_of_a_vanished_object_gives_an_empty_id() -> None:
    tenant = unique("t")
    assert GROUPS.read(str(uuid.uuid4()), {"tenant": tenant}).id == ""
    assert USERS.read("987654321", {"tenant": tenant}).id == ""


# check and diff (no backend)


def test_check_lists_every_bad_input_and_passes_unknowns() -> None:
    result = USERS.check(
        {},
        {
            "tenant": "Tenant Foo",
            "username": "Alice",
            "name": "",
            "email": "alice",
            "uid": 0,
            "gid": True,
            "ssh_keys": [],
            "groups": UNKNOWN,
        },
    )
    assert sorted(f.property for f in result.failures) == [
        "email",
        "gid",
        "name",
        "ssh_keys",
        "tenant",
        "uid",
        "username",
    ]
    # What is not known yet is passed on as it is; check runs again once it is known.
    assert result.inputs["groups"] == UNKNOWN

    bad_attributes = GROUPS.check(
        {},
        {"tenant": "t-a", "name": "t-a", "parent": TENANTS, "attributes": {"gidNumber": "1"}},
    )
    assert sorted(f.property for f in bad_attributes.failures) == ["attributes", "gid"]


def test_check_takes_whole_floats_and_sorts_groups() -> None:
    result = USERS.check(
        {},
        {
            "tenant": "t-a",
            "username": "alice",
            "name": "Alice",
            "email": "alice@t-a.example",
            "uid": 2001.0,
            "gid": 4001.0,
            "ssh_keys": KEYS,
            "groups": ["t-a-admins", "t-a", "t-a"],
        },
    )
    assert result.failures == []
    assert (result.inputs["uid"], result.inputs["groups"]) == (2001, ["t-a", "t-a-admins"])


def test_diff_replaces_only_for_the_name_and_username() -> None:
    group = {"tenant": "t-a", "name": "t-a", "parent": TENANTS, "gid": 4001, "attributes": {}}
    outs = {**group, "marked": True, "pk": str(uuid.uuid4()), "num_pk": 12345}
    assert GROUPS.diff("x", outs, group).changes is False
    assert GROUPS.diff("x", outs, {**group, "gid": 4002}).replaces == []
    assert GROUPS.diff("x", outs, {**group, "name": "t-b"}).replaces == ["name"]
    assert GROUPS.diff("x", outs, {**group, "name": UNKNOWN}).replaces == ["name"]

    user = {"tenant": "t-a", "username": "alice", "name": "A", "email": "a@t.example"}
    user_outs = {**user, "marked": True, "is_active": True, "pk": 7, "uuid": "u"}
    assert USERS.diff("7", user_outs, user).changes is False
    assert USERS.diff("7", {**user_outs, "is_active": False}, user).changes is True
    assert USERS.diff("7", user_outs, {**user, "email": "b@t.example"}).replaces == []
    assert USERS.diff("7", user_outs, {**user, "username": "bob"}).replaces == ["username"]


# failures


def test_backend_down_fails_after_bounded_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("AUTHENTIK_URL", f"http://127.0.0.1:{port}")

    with pytest.raises(AuthentikError, match=r"connection to .* failed after 2 attempts"):
        GROUPS.read(str(uuid.uuid4()), {"tenant": "t-a"})


def test_bad_token_is_403_and_never_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "not-a-valid-token-" + uuid.uuid4().hex
    monkeypatch.setenv("AUTHENTIK_TOKEN", token)

    with pytest.raises(AuthentikError) as failed:
        USERS.read("1", {"tenant": "t-a"})

    message = str(failed.value)
    assert "HTTP 403" in message
    assert "Token invalid/expired" in message
    assert token not in message


def test_settings_name_what_is_missing() -> None:
    with pytest.raises(AuthentikError, match="AUTHENTIK_URL is not set"):
        Settings.from_environment({})
    with pytest.raises(AuthentikError, match="AUTHENTIK_TOKEN nor AUTHENTIK_TOKEN_FILE"):
        Settings.from_environment({"AUTHENTIK_URL": "http://authentik.example"})


def test_providers_pickle_without_token_or_endpoint() -> None:
    settings = Settings.from_environment()
    secrets = (settings.token.encode(), settings.url.encode(), b"AUTHENTIK_URL")
    for provider in (GROUPS, USERS):
        for serialized in (
            pickle.dumps(provider),
            # What Pulumi writes into the state: dill.dumps(provider, recurse=True), in base64.
            base64.b64decode(serialize_provider(provider)),
        ):
            assert not [s for s in secrets if s in serialized]
        assert vars(provider) == {}


def test_an_erased_user_keeps_username_and_uid_and_loses_what_its_logins_left(
    client: AuthentikClient, made: Made, sandbox_url: str
) -> None:
    tenant, _, _ = tenant_with_group(made)
    created = USERS.create(user_inputs(made, tenant, [tenant]))
    assert created.outs is not None
    username = created.outs["username"]
    others = USERS.create(user_inputs(made, tenant, [tenant], uid=2501))
    assert others.outs is not None
    for who, ip in ((username, "203.0.113.7"), (others.outs["username"], "203.0.113.8")):
        body = {"username": who, "client_ip": ip, "user_agent": "OpenSSH_9.6"}
        assert httpx.post(f"{sandbox_url}/_emulator/logins", json=body).status_code == 201

    erased = {**created.outs, "name": "erased user", "email": "", "erased": True}
    updated = USERS.update(created.id, created.outs, checked(USERS, erased))
    assert updated.outs is not None
    assert updated.outs["erased"] is True

    user = live_user(client, created.id)
    assert (user.username, user.name, user.email) == (username, "erased user", "")
    assert user.attributes["uidNumber"] == "2500"
    with authentik_api() as api:
        events = api.get("/events/events/", params={"username": username}).json()["results"]
        assert [(e["client_ip"], e["user"]["email"]) for e in events] == [(None, "")]
        assert "http_request" not in events[0]["context"]
        sessions = api.get(
            "/core/authenticated_sessions/", params={"user__username": username}
        ).json()
        assert sessions["results"] == []
        theirs = api.get("/events/events/", params={"username": others.outs["username"]}).json()
        assert [e["client_ip"] for e in theirs["results"]] == ["203.0.113.8"]
    # Done once: a rerun finds nothing left to redact.
    assert client.redact_events(user) == 0
    assert client.end_sessions(user) == 0
