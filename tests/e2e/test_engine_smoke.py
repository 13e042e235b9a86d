"""The real engine, language host and a dynamic provider, driven through the Automation API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

SMOKE = ROOT / "toolchain" / "smoke"


def marker_outputs(stack: auto.Stack) -> dict[str, Any]:
    deployment = stack.export_stack().deployment or {}
    resource = next(r for r in deployment["resources"] if r["urn"].endswith("::marker"))
    outputs: dict[str, Any] = resource["outputs"]
    return outputs


def smoke_project(destination: Path) -> Path:
    """The smoke project copied to `destination`, so that its stack's config file is written
    there and never into the source tree; the copy runs on the project's virtualenv."""
    destination.mkdir()
    for source in ("__main__.py", "marker_file.py"):
        (destination / source).symlink_to(SMOKE / source)
    project = (SMOKE / "Pulumi.yaml").read_text()
    venv = ROOT / "venv"
    (destination / "Pulumi.yaml").write_text(project.replace("../../venv", str(venv)))
    return destination


def test_up_preview_refresh_destroy(tmp_path: Path, pulumi_backend: dict[str, str]) -> None:
    marker = tmp_path / "marker.txt"
    stack = auto.create_stack(
        "smoke",
        work_dir=str(smoke_project(tmp_path / "project")),
        opts=auto.LocalWorkspaceOptions(env_vars=pulumi_backend),
    )
    stack.set_config("path", auto.ConfigValue(str(marker)))
    stack.set_config("content", auto.ConfigValue("first"))

    up = stack.up()
    assert up.summary.result == "succeeded"
    assert up.outputs["path"].value == str(marker)
    assert up.outputs["content"].value == "first"
    assert marker.read_text() == "first"

    # Nothing changed, so the engine must plan nothing: the run fails otherwise.
    preview = stack.preview(expect_no_changes=True)
    assert preview.change_summary == {"same": 2}

    # A change made behind Pulumi's back is what refresh exists to find.
    marker.write_text("edited by hand")
    refresh = stack.refresh()
    assert refresh.summary.result == "succeeded"
    assert refresh.summary.resource_changes == {"same": 1, "update": 1}
    assert marker_outputs(stack)["content"] == "edited by hand"
    # The state now differs from the program, so a no-change preview must fail.
    with pytest.raises(auto.errors.CommandError, match="no changes were expected"):
        stack.preview(expect_no_changes=True)

    # up puts the file back to what the program says.
    stack.up()
    assert marker.read_text() == "first"
    assert marker_outputs(stack)["content"] == "first"

    destroy = stack.destroy()
    assert destroy.summary.result == "succeeded"
    assert not marker.exists()
    deployment = stack.export_stack().deployment or {}
    assert deployment.get("resources", []) == []
