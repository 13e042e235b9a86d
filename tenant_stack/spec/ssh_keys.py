"""Users' SSH public keys, checked when the spec is loaded rather than when a user first fails to
log in: one `.pub` line, a key type current OpenSSH accepts, key data that decodes and matches its
type (RFC 4251 wire format), and RSA of at least 2048 bits. A fingerprint names a key in messages.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

_CURVE_COORDINATE_BYTES = {"nistp256": 32, "nistp384": 48, "nistp521": 66}
SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
MIN_RSA_BITS = 2048


@dataclass(frozen=True)
class SshPublicKey:
    """One parsed line of authorized_keys: `<type> <base64 blob> [comment]`."""

    key_type: str
    blob: bytes
    comment: str

    def fingerprint(self) -> str:
        """As `ssh-keygen -l` prints it: SHA256 of the blob, base64 without padding."""
        digest = base64.b64encode(hashlib.sha256(self.blob).digest()).decode()
        return "SHA256:" + digest.rstrip("=")


class _Blob:
    """Reads the SSH wire format (RFC 4251): uint32 length-prefixed strings."""

    def __init__(self, data: bytes) -> None:
        self.data, self.offset = data, 0

    def string(self, what: str) -> bytes:
        if self.offset + 4 > len(self.data):
            raise ValueError(f"the key data ends before its {what}; the key is truncated")
        length = int.from_bytes(self.data[self.offset : self.offset + 4], "big")
        start, self.offset = self.offset + 4, self.offset + 4 + length
        if self.offset > len(self.data):
            raise ValueError(f"the key data ends inside its {what}; the key is truncated")
        return self.data[start : self.offset]

    def done(self) -> None:
        if self.offset != len(self.data):
            raise ValueError("the key data has bytes after the key; paste the .pub line unchanged")


def parse_ssh_key(text: str) -> SshPublicKey:
    """Parse and check one public key line; raises ValueError saying what is wrong."""
    fields = text.split(maxsplit=2)
    if "\n" in text.strip() or len(fields) < 2:
        raise ValueError(
            "expected one line '<type> <base64> [comment]', as in the user's id_ed25519.pub"
        )
    key_type, data = fields[0], fields[1]
    if key_type not in SSH_KEY_TYPES:
        if key_type == "ssh-dss":
            raise ValueError("OpenSSH refuses DSA keys since 7.0; ask for an ssh-ed25519 key")
        if "=" in key_type or "," in key_type:
            raise ValueError("authorized_keys options are not accepted here; give the bare key")
        raise ValueError(f"unknown key type {key_type!r}; accepted: {', '.join(SSH_KEY_TYPES)}")
    try:
        blob = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ValueError("the key data is not base64; paste the .pub line unchanged") from None
    reader = _Blob(blob)
    inner = reader.string("type").decode(errors="replace")
    if inner != key_type:
        raise ValueError(f"the line says {key_type} but the key data is a {inner!r} key")
    if key_type in ("ssh-ed25519", "sk-ssh-ed25519@openssh.com"):
        if len(reader.string("public key")) != 32:
            raise ValueError("an ed25519 public key is 32 bytes; this one is damaged")
    elif key_type == "ssh-rsa":
        reader.string("exponent")
        bits = int.from_bytes(reader.string("modulus"), "big").bit_length()
        if bits < MIN_RSA_BITS:
            raise ValueError(
                f"RSA key of {bits} bits; at least {MIN_RSA_BITS} are required "
                "(better: an ssh-ed25519 key)"
            )
    else:
        curve = key_type.removeprefix("sk-").split("@")[0].removeprefix("ecdsa-sha2-")
        if reader.string("curve").decode(errors="replace") != curve:
            raise ValueError(f"the key data names a curve other than {curve}")
        if len(reader.string("point")) != 1 + 2 * _CURVE_COORDINATE_BYTES[curve]:
            raise ValueError(f"the {curve} point has the wrong length; this key is damaged")
    if key_type.startswith("sk-") and not reader.string("application").startswith(b"ssh:"):
        raise ValueError("a security-key application must start with 'ssh:'")
    reader.done()
    return SshPublicKey(key_type, blob, fields[2] if len(fields) > 2 else "")


def _ssh_key(value: str) -> str:
    parse_ssh_key(value)
    return value.strip()


SshKey = Annotated[str, AfterValidator(_ssh_key)]
