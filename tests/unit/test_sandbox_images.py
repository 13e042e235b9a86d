"""The node's image archives (sandbox/kubernetes/images.py): every `make sandbox-up` asks for
them, so one is written only when what goes into it changed."""

from __future__ import annotations

import contextlib
import os
import tarfile
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from sandbox.kubernetes.images import Image, archive, login_rootfs
from tenant_stack.spec.names import Slug, Username


def test_an_archive_is_written_again_only_when_a_file_of_it_changed(tmp_path: Path) -> None:
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF first build")
    image = Image("sandbox.local/test:1", {"tool": binary}, ("/tool",))
    made, digest = archive(image, tmp_path / "images")
    written = made.stat().st_mtime_ns

    assert archive(image, tmp_path / "images") == (made, digest)
    assert made.stat().st_mtime_ns == written

    binary.write_bytes(b"\x7fELF second build")
    os.utime(binary, ns=(written + 10**9, written + 10**9))
    again, new_digest = archive(image, tmp_path / "images")
    assert again == made
    assert new_digest != digest


def _image_names(database: str) -> set[str]:
    """The names of the login image's /etc/`database` (passwd or group)."""
    with tarfile.open(login_rootfs()) as rootfs:
        member = rootfs.extractfile(f"./etc/{database}")
        assert member is not None
        return {line.split(":")[0] for line in member.read().decode().splitlines() if line}


def test_no_user_or_tenant_group_may_take_a_name_of_the_login_image() -> None:
    """The login pods' nsswitch reads the image's files before LDAP: a user or a tenant group
    (named by the slug) named as one of its accounts or groups would be that local one there.
    The spec refuses every such name, as the image `make setup` made holds them."""
    users = _image_names("passwd")
    groups = _image_names("group")
    assert {"sshd", "nslcd", "munge"} <= users
    assert {"users", "staff"} <= groups
    for names, kind in ((users, Username), (groups, Slug)):
        taken = []
        for name in sorted(names):
            with contextlib.suppress(ValidationError):
                TypeAdapter(kind).validate_python(name)
                taken.append(name)
        assert taken == [], kind
