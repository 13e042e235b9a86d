"""The example CI workflows trust nothing a pull request can change: the review job runs the pull
request's code on runners of its own, with a toolchain and PULUMI_HOME of the job's own; the
drift job never runs where a review ran; values from the event reach scripts only through the
environment; every file a preview runs triggers a review; and a review runs a pull request's code
with the state passphrase only after a reviewer other than its author approved the run."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def workflow(name: str) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    return loaded


def only_job(name: str) -> dict[str, Any]:
    [job] = workflow(name)["jobs"].values()
    return dict(job)


def triggers(name: str) -> dict[str, Any]:
    # PyYAML reads the key `on` as the boolean True (YAML 1.1).
    found: dict[str, Any] = workflow(name)[True]
    return found


@pytest.mark.parametrize("name", ["tenant-review.yml", "tenant-drift.yml"])
def test_no_script_splices_in_a_value_from_the_event_or_a_secret(name: str) -> None:
    for step in only_job(name)["steps"]:
        assert "${{" not in step.get("run", ""), step


def test_every_file_a_preview_runs_triggers_a_review() -> None:
    paths = triggers("tenant-review.yml")["pull_request"]["paths"]
    for watched in ("policy/**", "toolchain/**", "providers/**", "tenant_stack/**", "Makefile"):
        assert watched in paths


def test_reviews_and_drift_never_share_a_runner() -> None:
    review = set(only_job("tenant-review.yml")["runs-on"])
    drift = set(only_job("tenant-drift.yml")["runs-on"])
    assert review & drift == {"self-hosted"}
    assert "ephemeral" in review


@pytest.mark.parametrize("name", ["tenant-review.yml", "tenant-drift.yml"])
def test_each_job_builds_or_restores_a_toolchain_of_its_own(name: str) -> None:
    steps = only_job(name)["steps"]
    scripts = [step.get("run", "") for step in steps]
    first_make = next(i for i, script in enumerate(scripts) if re.search(r"\bmake\b", script))
    own = "\n".join(scripts[:first_make])
    assert 'GPU_TENANTS_CACHE=$RUNNER_TEMP/gpu-tenants" >> "$GITHUB_ENV"' in own
    assert 'PULUMI_HOME=$RUNNER_TEMP/gpu-tenants/pulumi-home" >> "$GITHUB_ENV"' in own
    cached = [step for step in steps if str(step.get("uses", "")).startswith("actions/cache")]
    assert [step["with"]["path"] for step in cached] == ["${{ runner.temp }}/gpu-tenants"]
    # A review restores main's cache and saves none of its own; drift runs main's code.
    expected = "actions/cache/restore@v4" if name == "tenant-review.yml" else "actions/cache@v4"
    assert cached[0]["uses"] == expected


def test_drift_checks_out_main() -> None:
    [checkout] = [
        s for s in only_job("tenant-drift.yml")["steps"] if "checkout" in s.get("uses", "")
    ]
    assert checkout["with"]["ref"] == "main"


def gate_step() -> dict[str, Any]:
    job = only_job("tenant-review.yml")
    first = job["steps"][0]
    assert "uses" not in first, "the gate runs before the checkout of the pull request's code"
    return dict(first)


@pytest.mark.parametrize(
    ("rules", "passes"),
    [
        ([{"type": "required_reviewers", "prevent_self_review": True, "reviewers": [{}]}], True),
        ([{"type": "required_reviewers", "prevent_self_review": False, "reviewers": [{}]}], False),
        ([{"type": "required_reviewers", "prevent_self_review": True, "reviewers": []}], False),
        ([{"type": "branch_policy"}, {"type": "wait_timer", "wait_timer": 5}], False),
        ([], False),
    ],
)
def test_a_review_runs_the_pull_requests_code_only_after_another_persons_approval(
    rules: list[dict[str, Any]], passes: bool, tmp_path: Path
) -> None:
    """The review job's secrets come from its environment, and its first step, before the
    checkout, stops unless the environment requires a reviewer other than the author: run here
    with `gh` answering as GitHub's environments API would."""
    assert only_job("tenant-review.yml")["environment"] == "tenant-review"
    assert "actions" in workflow("tenant-review.yml")["permissions"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"name": "tenant-review", "protection_rules": rules}))
    gh = bin_dir / "gh"
    gh.write_text(
        f'#!/bin/sh\n[ "$2" = "repos/acme/tenants/environments/tenant-review" ]\ncat {answer}\n'
    )
    gh.chmod(0o755)
    step = gate_step()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "REPOSITORY": "acme/tenants",
        "GH_TOKEN": "unused",
    }
    result = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert (result.returncode == 0) is passes, result.stderr
    if not passes:
        assert "required reviewers and prevent self-review" in result.stderr


def test_every_secret_the_review_reads_is_its_environments() -> None:
    """Only the job that names the gated environment reads secrets: none at the workflow level,
    where a job without the environment would get them unapproved."""
    loaded = workflow("tenant-review.yml")
    outside = {key: value for key, value in loaded.items() if key != "jobs"}
    assert "secrets." not in json.dumps(outside)
    for job in loaded["jobs"].values():
        if "secrets." in json.dumps(job):
            assert job["environment"] == "tenant-review"
