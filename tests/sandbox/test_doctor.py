"""`gpu-tenants doctor` on the tests' sandbox: every check passes; then each kind of break an
operator meets before a first `up` (a kubeconfig whose role lacks one verb, a wrong Authentik
token, a backend that is down or never answers) is made in the doctor's own environment only,
never in the shared sandbox's services, and the doctor names the failing check, its fix and exits
1."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tenant_stack.doctor.kubernetes import ACCESS, ESCALATE
from tests.backends import operator_command

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def doctor(
    *args: str, env: dict[str, str] | None = None, status: int = 1, secret: str = ""
) -> dict[str, dict[str, Any]]:
    """The doctor's checks by name, read back from --json; it must exit with `status`, and
    `secret` must not appear in what it prints."""
    said = operator_command("doctor", "--json", *args, env=env, timeout=300)
    assert said.returncode == status, said.stdout + said.stderr
    if secret:
        assert secret not in said.stdout + said.stderr
    checks = json.loads(said.stdout)["checks"]
    return {check["check"]: check for check in checks}


def failed(checks: dict[str, dict[str, Any]]) -> list[str]:
    return [name for name, check in checks.items() if check["status"] == "failed"]


def test_every_check_passes_on_the_sandbox() -> None:
    checks = doctor(status=0)
    assert {check["status"] for check in checks.values()} == {"ok"}
    for name in ("kubernetes access", "authentik token", "weka user role", "slurm operator",
                 "retention ledger bucket", "pulumi engine", "temporal version"):  # fmt: skip
        assert name in checks
    # No secret of the sandbox's in what it prints.
    text = operator_command("doctor").stdout
    for variable in ("AUTHENTIK_TOKEN_FILE", "WEKA_PASSWORD_FILE", "RETENTION_S3_SECRET_KEY_FILE"):
        assert Path(os.environ[variable]).read_text().strip() not in text


@pytest.fixture
def limited_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig of a ServiceAccount of its own, bound to a ClusterRole of every verb the
    doctor asks for (escalate and bind on roles, rather than all the admins' Role grants) but
    `delete persistentvolumeclaims`; removed afterwards."""
    name = f"doctor-test-{uuid.uuid4().hex[:8]}"
    rules: list[dict[str, Any]] = [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
         "verbs": [q.verb for q in ESCALATE]}
    ]  # fmt: skip
    for access in ACCESS:
        resource, _, subresource = access.resource.partition("/")
        plural, _, group = resource.partition(".")
        verbs = [v for v in access.verbs if (v, plural) != ("delete", "persistentvolumeclaims")]
        named = f"{plural}/{subresource}" if subresource else plural
        rules.append({"apiGroups": [group], "resources": [named], "verbs": verbs})
    objects = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": name, "namespace": "default"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": name}, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": name},
             "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]},
        ],
    }  # fmt: skip
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(yaml.safe_dump(objects))
    subprocess.run(["kubectl", "create", "-f", manifest], check=True, capture_output=True)
    try:
        token = subprocess.run(
            ["kubectl", "-n", "default", "create", "token", name, "--duration=10m"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        admin = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": admin["clusters"],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": admin["clusters"][0]["name"],
                                                    "user": name}}],
            "current-context": name,
        }  # fmt: skip
        kubeconfig = tmp_path / "limited.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        yield kubeconfig
    finally:
        subprocess.run(["kubectl", "delete", "-f", manifest, "--wait=false"], capture_output=True)


def test_a_revoked_rbac_verb_is_named(limited_kubeconfig: Path) -> None:
    checks = doctor(env={"KUBECONFIG": str(limited_kubeconfig)})
    assert failed(checks) == ["kubernetes access"]
    access = checks["kubernetes access"]
    assert access["detail"].startswith("1 of ")
    assert "delete persistentvolumeclaims in every namespace" in access["detail"]
    assert "--verb=delete" in access["fix"]
    assert "--resource=persistentvolumeclaims" in access["fix"]
    assert checks["kubernetes reachable"]["status"] == "ok"


def test_a_wrong_authentik_token_is_named() -> None:
    wrong = f"not-a-token-{uuid.uuid4().hex}"
    checks = doctor(env={"AUTHENTIK_TOKEN": wrong}, secret=wrong)
    assert failed(checks) == ["authentik token"]
    assert checks["authentik reachable"]["status"] == "ok"
    assert checks["authentik version"]["status"] == "not run"
    assert "AUTHENTIK_TOKEN" in checks["authentik token"]["fix"]


def test_a_wrong_weka_password_is_named() -> None:
    checks = doctor(env={"WEKA_PASSWORD": "not-the-password"}, secret="not-the-password")
    assert failed(checks) == ["weka user role"]
    assert "refused the login of 'admin'" in checks["weka user role"]["detail"]
    assert "WEKA_PASSWORD" in checks["weka user role"]["fix"]


def test_a_missing_bucket_and_a_ledger_without_object_lock_are_named() -> None:
    missing = f"doctor-missing-{uuid.uuid4().hex[:12]}"
    checks = doctor(env={"RETENTION_S3_BUCKET": missing, "RETENTION_S3_LEDGER_BUCKET": "retention"})
    assert failed(checks) == ["retention bucket", "retention ledger bucket"]
    assert "NoSuchBucket" in checks["retention bucket"]["detail"]
    assert "RETENTION_S3_BUCKET" in checks["retention bucket"]["fix"]
    assert "without Object Lock" in checks["retention ledger bucket"]["detail"]
    assert "Object Lock enabled" in checks["retention ledger bucket"]["fix"]


def test_an_unreachable_api_server_is_named(tmp_path: Path) -> None:
    """The sandbox's kubeconfig with the server moved to a port where nothing listens."""
    config = yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{_free_port()}"
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    checks = doctor(env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert failed(checks) == ["kubernetes reachable"]
    assert "was refused" in checks["kubernetes reachable"]["detail"]
    assert "KUBECONFIG" in checks["kubernetes reachable"]["fix"]
    assert checks["kubernetes access"]["status"] == "not run"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("variable", "value", "named", "fix"),
    [
        ("WEKA_URL", "https://127.0.0.1:{port}/api/v2", ["weka reachable"], "WEKA_URL"),
        ("AUTHENTIK_URL", "http://127.0.0.1:{port}", ["authentik reachable"], "AUTHENTIK_URL"),
        # The archives' bucket and the ledger's are both on the store.
        ("RETENTION_S3_ENDPOINT", "http://127.0.0.1:{port}",
         ["retention bucket", "retention ledger bucket"], "RETENTION_S3_ENDPOINT"),
        ("TEMPORAL_ADDRESS", "127.0.0.1:{port}", ["temporal reachable"], "TEMPORAL_ADDRESS"),
    ],
)  # fmt: skip
def test_a_stopped_backend_is_named(variable: str, value: str, named: list[str], fix: str) -> None:
    """Nothing listens at the address: what a stopped backend looks like from here."""
    checks = doctor("--timeout=10", env={variable: value.format(port=_free_port())})
    assert failed(checks) == named
    for check in named:
        assert fix in checks[check]["fix"]


def test_a_stopped_slurmctld_is_named(tmp_path: Path) -> None:
    """The sandbox's slurm.conf with the controller's port one where nothing listens."""
    conf = Path(os.environ["SLURM_CONF"]).read_text()
    moved = re.sub(r"(?m)^SlurmctldPort=\d+$", f"SlurmctldPort={_free_port()}", conf)
    assert moved != conf
    (tmp_path / "slurm.conf").write_text(moved)
    checks = doctor(env={"SLURM_CONF": str(tmp_path / "slurm.conf")})
    assert failed(checks) == ["slurm slurmctld"]
    assert "Unable to contact slurm controller" in checks["slurm slurmctld"]["detail"]
    assert "scontrol ping" in checks["slurm slurmctld"]["fix"]
    assert checks["slurm slurmdbd"]["status"] == "not run"


def test_a_backend_that_never_answers_is_bounded() -> None:
    """A listening socket that never replies: its check fails after the timeout, not later."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        started = time.monotonic()
        checks = doctor("--timeout=5", env={"AUTHENTIK_URL": f"http://127.0.0.1:{port}"})
        took = time.monotonic() - started
    assert checks["authentik reachable"]["status"] == "failed"
    assert "Timeout" in checks["authentik reachable"]["detail"]
    assert checks["authentik token"]["status"] == "not run"
    # Its three steps' bound, with the doctor's own start on a busy machine.
    assert took < 3 * 5 + 30


def test_a_wrong_passphrase_is_named(tmp_path: Path, pulumi_backend: dict[str, str]) -> None:
    """A project of its own on a throwaway backend, whose stack holds a secret: the doctor with
    another passphrase cannot decrypt it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: doctor-probe\nruntime: python\n")
    env = {**pulumi_backend, "PULUMI_CONFIG_PASSPHRASE_FILE": ""}
    for args in (
        ["stack", "init", "probe"],
        ["config", "set", "--secret", "token", "s3cr3t-value", "--stack=probe"],
    ):
        subprocess.run(["pulumi", *args, "--non-interactive"], cwd=project,
                       env={**os.environ, **env}, check=True, capture_output=True)  # fmt: skip
    assert (
        doctor("--project", str(project), env=env, status=0)["pulumi secrets provider"]["detail"]
        == "stack 'probe': its secret config can be decrypted"
    )
    wrong = {**env, "PULUMI_CONFIG_PASSPHRASE": "not-the-passphrase"}
    checks = doctor("--project", str(project), env=wrong, secret="s3cr3t-value")
    assert failed(checks) == ["pulumi secrets provider"]
    assert "incorrect passphrase" in checks["pulumi secrets provider"]["detail"]
    assert "PULUMI_CONFIG_PASSPHRASE" in checks["pulumi secrets provider"]["fix"]


def test_a_project_that_is_not_one_cannot_run(tmp_path: Path) -> None:
    said = operator_command("doctor", "--project", tmp_path)
    assert said.returncode == 2
    assert "no Pulumi.yaml" in said.stderr
