"""`gpu-tenants stage`: tenant-foo's spec, comments and all, walked from active to destroy by the
command alone (with a rollback on the way), its file differing from the original only in the
lifecycle lines each move changes; the refusals and the failures leave the file as it was."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest

from tenant_stack.commands import main
from tenant_stack.lifecycle import STAGES, Stage
from tenant_stack.platform import load_platform
from tenant_stack.spec import load_spec
from tests.conftest import ROOT
from tests.unit.test_cli import gpu_tenants

ORIGINAL = (ROOT / "tenants" / "tenant-foo.yaml").read_text()
STAGE_LINE = "  stage: active\n"
SIGNER, TICKET, CUSTOMER = "Dana Ops", "OPS-1234", "Lee Chen"
SIGNED = ("--sign-off-by", SIGNER, "--ticket", TICKET, "--confirmed-by-customer", CUSTOMER)


def signed_off(on: date) -> str:
    return (
        f"  sign_off:\n    by: {SIGNER}\n    date: {on.isoformat()}\n    ticket: {TICKET}\n"
        f"    confirmation:\n      kind: customer\n      by: {CUSTOMER}\n"
    )


def expected_text(stage: Stage, sign_off: str = "") -> str:
    """The original with the stage line changed (and the sign-off after it), nothing else."""
    return ORIGINAL.replace(STAGE_LINE, f"  stage: {stage}\n{sign_off}")


@pytest.fixture
def tenants(tmp_path: Path) -> Path:
    directory = tmp_path / "tenants"
    directory.mkdir()
    (directory / "tenant-foo.yaml").write_text(ORIGINAL)
    return directory


def stage(tenants: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The command as the CLI runs it: its exit status, stdout and stderr."""
    status = main(["stage", *argv, "--tenants", str(tenants)])
    out, err = capsys.readouterr()
    return status, out, err


def spec_file(tenants: Path) -> str:
    return (tenants / "tenant-foo.yaml").read_text()


def stage_of(tenants: Path) -> str:
    return load_spec(
        tenants, "tenant-foo", load_platform(ROOT / "Pulumi.prod.yaml")
    ).lifecycle.stage


def at(tenants: Path, text: str) -> None:
    (tenants / "tenant-foo.yaml").write_text(text)


def test_the_original_has_what_the_walk_must_keep() -> None:
    # Without comments, a flow mapping and a quoted scalar the walk below would prove little.
    lines = ORIGINAL.splitlines()
    assert sum(line.lstrip().startswith("#") for line in lines) >= 1
    assert any("  # " in line for line in lines if not line.lstrip().startswith("#"))
    assert "{soft: 90GB, hard: 100GB}" in ORIGINAL
    assert 'preempt_mode: "off"' in ORIGINAL
    assert ORIGINAL.count(STAGE_LINE) == 1


def test_a_walk_from_active_to_destroy_with_a_rollback_keeps_every_other_line(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    walk: list[tuple[Stage, str]] = [
        ("frozen", "forward"),
        ("drained", "forward"),
        ("archived", "forward"),
        ("frozen", "rollback"),  # "wait, they're staying": back past two stages at once
        ("drained", "forward"),
        ("archived", "forward"),
        ("snapshotted", "forward"),
    ]
    before: Stage = "active"
    for wanted, direction in walk:
        status, out, err = stage(tenants, capsys, "tenant-foo", wanted)
        assert (status, err) == (0, ""), out
        assert out.startswith(f"tenant-foo: lifecycle.stage {before} -> {wanted} ({direction})")
        assert stage_of(tenants) == wanted
        assert spec_file(tenants) == expected_text(wanted)
        assert sorted(p.name for p in tenants.iterdir()) == ["tenant-foo.yaml"]
        before = wanted
    status, out, err = stage(tenants, capsys, "tenant-foo", "destroy", *SIGNED)
    assert (status, err) == (0, ""), out
    assert stage_of(tenants) == "destroy"
    assert spec_file(tenants) == expected_text("destroy", signed_off(date.today()))
    sign_off = load_spec(tenants, "tenant-foo", load_platform(ROOT / "Pulumi.prod.yaml"))
    assert sign_off.lifecycle.sign_off is not None
    assert (sign_off.lifecycle.sign_off.by, sign_off.lifecycle.sign_off.ticket) == (SIGNER, TICKET)
    assert "runbook step 5" in out
    assert f"sign-off recorded: {SIGNER}" in out
    assert f"confirmed for the customer by {CUSTOMER}" in out
    assert "pulumi destroy --stack tenant-foo --exclude-protected" in out


def test_each_stage_says_what_its_up_does_in_the_runbooks_words(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = {}
    for wanted in STAGES[1:-1]:
        status, out, _ = stage(tenants, capsys, "tenant-foo", wanted)
        assert status == 0
        said[wanted] = out
    assert "GrpJobs=0 and GrpSubmitJobs=0" in said["frozen"]
    assert "partition tenant-foo State=DOWN" in said["frozen"]
    assert "graceful drain" in said["drained"]  # tenant-foo's drain_mode
    assert "pending jobs cancelled" in said["drained"]
    assert "jobs.csv" in said["archived"]
    assert "tenant-foo/slurm/" in said["archived"]
    assert "tenant-foo-home and tenant-foo-scratch" in said["snapshotted"]  # org isolation
    for out in said.values():
        assert "pull request" in out
        assert "pulumi up --stack tenant-foo" in out
    assert "gpu-tenants fleet stage tenant-foo --stage drained" in said["drained"]


def test_json_gives_the_move_and_what_the_up_does(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = stage(tenants, capsys, "tenant-foo", "frozen", "--json")
    assert status == 0
    report = json.loads(out)
    assert {k: report[k] for k in ("slug", "from", "to", "direction", "file", "written")} == {
        "slug": "tenant-foo",
        "from": "active",
        "to": "frozen",
        "direction": "forward",
        "file": str(tenants / "tenant-foo.yaml"),
        "written": True,
    }
    [frozen] = report["up"]
    assert frozen["stage"] == "frozen"
    assert frozen["runbook"].startswith("runbook step 1")
    assert any("GrpSubmitJobs=0" in does for does in frozen["does"])
    assert any("fleet stage tenant-foo --stage frozen" in step for step in report["next_steps"])
    stage(tenants, capsys, "tenant-foo", "drained")
    status, out, _ = stage(tenants, capsys, "tenant-foo", "active", "--json")
    rollback = json.loads(out)
    assert (status, rollback["direction"], rollback["from"]) == (0, "rollback", "drained")
    # The stages left, the latest first, each undone as the runbook's rollback says.
    assert [w["stage"] for w in rollback["up"]] == ["drained", "frozen"]
    assert any("State=UP" in does for does in rollback["up"][1]["does"])
    assert spec_file(tenants) == ORIGINAL


def test_the_installed_command_moves_the_stage(tenants: Path) -> None:
    result = gpu_tenants("stage", "tenant-foo", "frozen", "--json", "--tenants", str(tenants),
                         cwd=tenants)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["to"] == "frozen"
    assert spec_file(tenants) == expected_text("frozen")


def test_the_stage_it_is_at_writes_nothing(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = (tenants / "tenant-foo.yaml").stat().st_mtime_ns
    status, out, _ = stage(tenants, capsys, "tenant-foo", "active")
    assert status == 0
    assert "already at stage active; nothing written" in out
    assert (tenants / "tenant-foo.yaml").stat().st_mtime_ns == written


def test_a_skip_is_refused_naming_the_next_stage(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = stage(tenants, capsys, "tenant-foo", "drained")
    assert status == 1
    assert "stage drained refused" in out
    assert "the next is frozen" in out
    assert "nothing written" in out
    assert spec_file(tenants) == ORIGINAL


@pytest.mark.parametrize(
    ("given", "missing", "not_missing"),
    [
        ((), ["--sign-off-by", "--ticket", "--confirmed-by-customer"], []),
        (SIGNED[2:], ["--sign-off-by"], ["--ticket", "--confirmed-by-customer"]),
        (SIGNED[:2], ["--ticket", "--escalation-by"], ["--sign-off-by"]),
        (SIGNED[:4], ["--confirmed-by-customer", "--escalation-by"], ["--ticket"]),
    ],
)
def test_destroy_without_a_sign_off_is_refused_naming_what_is_missing(
    tenants: Path,
    capsys: pytest.CaptureFixture[str],
    given: tuple[str, ...],
    missing: list[str],
    not_missing: list[str],
) -> None:
    at(tenants, expected_text("snapshotted"))
    status, out, _ = stage(tenants, capsys, "tenant-foo", "destroy", *given)
    assert status == 1
    assert "stage destroy refused" in out
    assert all(option in out for option in missing)
    assert not any(option in out for option in not_missing)
    assert spec_file(tenants) == expected_text("snapshotted")


def test_no_way_back_from_destroy(tenants: Path, capsys: pytest.CaptureFixture[str]) -> None:
    destroyed = expected_text("destroy", signed_off(date(2026, 12, 1)))
    at(tenants, destroyed)
    status, out, _ = stage(tenants, capsys, "tenant-foo", "snapshotted")
    assert status == 1
    assert "stage snapshotted refused" in out
    assert "no way back" in out
    assert spec_file(tenants) == destroyed


def test_destroy_under_legal_hold_is_refused(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held = expected_text("snapshotted").replace("legal_hold: false", "legal_hold: true")
    at(tenants, held)
    status, out, _ = stage(tenants, capsys, "tenant-foo", "destroy", *SIGNED)
    assert status == 1
    assert "legal hold" in out
    assert spec_file(tenants) == held


def test_an_unknown_slug_cannot_run(tenants: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = stage(tenants, capsys, "tenant-nope", "frozen")
    assert (status, out) == (2, "")
    assert "no spec for stack 'tenant-nope'" in err
    assert spec_file(tenants) == ORIGINAL


def test_an_unknown_stage_cannot_run(tenants: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        stage(tenants, capsys, "tenant-foo", "offboarded")
    assert exited.value.code == 2
    assert "invalid choice: 'offboarded'" in capsys.readouterr().err
    assert spec_file(tenants) == ORIGINAL


def test_a_sign_off_for_a_stage_that_takes_none_cannot_run(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = stage(tenants, capsys, "tenant-foo", "frozen", "--ticket", TICKET)
    assert status == 2
    assert "--ticket only with stage destroy" in err
    assert spec_file(tenants) == ORIGINAL


def test_an_edit_that_would_not_load_is_not_written(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at(tenants, expected_text("snapshotted"))
    # A full name with a colon would break the passwd line: the spec's own rule refuses it.
    argv = ("tenant-foo", "destroy", *SIGNED[2:], "--sign-off-by", "Dana: Ops")
    status, _, err = stage(tenants, capsys, *argv)
    assert status == 2
    assert "with lifecycle.stage: destroy it would not load; nothing written" in err
    assert "lifecycle.sign_off.by" in err
    assert spec_file(tenants) == expected_text("snapshotted")
    assert sorted(p.name for p in tenants.iterdir()) == ["tenant-foo.yaml"]


def test_a_spec_that_does_not_load_cannot_run(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = ORIGINAL.replace("drain_mode: graceful", "drain_mode: gentle")
    at(tenants, broken)
    status, _, err = stage(tenants, capsys, "tenant-foo", "frozen")
    assert status == 2
    assert "lifecycle.drain_mode" in err
    assert spec_file(tenants) == broken


@pytest.mark.parametrize(
    ("layout", "line"),
    [
        (lambda text: text.replace("nodes: [gpu-01,", "nodes: [ gpu-01,"), 21),
        (lambda text: text.replace("\n", "\r\n"), None),
    ],
    ids=["flow-spacing", "crlf"],
)
def test_a_layout_the_round_trip_would_change_is_not_written(
    tenants: Path,
    capsys: pytest.CaptureFixture[str],
    layout: Callable[[str], str],
    line: int | None,
) -> None:
    text = layout(ORIGINAL)
    (tenants / "tenant-foo.yaml").write_bytes(text.encode())
    status, _, err = stage(tenants, capsys, "tenant-foo", "frozen")
    assert status == 2
    assert "nothing written: set lifecycle.stage: frozen by hand" in err
    if line is not None:
        assert f"would also change line {line}," in err
    assert (tenants / "tenant-foo.yaml").read_bytes() == text.encode()


def test_an_escalation_signed_off_by_the_operator_who_signs_the_stage_is_not_written(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runbook step 0: with no customer confirmation, a second person's escalation sign-off."""
    at(tenants, expected_text("snapshotted"))
    argv = ("tenant-foo", "destroy", *SIGNED[:4], "--escalation-by", SIGNER.upper())
    status, _, err = stage(tenants, capsys, *argv)
    assert status == 2
    assert "lifecycle.sign_off.confirmation.by" in err
    assert f"not {SIGNER}'s own" in err
    assert spec_file(tenants) == expected_text("snapshotted")


def test_an_escalation_is_written_as_such(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at(tenants, expected_text("snapshotted"))
    argv = ("tenant-foo", "destroy", *SIGNED[:4], "--escalation-by", "Sam Lead")
    status, out, err = stage(tenants, capsys, *argv)
    assert (status, err) == (0, ""), out
    written = load_spec(tenants, "tenant-foo", load_platform(ROOT / "Pulumi.prod.yaml"))
    assert written.lifecycle.sign_off is not None
    confirmation = written.lifecycle.sign_off.confirmation
    assert (confirmation.kind, confirmation.by) == ("escalation", "Sam Lead")
    assert "no customer confirmation: Sam Lead gave the internal escalation sign-off" in out


def test_a_customer_confirmation_and_an_escalation_together_cannot_run(
    tenants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        stage(tenants, capsys, "tenant-foo", "destroy", *SIGNED, "--escalation-by", "Sam Lead")
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert spec_file(tenants) == ORIGINAL
