"""A spec that YAML itself cannot build fails `pulumi preview` as every other bad spec does: the
field path and the line, no Python traceback, nothing declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.project import project_copy
from tests.backends import pulumi, run_pulumi

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize(
    ("written", "reported"),
    [
        (
            "end: 2027-02-29",
            "contract.term.end: '2027-02-29' (line 11) is not a valid date: "
            "day is out of range for month",
        ),
        ("end: 2027-13-01", "contract.term.end: '2027-13-01' (line 11) is not a valid date"),
    ],
)
def test_preview_names_an_impossible_date_at_its_field(
    tmp_path: Path, pulumi_backend: dict[str, str], written: str, reported: str
) -> None:
    project = project_copy(tmp_path / "project")
    spec = project / "tenants" / "tenant-foo.yaml"
    spec.write_text(spec.read_text().replace("end: 2027-01-04", written))
    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-foo")
    preview = pulumi(pulumi_backend, project, "preview", "--stack", "tenant-foo")
    printed = preview.stdout + preview.stderr
    assert preview.returncode != 0
    assert f"{spec}: {reported}" in printed, printed
    assert "Traceback" not in printed
    assert "ValueError" not in printed


@pytest.mark.sandbox
@pytest.mark.usefixtures("sandbox")
def test_preview_refuses_a_collision_with_another_tenant_and_only_warns_of_a_broken_one(
    tmp_path: Path, pulumi_backend: dict[str, str]
) -> None:
    project = project_copy(tmp_path / "project")
    tenants = project / "tenants"
    (tenants / "tenant-baz.yaml").write_text("slug: tenant-baz\n")  # another tenant's bad file
    run_pulumi(pulumi_backend, project, "stack", "init", "tenant-foo")
    warned = run_pulumi(pulumi_backend, project, "preview", "--stack", "tenant-foo")
    assert "the rules across tenants skip tenant-baz.yaml, which does not load" in warned

    bar = tenants / "tenant-bar.yaml"
    bar.write_text(bar.read_text().replace("uid: 2202", "uid: 2148"))  # bob's, in tenant-foo
    refused = pulumi(pulumi_backend, project, "preview", "--stack", "tenant-foo")
    printed = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert (
        f"{tenants / 'tenant-foo.yaml'}: users.1.uid: uid 2148 is claimed by both tenants; pin "
        "another in one of them (with tenant-bar.yaml users.1.uid)"
    ) in printed, printed
    assert "Traceback" not in printed
