"""The argv transport the Slurm and Weka directory providers run commands through."""

from __future__ import annotations

import pytest

from providers.command import KubectlExecTransport, LocalTransport, TransportSettings


def test_a_command_that_does_not_answer_in_time_is_a_result_not_a_hang() -> None:
    result = LocalTransport(backend="test", timeout=0.2).run(["sleep", "5"])
    assert result.returncode is None
    assert "no answer within 0.2 s" in result.words


def test_a_command_that_cannot_start_says_so() -> None:
    missing = LocalTransport(backend="test", timeout=5).run(["no-such-client-here"])
    assert missing.returncode is None
    assert "could not run no-such-client-here" in missing.words


def test_local_transport_adds_its_environment_and_keeps_the_command_words() -> None:
    result = LocalTransport(backend="test", timeout=5, env={"GREETING": "hello there"}).run(
        ["sh", "-c", 'echo "$GREETING"; echo oops >&2; exit 3']
    )
    assert (result.returncode, result.stdout, result.ok) == (3, "hello there\n", False)
    assert result.words == "oops\nhello there"


def test_kubectl_transport_wraps_the_argv_without_a_shell() -> None:
    transport = KubectlExecTransport(backend="test", timeout=5, namespace="ns", target="pod/x")
    assert transport.command(["stat", "-c", "%u:%g", "/mnt/a dir"]) == [
        "kubectl", "-n", "ns", "exec", "pod/x", "--", "stat", "-c", "%u:%g", "/mnt/a dir",
    ]  # fmt: skip


def test_transport_settings_come_from_the_prefixed_variables() -> None:
    env = {
        "WEKA_MOUNT_TRANSPORT": "kubectl",
        "WEKA_MOUNT_TIMEOUT": "3",
        "WEKA_MOUNT_STALL_TIMEOUT": "600",
    }
    settings = TransportSettings.from_environment(env, "WEKA_MOUNT", namespace="n", target="t")
    transport = settings.make("test")
    assert isinstance(transport, KubectlExecTransport)
    assert (transport.timeout, transport.namespace, transport.target) == (3.0, "n", "t")
    assert transport.stall == 600.0
    local = TransportSettings.from_environment({}, "X", namespace="n", target="t")
    made = local.make("test", {"SLURM_CONF": "/etc/slurm.conf"})
    assert isinstance(made, LocalTransport)
    assert made.env == {"SLURM_CONF": "/etc/slurm.conf"}
    for bad, named in (
        ({"X_TRANSPORT": "ssh"}, "X_TRANSPORT='ssh'"),
        ({"X_TIMEOUT": "soon"}, "X_TIMEOUT='soon'"),
        ({"X_TIMEOUT": "-1"}, "X_TIMEOUT='-1'"),
        ({"X_STALL_TIMEOUT": "0"}, "X_STALL_TIMEOUT='0'"),
    ):
        with pytest.raises(ValueError, match=named):
            TransportSettings.from_environment(bad, "X", namespace="n", target="t")
