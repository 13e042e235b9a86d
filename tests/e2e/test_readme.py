"""The README's new-tenant block, run as written (one bash script, `set -e`) on the tests' sandbox
from a project of its own: doctor, new from the sample users file, check, the stack made with the
secrets provider, preview, up, status. What it made is then read back from the backends, and the
tenant taken down as a rehearsal's would be.

The only things the test adds are what a newcomer's shell has: the sandbox's environment, the
project the block changes to, and a terminal's answer to `pulumi up`'s question
(PULUMI_SKIP_CONFIRMATIONS: there is no terminal here)."""

from __future__ import annotations

import csv
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sandbox.project import project_copy
from tests.backends import (
    ROOT,
    allow_rehearsal,
    authentik,
    file_backend,
    labelled,
    pulumi,
    sacctmgr,
)

pytestmark = [pytest.mark.e2e, pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]

SLUG = "tenant-baz"
USERS_FILE = ROOT / "examples" / "tenant-baz-users.csv"


def new_tenant_block(readme: str) -> str:
    """The first shell block after the README's "**A new tenant**"."""
    after = readme.split("**A new tenant**", 1)[1]
    found = re.search(r"^```sh\n(.*?)^```", after, re.MULTILINE | re.DOTALL)
    assert found, "the README has a new-tenant block"
    return found.group(1)


@dataclass
class Ran:
    project: Path
    env: dict[str, str]
    result: subprocess.CompletedProcess[str]

    @property
    def spec(self) -> dict[str, object]:
        return dict(yaml.safe_load((self.project / "tenants" / f"{SLUG}.yaml").read_text()))


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ran]:
    work = tmp_path_factory.mktemp("readme")
    project = project_copy(work / "project")
    env = {
        **os.environ,
        **file_backend(work / "state"),
        "GPU_TENANTS_PROJECT": str(project),
        "PATH": f"{ROOT / 'venv' / 'bin'}:{os.environ['PATH']}",
        "PULUMI_SKIP_CONFIRMATIONS": "true",
    }
    block = new_tenant_block((ROOT / "README.md").read_text())
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    try:
        yield Ran(project, env, result)
    finally:
        _take_down(project, env)


def _take_down(project: Path, env: dict[str, str]) -> None:
    """As a rehearsal's: every gate open, then destroyed; the sample's users removed from
    Authentik, so that the next run's `new` finds their names free again."""
    spec_file = project / "tenants" / f"{SLUG}.yaml"
    if spec_file.exists():
        allow_rehearsal(SLUG)
        spec = yaml.safe_load(spec_file.read_text())
        spec.setdefault("lifecycle", {})["rehearsal"] = True
        spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        pulumi(env, project, "up", "--yes", "--skip-preview", "--stack", SLUG, timeout=900)
        pulumi(env, project, "destroy", "--yes", "--skip-preview", "--stack", SLUG, timeout=900)
    with authentik() as api:
        for name in _sample_users():
            for user in api.get("/core/users/", params={"username": name}).json()["results"]:
                api.delete(f"/core/users/{user['pk']}/").raise_for_status()


def _sample_users() -> list[str]:
    with USERS_FILE.open(newline="") as rows:
        return [row["username"] for row in csv.DictReader(rows)]


def test_the_readmes_new_tenant_block_runs_as_written(ran: Ran) -> None:
    assert ran.result.returncode == 0, ran.result.stdout + ran.result.stderr
    # The block's last command: the tenant Ready in every layer.
    assert re.search(rf"^{SLUG}\s+True\b", ran.result.stdout, re.MULTILINE), ran.result.stdout


def test_what_it_made_is_in_the_backends(ran: Ran) -> None:
    assert ran.result.returncode == 0, ran.result.stderr
    reservation = ran.spec["reservation"]
    assert isinstance(reservation, dict)
    assert labelled(SLUG) == sorted(reservation["nodes"])
    assert len(reservation["nodes"]) == 2  # 16 GPUs of h100-8x
    with authentik() as api:
        (group,) = api.get("/core/groups/", params={"name": SLUG}).json()["results"]
    assert sorted(u["username"] for u in group["users_obj"]) == sorted(_sample_users())
    users = sacctmgr("show", "assoc", "account=ml-team-baz", "format=User")
    assert sorted(u for u in users if u) == ["yuki"]
    stacks = pulumi(ran.env, ran.project, "stack", "ls", "--json")
    assert f'"name": "{SLUG}"' in stacks.stdout
