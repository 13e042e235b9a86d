"""The node's image archives (sandbox/kubernetes/images.py): every `make sandbox-up` asks for
them, so one is written only when what goes into it changed."""

from __future__ import annotations

import os
from pathlib import Path

from sandbox.kubernetes.images import Image, archive


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
