"""Where the Weka cluster is and how to log in to it as the cluster admin, read from the
environment at call time (`providers.environment` says why):

    WEKA_URL             https://HOST:14000/api/v2
    WEKA_USERNAME        a ClusterAdmin of the Root organization
    WEKA_PASSWORD        its password, or
    WEKA_PASSWORD_FILE   a file holding it (what `make -s env` exports for the sandbox)
    WEKA_CA_FILE         optional: the CA bundle (PEM) that signed the API's certificate, when it
                         is not a public CA's; the CSI Secret carries it too
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from providers import environment
from providers.errors import WekaError

__all__ = ["ROOT_ORG", "UPLOADS_PREFIX", "Credentials", "Settings", "ca_certificate"]

# The organization of the cluster and its admins; every other one is a tenant's.
ROOT_ORG = "Root"
# The prefix the cluster's object store bucket (the retention bucket: Pulumi.prod.yaml
# weka.object_store) is configured with: every object Weka writes there, such as a snapshot
# uploaded by Snap-To-Object, is under it, apart from the tenants' own prefixes.
UPLOADS_PREFIX = "weka-s2o"

CA_FILE = "WEKA_CA_FILE"
_DOING = "reading the Weka settings from the environment"
_HOW = 'export it (for the sandbox: eval "$(make -s env)")'


@dataclass(frozen=True)
class Credentials:
    """One user's login: a cluster admin's in Root, or an organization admin's in its org."""

    username: str
    password: str = field(repr=False)
    org: str = ROOT_ORG


@dataclass(frozen=True)
class Settings:
    url: str
    username: str
    password: str = field(repr=False)
    ca_file: Path | None = None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in `env` (default: this process's environment), or a WekaError that
        names the variable to set."""
        env = os.environ if env is None else env
        try:
            url = environment.required(env, "WEKA_URL").rstrip("/")
            settings = cls(
                url=url,
                username=environment.required(env, "WEKA_USERNAME"),
                password=environment.secret(env, "WEKA_PASSWORD"),
                ca_file=environment.ca_file(env, CA_FILE),
            )
        except ValueError as error:
            raise WekaError(_DOING, str(error), _HOW) from None
        if not url.startswith(("https://", "http://")):
            raise WekaError(
                _DOING,
                f"WEKA_URL is {url!r}, not an http(s) URL",
                "set it to the API's base, such as https://weka-api.example.internal:14000/api/v2",
            )
        return settings

    def tls_verify(self) -> ssl.SSLContext | bool:
        """What httpx should verify the server with (a context: httpx 0.28 deprecates paths)."""
        if self.ca_file is None:
            return True
        return ssl.create_default_context(cafile=str(self.ca_file))


def ca_certificate(env: Mapping[str, str] | None = None) -> str | None:
    """The PEM of WEKA_CA_FILE, which the CSI driver must trust too; None for a public CA."""
    try:
        path = environment.ca_file(os.environ if env is None else env, CA_FILE)
    except ValueError as error:
        raise WekaError(_DOING, str(error), _HOW) from None
    return path.read_text() if path else None
