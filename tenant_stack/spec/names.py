"""Names and free text of a spec: slugs, usernames, Slurm account names, descriptions, people's
names, email addresses (whose type the platform's settings share, in strict_models), change
tickets and QoS flags. Each ends up in a system with a grammar of
its own (Slurm, sacctmgr, passwd), so each is checked against that grammar here, where the
problem can name its spec field, rather than failing halfway through an update.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from providers.identities import HYPHENATED
from providers.slurm.values import QOS_FLAGS
from tenant_stack.strict_models import Email as Email  # the platform's too: defined below both

# A slug names the tenant's namespace, Slurm account and partition, Authentik group, Weka
# organization and retention store prefix at once, so it may be none of the names those systems
# give themselves. The platform's own names (Pulumi.prod.yaml) are refused by `check_spec`.
RESERVED_SLUGS = {
    "prod": "it is the platform stack",
    "default": (
        "it is Kubernetes' default namespace and Weka's default filesystem group, and Slurm "
        "refuses a partition named 'default'"
    ),
    "root": "it is Slurm's root account and Weka's Root organization",
}
# Kubernetes keeps `kube-*` namespaces for itself (kube-system, kube-public, kube-node-lease).
RESERVED_SLUG_PREFIX = "kube-"
# The accounts of the login pods' image (Debian's base-passwd and its daemons'): its nsswitch asks
# its files before LDAP, so a tenant's user of such a name would be the system account there.
SYSTEM_USERNAMES = frozenset({
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp",
    "proxy", "www-data", "backup", "list", "irc", "nobody", "slurm", "munge", "nslcd", "sshd",
    "admin",
})  # fmt: skip
# The groups of the login pods' image (Debian's base-passwd and its packages'): the tenant's group
# is named by its slug, and a slug of these would be the image's local group there, with its
# own gid and members, not the tenant's.
SYSTEM_GROUPNAMES = frozenset({
    "root", "daemon", "bin", "sys", "adm", "tty", "disk", "lp", "mail", "news", "uucp", "man",
    "proxy", "kmem", "dialout", "fax", "voice", "cdrom", "floppy", "tape", "sudo", "audio",
    "dip", "www-data", "backup", "operator", "list", "irc", "src", "shadow", "utmp", "video",
    "sasl", "plugdev", "staff", "games", "users", "nogroup", "nslcd", "munge", "slurm",
})  # fmt: skip
# sacctmgr splits its arguments on ',' and '=', its -P output on '|', and reads a leading '-' as
# an option; quotes and line breaks survive neither its parser nor ours.
_SACCTMGR_UNSAFE = set("|,=\"'`\\")


def _slug(value: str) -> str:
    if not 3 <= len(value) <= 40 or not HYPHENATED.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a slug: use 3-40 lowercase letters and digits in hyphen-separated "
            "words, starting with a letter, such as 'tenant-foo'"
        )
    if value in RESERVED_SLUGS:
        raise ValueError(f"{value!r} is reserved: {RESERVED_SLUGS[value]}")
    if value in SYSTEM_GROUPNAMES:
        raise ValueError(
            f"{value!r} is a group of the login pods' system, which they would find before the "
            "tenant's group in LDAP; choose another slug"
        )
    if value.startswith(RESERVED_SLUG_PREFIX):
        raise ValueError(
            f"{value!r} is reserved: Kubernetes keeps the namespaces '{RESERVED_SLUG_PREFIX}*' "
            "for itself"
        )
    return value


def _username(value: str) -> str:
    if len(value) > 32 or not HYPHENATED.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a username: use up to 32 lowercase letters and digits, "
            "hyphen-separated, starting with a letter, such as 'alice' or 'bob-smith'"
        )
    if value in SYSTEM_USERNAMES:
        raise ValueError(f"{value!r} is a system account name; choose another username")
    return value


def _account_name(value: str) -> str:
    # Slurm stores account names lowercased, so only lowercase names read back as written.
    if len(value) > 40 or not re.fullmatch(r"[a-z][a-z0-9]*([-_][a-z0-9]+)*", value):
        raise ValueError(
            f"{value!r} is not a Slurm account name: use up to 40 lowercase letters, digits, "
            "'-' and '_', starting with a letter, such as 'ml-team-foo'"
        )
    return value


def _printable_line(value: str, limit: int) -> None:
    if not value.strip() or value != value.strip():
        raise ValueError(f"{value!r} must be non-empty, without leading or trailing spaces")
    if not value.isprintable():
        raise ValueError(f"{value!r} must be printable text on one line")
    if len(value) > limit:
        raise ValueError(f"{len(value)} characters; at most {limit}")


def _sacctmgr_text(value: str) -> str:
    _printable_line(value, 100)
    unsafe = sorted(set(value) & _SACCTMGR_UNSAFE)
    if unsafe:
        raise ValueError(
            f"{value!r} contains {' '.join(repr(c) for c in unsafe)}, which sacctmgr would "
            "misread; "
            "use letters, digits, spaces and . - _ ( ) /"
        )
    if value.startswith("-"):
        raise ValueError(f"{value!r} starts with '-', which sacctmgr reads as an option")
    return value


def _person_name(value: str) -> str:
    _printable_line(value, 128)
    if ":" in value:
        raise ValueError(f"{value!r} contains ':', which would break the user's passwd entry")
    return value


def _ticket(value: str) -> str:
    if not re.fullmatch(r"[A-Z][A-Z0-9]+-[0-9]+", value):
        raise ValueError(f"{value!r} is not a change ticket id such as 'OPS-1234'")
    return value


Slug = Annotated[str, AfterValidator(_slug)]
Username = Annotated[str, AfterValidator(_username)]
AccountName = Annotated[str, AfterValidator(_account_name)]
SacctmgrText = Annotated[str, AfterValidator(_sacctmgr_text)]
PersonName = Annotated[str, AfterValidator(_person_name)]
Ticket = Annotated[str, AfterValidator(_ticket)]


def _qos_flag(value: str) -> str:
    # The Slurm provider's list: the spec accepts exactly what it can write.
    if value not in QOS_FLAGS:
        raise ValueError(
            f"{value!r} is not a Slurm 22.05 QoS flag; use one of {', '.join(QOS_FLAGS)}"
        )
    return value


QosFlag = Annotated[str, AfterValidator(_qos_flag)]
