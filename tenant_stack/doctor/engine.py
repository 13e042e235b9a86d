"""The Pulumi side: the engine and the Kubernetes plugin at the versions toolchain/versions.sh
pins (what `make setup` builds and the stacks were tested with), the state backend the
environment selects, and the stacks' secrets provider, through the pulumi CLI as the operator
runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from tenant_stack.doctor.report import Check, CheckFailedError, Steps

__all__ = ["check_engine", "check_state", "pins"]

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "toolchain" / "versions.sh"
# How the engine marks a secret in an exported state (sdk/go/common/resource/sig).
_SECRET_SIG = "4dabf18193072939515e22adb298388d"
_SETUP = 'run `make setup`, then eval "$(make -s env)" so that its engine is first on PATH'


def pins(text: str) -> dict[str, str]:
    """The `NAME=value` lines of toolchain/versions.sh."""
    return dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(\S+)$", text, flags=re.MULTILINE))


def _pulumi(args: list[str], cwd: Path, timeout: float) -> str:
    """`pulumi <args>`'s output; CheckFailedError with its words if it fails. The output is the
    caller's to read, never printed (`config --show-secrets` is read only for its exit status)."""
    argv = ["pulumi", *args, "--non-interactive"]
    try:
        said = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as error:
        raise CheckFailedError("pulumi is not on PATH", _SETUP) from error
    except subprocess.TimeoutExpired as error:
        raise CheckFailedError(
            f"`pulumi {' '.join(args)}` did not finish in {timeout:g}s",
            "check the state backend's reachability",
        ) from error
    if said.returncode != 0:
        raise CheckFailedError(
            f"`pulumi {' '.join(args)}` failed: {said.stderr.strip()[-600:]}", ""
        )
    return said.stdout


def check_engine(project: Path, timeout: float) -> list[Check]:
    steps = Steps("pulumi")
    pinned = pins(PINS.read_text())

    def engine() -> str:
        found = _pulumi(["version"], project, timeout).strip().removeprefix("v")
        want = pinned.get("PULUMI_VERSION", "")
        if found != want:
            raise CheckFailedError(
                f"the engine on PATH is {found}; toolchain/versions.sh pins {want}", _SETUP
            )
        return f"{found} (pinned)"

    def plugins() -> str:
        want = pinned.get("KUBERNETES_PROVIDER_VERSION", "")
        listed: list[dict[str, Any]] = json.loads(
            _pulumi(["plugin", "ls", "--json"], project, timeout)
        )
        versions = sorted(
            p["version"]
            for p in listed
            if (p.get("kind"), p.get("name")) == ("resource", "kubernetes")
        )
        sdk = metadata.version("pulumi_kubernetes")
        if want not in versions:
            raise CheckFailedError(
                f"the kubernetes resource plugin {want} is not installed in "
                f"{os.environ.get('PULUMI_HOME', '~/.pulumi')} "
                f"(found: {', '.join(versions) or 'none'})",
                _SETUP,
            )
        if sdk != want:
            raise CheckFailedError(
                f"the pulumi_kubernetes SDK is {sdk}; toolchain/versions.sh pins {want}",
                "run `make setup` (the venv's requirements)",
            )
        return f"kubernetes {want} (pinned), SDK {sdk}"

    steps.step("engine", engine)
    steps.step("plugins", plugins)
    return steps.checks


def check_state(project: Path, timeout: float) -> list[Check]:
    steps = Steps("pulumi")
    found: dict[str, Any] = {}

    def backend() -> str:
        try:
            who = json.loads(_pulumi(["whoami", "--verbose", "--json"], project, timeout))
            found["stacks"] = json.loads(_pulumi(["stack", "ls", "--json"], project, timeout))
        except CheckFailedError as failed:
            raise CheckFailedError(
                failed.detail,
                "check PULUMI_BACKEND_URL (or `pulumi login`) and the backend's credentials",
            ) from None
        # The URL without its query: an S3 URL's options may name a profile, never print more.
        url = str(who.get("url", "")).split("?")[0]
        count = len(found["stacks"])
        return f"{url}: {count} stack{'' if count == 1 else 's'} of the project"

    def secrets() -> str:
        stacks = [str(s["name"]) for s in found["stacks"]]
        passphrase = bool(os.environ.get("PULUMI_CONFIG_PASSPHRASE")) or _readable(
            os.environ.get("PULUMI_CONFIG_PASSPHRASE_FILE", "")
        )
        if not stacks:
            if passphrase:
                return "no stack yet; a passphrase is set for new stacks' secrets"
            raise CheckFailedError(
                "no stack yet, and neither PULUMI_CONFIG_PASSPHRASE nor "
                "PULUMI_CONFIG_PASSPHRASE_FILE is set for the passphrase secrets provider",
                "set one of them, or create stacks with --secrets-provider (a KMS key)",
            )
        stack = "prod" if "prod" in stacks else stacks[0]
        # The engine asks the secrets provider only for something to decrypt (a wrong passphrase
        # passes otherwise): the stack's secret config, else the secrets in its state.
        config = json.loads(_pulumi(["config", "--stack", stack, "--json"], project, timeout))
        if any(isinstance(v, dict) and v.get("secret") for v in config.values()):
            what, reveal = "secret config", ["config", "--stack", stack, "--json"]
        elif _SECRET_SIG in _pulumi(["stack", "export", "--stack", stack], project, timeout):
            what, reveal = "state's secrets", ["stack", "export", "--stack", stack]
        else:
            return f"stack {stack!r} holds no secret yet to decrypt" + (
                "; a passphrase is set" if passphrase else ""
            )
        try:
            _pulumi([*reveal, "--show-secrets"], project, timeout)
        except CheckFailedError as failed:
            raise CheckFailedError(
                f"stack {stack!r}'s {what} cannot be decrypted: {failed.detail}",
                "set PULUMI_CONFIG_PASSPHRASE(_FILE) to the stacks' passphrase, or the "
                "credentials of their --secrets-provider",
            ) from None
        return f"stack {stack!r}: its {what} can be decrypted"

    steps.step("state backend", backend)
    steps.step("secrets provider", secrets)
    return steps.checks


def _readable(path: str) -> bool:
    return bool(path) and os.access(path, os.R_OK)
