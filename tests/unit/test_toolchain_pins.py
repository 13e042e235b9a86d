"""The engine matches plugin versions exactly, so the SDK pins must equal the built binaries."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def _shell_assignments(text: str) -> dict[str, str]:
    return dict(re.findall(r"^([A-Z_]+)=(\S+)$", text, flags=re.MULTILINE))


def _requirements() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"requirements.txt: {line!r} is not pinned with =="
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_sdk_pins_equal_the_plugin_versions_built() -> None:
    versions = _shell_assignments((ROOT / "toolchain" / "versions.sh").read_text())
    pins = _requirements()
    assert pins["pulumi"] == versions["PULUMI_VERSION"]
    assert pins["pulumi-kubernetes"] == versions["KUBERNETES_PROVIDER_VERSION"]


def test_wrapper_modules_pin_the_same_versions() -> None:
    versions = _shell_assignments((ROOT / "toolchain" / "versions.sh").read_text())
    go = ROOT / "toolchain" / "go"
    assert (
        f"github.com/pulumi/pulumi/pkg/v3 v{versions['PULUMI_VERSION']}"
        in (go / "pulumi" / "go.mod").read_text()
    )
    assert (
        f"k8s.io/kubernetes v{versions['KUBERNETES_VERSION']}"
        in (go / "kubernetes" / "go.mod").read_text()
    )
    assert (
        f"go.etcd.io/etcd/server/v3 v{versions['ETCD_VERSION']}"
        in (go / "etcd" / "go.mod").read_text()
    )
    provider = (
        f"{versions['KUBERNETES_PROVIDER_MODULE']} {versions['KUBERNETES_PROVIDER_MODULE_VERSION']}"
    )
    assert provider in (go / "kubernetes-provider" / "go.mod").read_text()
