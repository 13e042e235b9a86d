"""Contract tests of the Authentik 2024.10 API emulator (sandbox.authentik), run as a real process.

Every reply that has a schema is parsed with the official client generated for the same server
version (authentik-client 2024.10.*), and its keys must equal the model's, so the emulator cannot
drift from the real API in either direction. Tests share one emulator and keep apart by giving
everything they create a unique name and user path.
"""

from __future__ import annotations

import re
import stat
import uuid
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
import pytest
from authentik_client.models.authenticated_session import AuthenticatedSession
from authentik_client.models.config import Config
from authentik_client.models.event import Event
from authentik_client.models.generic_error import GenericError
from authentik_client.models.group import Group
from authentik_client.models.group_member import GroupMember
from authentik_client.models.paginated_authenticated_session_list import (
    PaginatedAuthenticatedSessionList,
)
from authentik_client.models.paginated_event_list import PaginatedEventList
from authentik_client.models.paginated_group_list import PaginatedGroupList
from authentik_client.models.paginated_token_list import PaginatedTokenList
from authentik_client.models.paginated_user_list import PaginatedUserList
from authentik_client.models.session_user import SessionUser
from authentik_client.models.token import Token
from authentik_client.models.token_view import TokenView
from authentik_client.models.user import User
from authentik_client.models.user_group import UserGroup
from authentik_client.models.user_self import UserSelf
from authentik_client.models.version import Version
from pydantic import BaseModel

from tests.contract.conftest_authentik import (
    BOOTSTRAP_KEY,
    Emulator,
    admin,
    emulator,
    fresh_emulator,
)

__all__ = ["admin", "emulator", "fresh_emulator"]  # fixtures, imported for pytest to find


M_co = TypeVar("M_co", bound=BaseModel, covariant=True)


class Generated(Protocol[M_co]):
    """A model class of the generated client."""

    def from_dict(self, obj: dict[str, Any] | None) -> M_co | None: ...


def parsed(model: Generated[M_co], data: Any, *, exact: bool = True) -> M_co:
    """Parse with the official model, then check the reply's keys against the model's.

    Serializer replies carry every field, so their keys must equal the model's; error bodies and
    SessionUser (exact=False) only need the required ones and nothing the model does not know.
    """
    assert isinstance(data, dict)
    result = model.from_dict(data)
    assert result is not None
    fields = type(result).model_fields
    name = type(result).__name__
    if exact:
        assert set(data) == set(fields), name
    else:
        required = {n for n, f in fields.items() if f.is_required()}
        assert required <= set(data) <= set(fields), name
    return result


def as_user(data: Any) -> User:
    user = parsed(User, data)
    for group in data["groups_obj"] or []:
        parsed(UserGroup, group)
    return user


def as_group(data: Any) -> Group:
    group = parsed(Group, data)
    for member in data["users_obj"] or []:
        parsed(GroupMember, member)
    return group


def as_token(data: Any) -> Token:
    token = parsed(Token, data)
    as_user(data["user_obj"])
    return token


def as_user_page(data: Any) -> PaginatedUserList:
    for user in data["results"]:
        as_user(user)
    return parsed(PaginatedUserList, data)


def as_group_page(data: Any) -> PaginatedGroupList:
    for group in data["results"]:
        as_group(group)
    return parsed(PaginatedGroupList, data)


def error_detail(reply: httpx.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    return parsed(GenericError, reply.json(), exact=False).detail


def field_errors(reply: httpx.Response) -> dict[str, list[str]]:
    assert reply.status_code == 400, reply.text
    body: dict[str, list[str]] = reply.json()
    return body


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_user(api: httpx.Client, **fields: Any) -> dict[str, Any]:
    body = {"username": unique("user"), "name": "Test User", **fields}
    reply = api.post("/core/users/", json=body)
    assert reply.status_code == 201, reply.text
    as_user(reply.json())
    created: dict[str, Any] = reply.json()
    return created


def create_group(api: httpx.Client, **fields: Any) -> dict[str, Any]:
    reply = api.post("/core/groups/", json={"name": unique("group"), **fields})
    assert reply.status_code == 201, reply.text
    as_group(reply.json())
    created: dict[str, Any] = reply.json()
    return created


def create_token(api: httpx.Client, user_pk: int, **fields: Any) -> str:
    """A new API token for the user; returns its key."""
    identifier = unique("token")
    body = {"identifier": identifier, "intent": "api", "user": user_pk, **fields}
    reply = api.post("/core/tokens/", json=body)
    assert reply.status_code == 201, reply.text
    as_token(reply.json())
    key = parsed(TokenView, api.get(f"/core/tokens/{identifier}/view_key/").json())
    return key.key


# authentication


def test_root_config_answers_without_a_token(emulator: Emulator) -> None:
    with emulator.client(key=None) as anonymous:
        config = parsed(Config, anonymous.get("/root/config/").json())
    assert config.error_reporting.enabled is False
    # AllowAny still authenticates a token that is sent: a bad one is refused.
    with emulator.client(key="not-a-token") as bad:
        assert error_detail(bad.get("/root/config/"), 403) == "Token invalid/expired"


def test_missing_invalid_and_malformed_credentials_are_403(emulator: Emulator) -> None:
    with emulator.client(key=None) as anonymous:
        reply = anonymous.get("/core/users/")
        assert error_detail(reply, 403) == "Authentication credentials were not provided."
    with emulator.client(key="wrong") as wrong:
        assert error_detail(wrong.get("/core/users/"), 403) == "Token invalid/expired"
    reply = httpx.get(
        f"{emulator.url}/api/v3/core/users/", headers={"Authorization": f"Basic {BOOTSTRAP_KEY}"}
    )
    assert error_detail(reply, 403) == "Unsupported authentication type"


def test_first_start_creates_akadmin_and_the_bootstrap_token(admin: httpx.Client) -> None:
    page = as_user_page(admin.get("/core/users/", params={"username": "akadmin"}).json())
    (akadmin,) = page.results
    assert akadmin.is_superuser
    assert [g.name for g in akadmin.groups_obj or []] == ["authentik Admins"]
    # `original` is only there while impersonating.
    reply = admin.get("/core/users/me/").json()
    me = parsed(SessionUser, reply, exact=False)
    assert set(reply) == {"user"}
    parsed(UserSelf, reply["user"])
    assert me.user.username == "akadmin"
    assert me.user.pk == akadmin.pk

    tokens = admin.get("/core/tokens/", params={"identifier": "authentik-bootstrap-token"})
    (token,) = parsed(PaginatedTokenList, tokens.json()).results
    assert token.intent == "api"
    assert token.expiring is False
    assert token.user == akadmin.pk
    view = admin.get("/core/tokens/authentik-bootstrap-token/view_key/").json()
    assert parsed(TokenView, view).key == BOOTSTRAP_KEY


def test_missing_key_file_is_created_with_a_random_key(tmp_path: Path) -> None:
    running = Emulator(tmp_path, key=None)
    running.start()
    try:
        assert stat.S_IMODE(running.key_file.stat().st_mode) == 0o600
        assert len(running.key) >= 32
        with running.client(key=running.key) as api:
            assert api.get("/core/users/me/").json()["user"]["username"] == "akadmin"
    finally:
        running.stop()


def test_log_has_one_line_per_request_and_never_the_token(emulator: Emulator) -> None:
    marker = unique("log-marker")
    with emulator.client() as api:
        api.get("/core/users/", params={"username": marker})
    lines = [line for line in emulator.log_text().splitlines() if marker in line]
    assert len(lines) == 1
    assert "GET /api/v3/core/users/?username=" in lines[0]
    assert " 200 " in lines[0]
    assert BOOTSTRAP_KEY not in emulator.log_text()


# users


def test_user_create_retrieve_patch_put_delete(admin: httpx.Client) -> None:
    username = unique("alice")
    group = create_group(admin)
    created = create_user(
        admin, username=username, email=f"{username}@tenant.example", groups=[group["pk"]]
    )
    user = as_user(created)
    assert (user.path, user.type, user.is_active) == ("users", "internal", True)
    assert user.is_superuser is False
    assert user.groups == [group["pk"]]
    assert [g.name for g in user.groups_obj or []] == [group["name"]]
    assert user.attributes == {}
    assert re.fullmatch(r"[0-9a-f]{64}", user.uid)
    assert str(uuid.UUID(user.uuid)) == user.uuid

    fetched = as_user(admin.get(f"/core/users/{user.pk}/").json())
    assert fetched == user

    patched = as_user(admin.patch(f"/core/users/{user.pk}/", json={"name": "Alice R"}).json())
    assert patched.name == "Alice R"
    assert patched.email == user.email  # PATCH leaves out what it does not mention

    # PUT is a full write: required fields must be there.
    assert field_errors(admin.put(f"/core/users/{user.pk}/", json={"username": username})) == {
        "name": ["This field is required."]
    }
    put = admin.put(f"/core/users/{user.pk}/", json={"username": username, "name": "Alice"})
    assert put.status_code == 200
    assert as_user(put.json()).name == "Alice"
    # `groups` defaults to [] on a full write: a PUT that leaves it out drops every membership.
    assert as_user(put.json()).groups == []

    deleted = admin.delete(f"/core/users/{user.pk}/")
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert error_detail(admin.get(f"/core/users/{user.pk}/"), 404) == "Not found."


def test_unknown_user_is_404(admin: httpx.Client) -> None:
    assert error_detail(admin.get("/core/users/999999/"), 404) == "Not found."
    assert error_detail(admin.get("/core/users/not-a-number/"), 404) == "Not found."
    assert error_detail(admin.patch("/core/users/999999/", json={"name": "x"}), 404) == "Not found."
    assert error_detail(admin.delete("/core/users/999999/"), 404) == "Not found."


def test_duplicate_username_is_400(admin: httpx.Client) -> None:
    username = unique("dup")
    create_user(admin, username=username)
    reply = admin.post("/core/users/", json={"username": username, "name": "Again"})
    assert field_errors(reply) == {"username": ["This field must be unique."]}


def test_username_and_field_validation(admin: httpx.Client) -> None:
    assert field_errors(admin.post("/core/users/", json={"username": "   ", "name": "x"})) == {
        "username": ["This field may not be blank."]
    }
    assert field_errors(admin.post("/core/users/", json={})) == {
        "username": ["This field is required."],
        "name": ["This field is required."],
    }
    too_long = admin.post("/core/users/", json={"username": "u" * 151, "name": "x"})
    assert field_errors(too_long) == {
        "username": ["Ensure this field has no more than 150 characters."]
    }
    bad = admin.post(
        "/core/users/",
        json={
            "username": unique("v"),
            "name": "x",
            "email": "not-an-email",
            "attributes": ["not", "a", "dict"],
            "path": "/leading",
            "groups": [str(uuid.uuid4())],
            "type": "internal_service_account",
        },
    )
    errors = field_errors(bad)
    assert errors["email"] == ["Enter a valid email address."]
    assert errors["attributes"] == ["Value must be a dictionary, and not have any duplicate keys."]
    assert errors["path"] == ["No leading or trailing slashes allowed."]
    assert re.fullmatch(r'Invalid pk "[-0-9a-f]+" - object does not exist\.', errors["groups"][0])
    assert errors["type"] == ["Setting a user to internal service account is not allowed."]
    # CharField trims surrounding whitespace rather than rejecting it.
    username = unique("trim")
    assert create_user(admin, username=f"  {username} ")["username"] == username


def test_is_active_toggle_and_filter(admin: httpx.Client) -> None:
    path = unique("active")
    user = create_user(admin, path=path)
    off = as_user(admin.patch(f"/core/users/{user['pk']}/", json={"is_active": False}).json())
    assert off.is_active is False
    inactive = admin.get("/core/users/", params={"path": path, "is_active": "false"}).json()
    assert [u.pk for u in as_user_page(inactive).results] == [user["pk"]]
    active = admin.get("/core/users/", params={"path": path, "is_active": "true"}).json()
    assert as_user_page(active).results == []
    on = as_user(admin.patch(f"/core/users/{user['pk']}/", json={"is_active": True}).json())
    assert on.is_active is True


def test_user_filters(admin: httpx.Client) -> None:
    path = unique("filters")
    group = create_group(admin)
    alice = create_user(
        admin, path=path, email=f"{path}@x.example", groups=[group["pk"]], attributes={"n": "1"}
    )
    bob = create_user(admin, path=path, name="Bob Builder", attributes={"n": 1})

    def pks(**params: Any) -> list[int]:
        reply = admin.get("/core/users/", params={"path": path, **params})
        assert reply.status_code == 200, reply.text
        return [u.pk for u in as_user_page(reply.json()).results]

    assert pks(username=alice["username"]) == [alice["pk"]]
    assert pks(email=f"{path}@x.example") == [alice["pk"]]
    assert pks(groups_by_name=group["name"]) == [alice["pk"]]
    assert pks(groups_by_pk=group["pk"]) == [alice["pk"]]
    assert pks(uuid=bob["uuid"]) == [bob["pk"]]
    assert pks(search="builder") == [bob["pk"]]
    # Attribute values compare as JSON: the string "1" is not the number 1.
    assert pks(attributes='{"n": "1"}') == [alice["pk"]]
    assert pks(attributes='{"n": 1}') == [bob["pk"]]

    unknown = admin.get("/core/users/", params={"groups_by_name": "no-such-group"})
    assert field_errors(unknown) == {
        "groups_by_name": [
            "Select a valid choice. no-such-group is not one of the available choices."
        ]
    }
    assert field_errors(admin.get("/core/users/", params={"uuid": "nope"})) == {
        "uuid": ["Enter a valid UUID."]
    }
    bad_json = admin.get("/core/users/", params={"attributes": "{not json"})
    assert bad_json.status_code == 400
    assert bad_json.json() == ["filter: failed to parse JSON"]

    without_groups = admin.get(
        "/core/users/", params={"path": path, "include_groups": "false"}
    ).json()
    assert all(u.groups_obj is None for u in as_user_page(without_groups).results)


def test_pagination_across_pages(admin: httpx.Client) -> None:
    path = unique("pages")
    names = sorted(create_user(admin, path=path)["username"] for _ in range(5))

    def page(number: int | str) -> PaginatedUserList:
        reply = admin.get("/core/users/", params={"path": path, "page_size": 2, "page": number})
        assert reply.status_code == 200, reply.text
        return as_user_page(reply.json())

    first, second, third = page(1), page(2), page(3)
    assert [u.username for p in (first, second, third) for u in p.results] == names
    assert first.pagination.to_dict() == {
        "next": 2,
        "previous": 0,
        "count": 5,
        "current": 1,
        "total_pages": 3,
        "start_index": 1,
        "end_index": 2,
    }
    assert (second.pagination.previous, second.pagination.next) == (1, 3)
    assert (third.pagination.next, third.pagination.start_index, third.pagination.end_index) == (
        0,
        5,
        5,
    )
    assert page("last").pagination.current == 3
    beyond = admin.get("/core/users/", params={"path": path, "page_size": 2, "page": 4})
    assert error_detail(beyond, 404) == "Invalid page."

    empty = as_user_page(admin.get("/core/users/", params={"path": unique("none")}).json())
    assert empty.pagination.to_dict() == {
        "next": 0,
        "previous": 0,
        "count": 0,
        "current": 1,
        "total_pages": 1,
        "start_index": 0,
        "end_index": 0,
    }


# groups


def test_group_create_retrieve_update_delete(admin: httpx.Client) -> None:
    parent = create_group(admin)
    member = create_user(admin)
    name = unique("tenant")
    created = as_group(
        create_group(
            admin,
            name=name,
            parent=parent["pk"],
            users=[member["pk"]],
            attributes={"tenant_slug": name},
        )
    )
    assert created.num_pk == int(str(uuid.UUID(created.pk).int)[:5])
    assert (created.parent, created.parent_name) == (parent["pk"], parent["name"])
    assert created.users == [member["pk"]]
    assert (created.roles, created.roles_obj) == ([], [])
    # users_obj comes with every reply unless include_users is turned off.
    assert [m.username for m in created.users_obj or []] == [member["username"]]
    trimmed = admin.get(f"/core/groups/{created.pk}/", params={"include_users": "false"})
    assert as_group(trimmed.json()).users_obj is None
    full = admin.get(f"/core/groups/{created.pk}/", params={"include_users": "true"})
    assert [m.pk for m in as_group(full.json()).users_obj or []] == [member["pk"]]

    user = as_user(admin.get(f"/core/users/{member['pk']}/").json())
    assert user.groups == [created.pk]

    patched = admin.patch(f"/core/groups/{created.pk}/", json={"attributes": {"gidNumber": "4999"}})
    assert as_group(patched.json()).attributes == {"gidNumber": "4999"}
    # PUT without users empties the group: `users` defaults to [] on a full write.
    put = as_group(admin.put(f"/core/groups/{created.pk}/", json={"name": name}).json())
    assert put.users == []
    assert put.parent == parent["pk"]

    assert admin.delete(f"/core/groups/{created.pk}/").status_code == 204
    assert error_detail(admin.get(f"/core/groups/{created.pk}/"), 404) == "Not found."
    assert error_detail(admin.get("/core/groups/not-a-uuid/"), 404) == "Not found."


def test_duplicate_group_name_is_400(admin: httpx.Client) -> None:
    group = create_group(admin)
    reply = admin.post("/core/groups/", json={"name": group["name"]})
    assert field_errors(reply) == {"name": ["This field must be unique."]}


def test_group_validation(admin: httpx.Client) -> None:
    group = create_group(admin)
    itself = admin.patch(f"/core/groups/{group['pk']}/", json={"parent": group["pk"]})
    assert field_errors(itself) == {"parent": ["Cannot set group as parent of itself."]}
    errors = field_errors(
        admin.post("/core/groups/", json={"name": unique("g"), "users": [999999], "attributes": 1})
    )
    assert errors == {
        "users": ['Invalid pk "999999" - object does not exist.'],
        "attributes": ["Value must be a dictionary, and not have any duplicate keys."],
    }


def test_add_user_and_remove_user(admin: httpx.Client) -> None:
    group = create_group(admin)
    user = create_user(admin)
    added = admin.post(f"/core/groups/{group['pk']}/add_user/", json={"pk": user["pk"]})
    assert (added.status_code, added.content) == (204, b"")
    assert as_group(admin.get(f"/core/groups/{group['pk']}/").json()).users == [user["pk"]]
    assert as_user(admin.get(f"/core/users/{user['pk']}/").json()).groups == [group["pk"]]
    # Adding twice is harmless.
    again = admin.post(f"/core/groups/{group['pk']}/add_user/", json={"pk": user["pk"]})
    assert again.status_code == 204
    assert as_group(admin.get(f"/core/groups/{group['pk']}/").json()).users == [user["pk"]]

    removed = admin.post(f"/core/groups/{group['pk']}/remove_user/", json={"pk": user["pk"]})
    assert removed.status_code == 204
    assert as_group(admin.get(f"/core/groups/{group['pk']}/").json()).users == []

    for action in ("add_user", "remove_user"):
        unknown_user = admin.post(f"/core/groups/{group['pk']}/{action}/", json={"pk": 999999})
        assert error_detail(unknown_user, 404) == "Not found."
        unknown_group = admin.post(f"/core/groups/{uuid.uuid4()}/{action}/", json={"pk": 1})
        assert error_detail(unknown_group, 404) == "Not found."


def test_deleting_a_parent_group_orphans_its_children(admin: httpx.Client) -> None:
    parent = create_group(admin)
    child = create_group(admin, parent=parent["pk"])
    assert admin.delete(f"/core/groups/{parent['pk']}/").status_code == 204
    orphan = as_group(admin.get(f"/core/groups/{child['pk']}/").json())
    assert (orphan.parent, orphan.parent_name) == (None, None)


def test_group_filters_and_pagination(admin: httpx.Client) -> None:
    tag = unique("gfilter")
    member = create_user(admin)
    groups = [create_group(admin, name=f"{tag}-{i}", attributes={"tag": tag}) for i in range(3)]
    admin.post(f"/core/groups/{groups[1]['pk']}/add_user/", json={"pk": member["pk"]})

    def names(**params: Any) -> list[str]:
        reply = admin.get("/core/groups/", params=params)
        assert reply.status_code == 200, reply.text
        return [g.name for g in as_group_page(reply.json()).results]

    assert names(name=groups[0]["name"]) == [groups[0]["name"]]
    assert names(members_by_username=member["username"]) == [groups[1]["name"]]
    assert names(members_by_pk=member["pk"]) == [groups[1]["name"]]
    assert names(attributes=f'{{"tag": "{tag}"}}') == [g["name"] for g in groups]
    assert names(search=tag, page_size=2, page=2) == [groups[2]["name"]]
    assert "authentik Admins" in names(is_superuser="true")
    unknown = admin.get("/core/groups/", params={"members_by_pk": 999999})
    assert field_errors(unknown) == {
        "members_by_pk": ["Select a valid choice. 999999 is not one of the available choices."]
    }
    listed = admin.get(
        "/core/groups/", params={"name": groups[1]["name"], "include_users": "false"}
    )
    assert as_group_page(listed.json()).results[0].users_obj is None


# tokens


def test_token_lifecycle(admin: httpx.Client, emulator: Emulator) -> None:
    user = create_user(admin)
    identifier = unique("svc")
    body = {"identifier": identifier, "intent": "api", "user": user["pk"], "expiring": False}
    created = admin.post("/core/tokens/", json={**body, "description": "for tests"})
    assert created.status_code == 201, created.text
    token = as_token(created.json())
    assert (token.identifier, token.user, token.expiring) == (identifier, user["pk"], False)
    assert "key" not in created.json()

    listed = admin.get("/core/tokens/", params={"identifier": identifier}).json()
    assert [t.pk for t in parsed(PaginatedTokenList, listed).results] == [token.pk]
    view = admin.get(f"/core/tokens/{identifier}/view_key/").json()
    key = parsed(TokenView, view).key
    with emulator.client(key=key) as as_user_client:
        me = as_user_client.get("/core/users/me/").json()
        assert parsed(SessionUser, me, exact=False).user.pk == user["pk"]
        # Without RBAC roles, a plain user sees no users and may create none.
        assert as_user_page(as_user_client.get("/core/users/").json()).results == []
        denied = as_user_client.post("/core/users/", json={"username": unique("x"), "name": "x"})
        assert error_detail(denied, 403) == "You do not have permission to perform this action."

    duplicate = admin.post("/core/tokens/", json=body)
    assert field_errors(duplicate) == {"identifier": ["Token with this identifier already exists."]}
    wrong_intent = admin.post(
        "/core/tokens/", json={**body, "identifier": unique("t"), "intent": "recovery"}
    )
    assert field_errors(wrong_intent) == {"intent": ["Invalid intent recovery"]}

    assert admin.delete(f"/core/tokens/{identifier}/").status_code == 204
    assert error_detail(admin.get(f"/core/tokens/{identifier}/view_key/"), 404) == "Not found."
    with emulator.client(key=key) as revoked:
        assert error_detail(revoked.get("/core/users/me/"), 403) == "Token invalid/expired"


def test_expired_token_is_rejected(fresh_emulator: Emulator) -> None:
    fresh_emulator.start()
    with fresh_emulator.client() as api:
        user = create_user(api)
        expiring = create_token(api, user["pk"])  # API tokens expire after 30 minutes
        lasting = create_token(api, user["pk"], expiring=False)
        with fresh_emulator.client(key=expiring) as client:
            assert client.get("/core/users/me/").status_code == 200
        moved = httpx.post(f"{fresh_emulator.url}/_emulator/clock/", json={"advance_seconds": 1860})
        assert moved.status_code == 200
        with fresh_emulator.client(key=expiring) as client:
            assert error_detail(client.get("/core/users/me/"), 403) == "Token invalid/expired"
        with fresh_emulator.client(key=lasting) as client:
            assert client.get("/core/users/me/").status_code == 200


def test_token_of_an_inactive_user_is_rejected(admin: httpx.Client, emulator: Emulator) -> None:
    user = create_user(admin)
    key = create_token(admin, user["pk"], expiring=False)
    with emulator.client(key=key) as client:
        assert client.get("/core/users/me/").status_code == 200
        admin.patch(f"/core/users/{user['pk']}/", json={"is_active": False})
        assert error_detail(client.get("/core/users/me/"), 403) == "Token invalid/expired"
        admin.patch(f"/core/users/{user['pk']}/", json={"is_active": True})
        assert client.get("/core/users/me/").status_code == 200


# what the LDAP outpost publishes


def ldap(emulator: Emulator, kind: str, name: str) -> dict[str, Any]:
    reply = httpx.get(f"{emulator.url}/_emulator/ldap/{kind}/{name}")
    assert reply.status_code == 200, reply.text
    found: dict[str, Any] = reply.json()
    return found


def test_ldap_numbers_derived_from_pk_and_num_pk(admin: httpx.Client, emulator: Emulator) -> None:
    group = create_group(admin)
    user = create_user(admin, groups=[group["pk"]], attributes={"ssh_keys": "ssh-ed25519 AAAA a@b"})
    entry = ldap(emulator, "users", user["username"])
    assert (entry["uidNumber"], entry["gidNumber"]) == (2000 + user["pk"], 2000 + user["pk"])
    assert entry["virtual_group"]["gidNumber"] == 2000 + user["pk"]
    assert entry["attributes"]["ssh_keys"] == ["ssh-ed25519 AAAA a@b"]
    assert entry["attributes"]["memberOf"] == [
        f"cn={group['name']},ou=groups,dc=ldap,dc=goauthentik,dc=io"
    ]
    published = ldap(emulator, "groups", group["name"])
    assert published["gidNumber"] == 4000 + group["num_pk"]
    assert published["attributes"]["member"] == [
        f"cn={user['username']},ou=users,dc=ldap,dc=goauthentik,dc=io"
    ]


def test_ldap_honours_string_numbers_everywhere(admin: httpx.Client, emulator: Emulator) -> None:
    group = create_group(admin, attributes={"gidNumber": "4321"})
    keys = ["ssh-ed25519 AAAA k1", "ssh-rsa AAAA k2"]
    user = create_user(
        admin, attributes={"uidNumber": "3100", "gidNumber": "4321", "sshPublicKey": keys}
    )
    entry = ldap(emulator, "users", user["username"])
    assert (entry["uidNumber"], entry["gidNumber"]) == (3100, 4321)
    assert entry["virtual_group"]["gidNumber"] == 4321
    assert entry["attributes"]["sshPublicKey"] == keys
    assert ldap(emulator, "groups", group["name"])["gidNumber"] == 4321


def test_ldap_ignores_integer_numbers_where_it_derives_them(
    admin: httpx.Client, emulator: Emulator
) -> None:
    user = create_user(admin, attributes={"uidNumber": 3200})
    entry = ldap(emulator, "users", user["username"])
    # The attribute itself is copied onto the entry, but the primary group (gidNumber, and the
    # user's virtual group) is derived as if it were absent: the identity comes out inconsistent.
    assert entry["uidNumber"] == 3200
    assert entry["gidNumber"] == 2000 + user["pk"]
    assert entry["virtual_group"]["gidNumber"] == 2000 + user["pk"]
    only_gid = create_user(admin, attributes={"gidNumber": 4444})
    other = ldap(emulator, "users", only_gid["username"])
    assert other["uidNumber"] == 2000 + only_gid["pk"]
    assert other["virtual_group"]["gidNumber"] == 2000 + only_gid["pk"]


def test_ldap_unknown_names_are_404(emulator: Emulator) -> None:
    assert httpx.get(f"{emulator.url}/_emulator/ldap/users/{unique('nobody')}").status_code == 404
    assert httpx.get(f"{emulator.url}/_emulator/ldap/groups/{unique('none')}").status_code == 404


# protocol edges


def test_unknown_paths_methods_and_bodies(admin: httpx.Client) -> None:
    assert error_detail(admin.get("/core/nothing-here/"), 404) == "Not found."
    assert error_detail(admin.delete("/core/users/"), 405) == 'Method "DELETE" not allowed.'
    reply = admin.post(
        "/core/users/", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert error_detail(reply, 400).startswith("JSON parse error - ")


# persistence


def test_state_survives_kill_9_and_restart(fresh_emulator: Emulator) -> None:
    fresh_emulator.start()
    with fresh_emulator.client() as api:
        group = create_group(api, attributes={"gidNumber": "4100"})
        user = create_user(api, groups=[group["pk"]], attributes={"uidNumber": "3000"})
        key = create_token(api, user["pk"], expiring=False)
        before_user = api.get(f"/core/users/{user['pk']}/").json()
        before_group = api.get(f"/core/groups/{group['pk']}/").json()

    fresh_emulator.kill()
    fresh_emulator.start()

    with fresh_emulator.client() as api:
        assert api.get(f"/core/users/{user['pk']}/").json() == before_user
        assert api.get(f"/core/groups/{group['pk']}/").json() == before_group
        admins = api.get("/core/users/", params={"username": "akadmin"}).json()
        assert as_user_page(admins).pagination.count == 1  # bootstrap did not run twice
        # pks come from a sequence: never reused, and continuing after a restart.
        assert create_user(api)["pk"] == user["pk"] + 1
    with fresh_emulator.client(key=key) as client:
        assert client.get("/core/users/me/").json()["user"]["pk"] == user["pk"]
    entry = ldap(fresh_emulator, "users", user["username"])
    assert (entry["uidNumber"], entry["gidNumber"]) == (3000, 3000)


def test_clock_rejects_bad_input(emulator: Emulator) -> None:
    reply = httpx.post(f"{emulator.url}/_emulator/clock/", json={"advance_seconds": "soon"})
    assert reply.status_code == 400


@pytest.mark.parametrize("key", ["", "Bearer"])
def test_header_without_a_key_counts_as_no_credentials(emulator: Emulator, key: str) -> None:
    reply = httpx.get(f"{emulator.url}/api/v3/core/users/", headers={"Authorization": key})
    assert error_detail(reply, 403) == "Authentication credentials were not provided."


# what a login leaves: audit events and sessions


def login(emulator: Emulator, username: str, client_ip: str) -> dict[str, Any]:
    body = {"username": username, "client_ip": client_ip, "user_agent": "curl/8.5.0"}
    reply = httpx.post(f"{emulator.url}/_emulator/logins", json=body, timeout=10)
    assert reply.status_code == 201, reply.text
    made: dict[str, Any] = reply.json()
    return made


def test_a_login_leaves_an_event_and_a_session_an_admin_may_redact_and_end(
    emulator: Emulator, admin: httpx.Client
) -> None:
    user = create_user(admin, email="who@tenant.example")
    other = create_user(admin)
    login(emulator, user["username"], "203.0.113.7")
    login(emulator, other["username"], "203.0.113.8")

    page = admin.get("/events/events/", params={"username": user["username"]}).json()
    [event] = parsed(PaginatedEventList, page).results
    assert event.action == "login"
    assert event.client_ip == "203.0.113.7"
    assert event.user == {
        "pk": user["pk"],
        "email": "who@tenant.example",
        "username": user["username"],
    }
    for raw in page["results"]:
        parsed(Event, raw)
    page = admin.get(
        "/core/authenticated_sessions/", params={"user__username": user["username"]}
    ).json()
    for raw in page["results"]:
        parsed(AuthenticatedSession, raw)
    [session] = parsed(PaginatedAuthenticatedSessionList, page).results
    assert (session.user, session.last_ip) == (user["pk"], "203.0.113.7")

    redacted = {"user": {**(event.user or {}), "email": ""}, "client_ip": None, "context": {}}
    reply = admin.patch(f"/events/events/{event.pk}/", json=redacted)
    assert reply.status_code == 200, reply.text
    assert (reply.json()["client_ip"], reply.json()["user"]["email"]) == (None, "")
    bad = admin.patch(f"/events/events/{event.pk}/", json={"client_ip": "somewhere"})
    assert field_errors(bad) == {"client_ip": ["Enter a valid IPv4 or IPv6 address."]}
    assert admin.delete(f"/core/authenticated_sessions/{session.uuid}/").status_code == 204
    assert admin.delete(f"/core/authenticated_sessions/{session.uuid}/").status_code == 404

    # The other user's are as they were; deleting a user ends its sessions, keeps its events.
    theirs = admin.get("/events/events/", params={"username": other["username"]}).json()
    assert [e["client_ip"] for e in theirs["results"]] == ["203.0.113.8"]
    assert admin.delete(f"/core/users/{other['pk']}/").status_code == 204
    left = admin.get(
        "/core/authenticated_sessions/", params={"user__username": other["username"]}
    ).json()
    assert left["results"] == []
    assert admin.get("/events/events/", params={"username": other["username"]}).json()["results"]


def test_admin_version_is_the_followed_release_and_a_superusers_to_read(
    admin: httpx.Client, emulator: Emulator
) -> None:
    version = parsed(Version, admin.get("/admin/version/").json())
    assert version.version_current == "2024.10.5"
    user = create_user(admin)
    identifier = unique("svc")
    body = {"identifier": identifier, "intent": "api", "user": user["pk"], "expiring": False}
    assert admin.post("/core/tokens/", json=body).status_code == 201
    key = parsed(TokenView, admin.get(f"/core/tokens/{identifier}/view_key/").json()).key
    with emulator.client(key=key) as as_user_client:
        denied = as_user_client.get("/admin/version/")
        assert error_detail(denied, 403) == "You do not have permission to perform this action."
