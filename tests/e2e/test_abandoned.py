"""Rolling back an onboarding that went wrong (issue 46, item 1): `lifecycle.abandoned` lets
`pulumi destroy` delete the tenant whole at stage active, keeping nothing (no archive, no
tombstone), once it is read live that the tenant never ran a job nor wrote a file. The preflight
reads it when the flag is set, the offboarding gate again at destroy, and each refusal names
what it found. A tenant that ran a job is refused the same way (test_offboarding's, which did)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.generated_tenants import sized_tenant
from sandbox.layout import SandboxLayout
from sandbox.project import project_copy
from tests.backends import (
    allow_rehearsal,
    authentik,
    file_backend,
    live_numbers,
    mounted,
    pulumi,
    run_pulumi,
    sacctmgr,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SUFFIX = uuid.uuid4().hex[:5]
SLUG, SHORT = f"tenant-ab{SUFFIX}", f"ab{SUFFIX}"
USERS = [f"{SHORT}u000", f"{SHORT}u001"]


class Abandoned:
    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.project, self.env = project, env
        self.spec_file = project / "tenants" / f"{SLUG}.yaml"

    def pulumi(self, *args: str) -> str:
        return run_pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=600)

    def try_pulumi(self, *args: str) -> tuple[int, str]:
        done = pulumi(self.env, self.project, *args, "--stack", SLUG, timeout=600)
        return done.returncode, done.stdout + done.stderr

    def lifecycle(self, **changes: Any) -> None:
        spec = yaml.safe_load(self.spec_file.read_text())
        spec["lifecycle"].update(changes)
        self.spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))

    def resources(self) -> list[str]:
        state = json.loads(self.pulumi("stack", "export"))["deployment"]
        return [r["urn"] for r in state.get("resources") or []]


@pytest.fixture(scope="module")
def tenant(tmp_path_factory: pytest.TempPathFactory, sandbox: SandboxLayout) -> Iterator[Abandoned]:
    work = tmp_path_factory.mktemp("abandoned")
    project = project_copy(work / "project")
    for example in (project / "tenants").glob("*.yaml"):
        example.unlink()
    number = max(live_numbers() | {46999}) + 1
    spec = sized_tenant(SLUG, len(USERS), short=SHORT, uid_start=number, gid=number + len(USERS))
    spec["lifecycle"]["rehearsal"] = False  # onboarded for real
    (project / "tenants" / f"{SLUG}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    tenant = Abandoned(project, file_backend(work / "state"))
    tenant.pulumi("stack", "init")
    tenant.pulumi("up", "--yes", "--skip-preview")
    try:
        yield tenant
    finally:
        if sacctmgr("show", "account", SLUG, "format=account"):
            allow_rehearsal(SLUG)
            tenant.lifecycle(rehearsal=True, abandoned=False)
            tenant.pulumi("destroy", "--yes", "--skip-preview")


def test_abandoning_a_tenant_a_user_wrote_a_file_for_is_refused_naming_it(
    tenant: Abandoned,
) -> None:
    written = mounted("Root", "cluster-home", f"{SLUG}/{USERS[1]}") / "results.bin"
    written.write_bytes(b"x" * 1234)
    try:
        tenant.lifecycle(abandoned=True)
        code, said = tenant.try_pulumi("preview")
        assert code != 0
        assert "lifecycle.abandoned" in said
        assert f"holds 1 files of 1234 bytes: {USERS[1]}/results.bin" in said
    finally:
        written.unlink()
        tenant.lifecycle(abandoned=False)


def test_the_gate_reads_again_then_destroy_deletes_the_tenant_keeping_nothing(
    tenant: Abandoned,
) -> None:
    tenant.lifecycle(abandoned=True)
    tenant.pulumi("up", "--yes", "--skip-preview")
    # Written after the `up` that recorded the flag: the gate reads again before any delete.
    written = mounted("Root", "cluster-scratch", SLUG) / "checkpoint.pt"
    written.write_bytes(b"y" * 10)
    before = tenant.resources()
    code, said = tenant.try_pulumi("destroy", "--yes", "--skip-preview")
    assert code != 0
    assert "an abandoned onboarding deletes the tenant whole" in said
    assert "holds 1 files of 10 bytes: checkpoint.pt" in said
    assert tenant.resources() == before
    written.unlink()
    tenant.pulumi("destroy", "--yes", "--skip-preview")
    # Nothing kept: no protected resource, no tombstone, the uids given back.
    assert tenant.resources() == []
    with authentik() as api:
        for user in USERS:
            assert api.get("/core/users/", params={"username": user}).json()["results"] == []
    assert sacctmgr("show", "account", SLUG, "format=account") == []
    assert not mounted("Root", "cluster-home", SLUG).exists()
    assert not mounted("Root", "cluster-scratch", SLUG).exists()
