"""The base of every pydantic model read from YAML (the platform's and the spec's), the name and
value types both use, and pydantic's errors as located `Problem`s."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from providers.identities import EMAIL, MAX_ID
from tenant_stack.errors import Problem

__all__ = [
    "ChartVersion",
    "DistinguishedName",
    "DnsLabel",
    "DnsName",
    "Email",
    "HostPort",
    "HttpsUrl",
    "Ipv4Cidr",
    "LdapsUri",
    "SingleLine",
    "StartNumber",
    "StrictModel",
    "problems_from",
]


def problems_from(error: ValidationError, prefix: str = "") -> list[Problem]:
    """pydantic's errors as problems with dotted locations (`users.1.uid`), messages made to say
    what would be right where pydantic's own wording does not."""
    problems = []
    for detail in error.errors(include_url=False):
        location = prefix + ".".join(str(part) for part in detail["loc"])
        kind = detail["type"]
        value = detail.get("input")
        if kind == "missing":
            message = "required field is missing"
        elif kind == "extra_forbidden":
            message = "unknown field; check its spelling and indentation (fields are snake_case)"
        elif kind == "value_error":
            message = detail["msg"].removeprefix("Value error, ")
        elif isinstance(value, str | int | float | bool) or value is None:
            message = f"{detail['msg']}, got {value!r}"
        else:
            message = detail["msg"]
        problems.append(Problem(location, message))
    return problems


class StrictModel(BaseModel):
    """Base of every model read from YAML: unknown keys are errors (a typo must not be ignored)
    and values are not coerced (`gpus: "64"` or `legal_hold: "no"` are mistakes to report)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --- names and values the platform and the spec share ---------------------------------------------

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _dns_label(value: str) -> str:
    if len(value) > 63 or not _LABEL.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a DNS label: use 1-63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return value


def _dns_name(value: str) -> str:
    labels = value.split(".")
    if len(value) > 253 or len(labels) < 2 or not all(_LABEL.fullmatch(p) for p in labels):
        raise ValueError(
            f"{value!r} is not a fully qualified DNS name: use lowercase dot-separated labels "
            "such as 'login.tenant-foo.example.internal'"
        )
    if any(len(label) > 63 for label in labels):
        raise ValueError(f"{value!r} has a label longer than 63 characters")
    return value


def _host_port(value: str) -> str:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r} is not HOST:PORT, such as 'weka-api.example.internal:14000'")
    _dns_name(host)
    return value


def _ldaps_uri(value: str) -> str:
    if not value.startswith("ldaps://"):
        raise ValueError(
            f"{value!r} must start with ldaps://: the bind password must not cross the network "
            "in clear"
        )
    return "ldaps://" + _host_port(value.removeprefix("ldaps://"))


def _https_url(value: str) -> str:
    if not value.startswith("https://") or value.endswith("/"):
        raise ValueError(
            f"{value!r} must be an https:// URL without a trailing '/', "
            "such as 'https://auth.example.internal'"
        )
    host = value.removeprefix("https://").partition("/")[0]
    if ":" in host:
        _host_port(host)
    else:
        _dns_name(host)
    return value


_DN = re.compile(r"[a-zA-Z]+=[^,=\x00-\x1f]+(,[a-zA-Z]+=[^,=\x00-\x1f]+)*")


def _distinguished_name(value: str) -> str:
    if not _DN.fullmatch(value):
        raise ValueError(
            f"{value!r} is not an LDAP distinguished name such as 'dc=auth,dc=example,dc=internal'"
        )
    return value


def _ipv4_cidr(value: str) -> str:
    try:
        return str(ipaddress.IPv4Network(value))
    except ValueError as error:
        raise ValueError(
            f"{value!r} is not an IPv4 network such as '10.42.0.0/16' ({error})"
        ) from None


def _chart_version(value: str) -> str:
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.([0-9]+|x)", value):
        raise ValueError(f"{value!r} is not a chart version such as '1.4.2' or '1.4.x'")
    return value


def _email(value: str) -> str:
    if not EMAIL.fullmatch(value):
        raise ValueError(f"{value!r} is not an email address such as 'alice@tenant-foo.example'")
    return value


def _single_line(value: str) -> str:
    if not value.strip() or value != value.strip() or not value.isprintable():
        raise ValueError(
            f"{value!r} must be non-empty printable text on one line, without surrounding spaces"
        )
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
DnsName = Annotated[str, AfterValidator(_dns_name)]
HostPort = Annotated[str, AfterValidator(_host_port)]
LdapsUri = Annotated[str, AfterValidator(_ldaps_uri)]
HttpsUrl = Annotated[str, AfterValidator(_https_url)]
DistinguishedName = Annotated[str, AfterValidator(_distinguished_name)]
Email = Annotated[str, AfterValidator(_email)]
ChartVersion = Annotated[str, AfterValidator(_chart_version)]
Ipv4Cidr = Annotated[str, AfterValidator(_ipv4_cidr)]
SingleLine = Annotated[str, AfterValidator(_single_line)]
StartNumber = Annotated[int, Field(ge=1, le=MAX_ID)]
