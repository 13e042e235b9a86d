"""What the Weka CSI driver (csi.weka.io, csi-wekafs) reads: its API Secret and the parameters
of a StorageClass. Pure functions; the Kubernetes resources that carry them are built elsewhere.

The driver logs in with a username and password (it has no token field) and keeps its own
session, so the Secret holds the CSI user's credentials, not a token.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CLAIM_NAMESPACE",
    "CSI_SECRET_STAGES",
    "WEKA_CSI_DRIVER",
    "csi_secret_data",
    "storage_class_parameters",
]

WEKA_CSI_DRIVER = "csi.weka.io"  # the provisioner of a StorageClass, the driver of a volume
WEKA_API_PORT = 14000
# Every CSI call that takes credentials; the driver needs the same Secret for all of them.
CSI_SECRET_STAGES = (
    "provisioner",
    "controller-publish",
    "controller-expand",
    "node-stage",
    "node-publish",
)
_SCHEMES = ("https", "http")
_VOLUME_TYPES = ("dir/v1", "weka/v2")
_ENFORCEMENT = ("HARD", "SOFT")


def csi_secret_data(
    username: str,
    password: str,
    organization: str,
    endpoints: Sequence[str],
    scheme: str,
    ca_certificate: str | None = None,
) -> dict[str, str]:
    """The Secret's `stringData`: `endpoints` are the API's `host:port` (no scheme; a bare host
    gets port 14000), `scheme` is https (mandatory since Weka 4.3) or http, `ca_certificate` the
    PEM of a CA to trust for a self-signed API certificate."""
    if scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(_SCHEMES)}, not {scheme!r}")
    if not endpoints:
        raise ValueError("at least one API endpoint is needed (two or more are recommended)")
    data = {
        "username": username,
        "password": password,
        "organization": organization,
        "endpoints": ",".join(_endpoint(e) for e in endpoints),
        "scheme": scheme,
    }
    if ca_certificate:
        if "-----BEGIN CERTIFICATE-----" not in ca_certificate:
            raise ValueError("ca_certificate must be a PEM certificate")
        data["caCertificate"] = ca_certificate
    return data


def _endpoint(endpoint: str) -> str:
    value = endpoint.strip()
    if "://" in value or "/" in value:
        raise ValueError(f"endpoint {endpoint!r} must be host:port, without scheme or path")
    host, colon, port = value.rpartition(":")
    if not colon:
        host, port = value, str(WEKA_API_PORT)
    if not host or not port.isdigit():
        raise ValueError(f"endpoint {endpoint!r} must be host:port, such as 10.0.0.1:14000")
    return f"{host}:{port}"


# The external-provisioner's template for the namespace of the claim a CSI call is for. A class
# whose Secrets are in `${pvc.namespace}` hands each claim the credentials of its own namespace:
# a claim naming another tenant's class gets its own tenant's, never the class owner's.
CLAIM_NAMESPACE = "${pvc.namespace}"


def storage_class_parameters(
    secret_name: str,
    filesystem_name: str,
    volume_type: str = "dir/v1",
    capacity_enforcement: str = "HARD",
) -> dict[str, str]:
    """The `parameters` of a StorageClass whose volumes are directories (with quotas) on the
    existing filesystem `filesystem_name`, authenticated by the Secret `secret_name` (which may
    hold `CLAIM_NAMESPACE`) in the claim's own namespace."""
    if volume_type not in _VOLUME_TYPES:
        raise ValueError(f"volume_type must be one of {', '.join(_VOLUME_TYPES)}")
    if capacity_enforcement not in _ENFORCEMENT:
        raise ValueError(f"capacity_enforcement must be one of {', '.join(_ENFORCEMENT)}")
    parameters = {
        "volumeType": volume_type,
        "filesystemName": filesystem_name,
        "capacityEnforcement": capacity_enforcement,
    }
    for stage in CSI_SECRET_STAGES:
        parameters[f"csi.storage.k8s.io/{stage}-secret-name"] = secret_name
        parameters[f"csi.storage.k8s.io/{stage}-secret-namespace"] = CLAIM_NAMESPACE
    return parameters
