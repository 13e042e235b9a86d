"""What an abandoned onboarding's check reads on the mount host (`MountClient.files`): every
entry under a tenant's directory that is not a directory, with its bytes, read by GNU find."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.command import LocalTransport
from providers.errors import WekaError
from providers.weka.mount import MountClient


@pytest.fixture
def mount(tmp_path: Path) -> MountClient:
    return MountClient(LocalTransport(backend="test", timeout=10), str(tmp_path))


def test_files_lists_what_is_not_a_directory_and_leaves_out_the_snapshots(
    mount: MountClient, tmp_path: Path
) -> None:
    fs = tmp_path / "tenant-foo" / "tenant-foo-home"
    (fs / "alice" / "runs").mkdir(parents=True)
    (fs / "bob").mkdir()
    (fs / ".snapshots" / "offboarding").mkdir(parents=True)
    (fs / ".snapshots" / "offboarding" / "kept.bin").write_bytes(b"k" * 99)
    (fs / "alice" / "runs" / "out\nlog.txt").write_bytes(b"x" * 5)  # a name with a newline
    (fs / "bob" / "link").symlink_to("/etc/passwd")
    found = mount.files("tenant-foo", "tenant-foo-home", "/", "reading")
    assert sorted(found) == [(5, "alice/runs/out\nlog.txt"), (len("/etc/passwd"), "bob/link")]
    assert mount.files("tenant-foo", "tenant-foo-home", "/bob/runs", "reading") == []


def test_only_directories_read_as_nothing_and_an_unmounted_filesystem_is_an_error(
    mount: MountClient, tmp_path: Path
) -> None:
    (tmp_path / "Root" / "cluster-home" / "tenant-foo" / "alice").mkdir(parents=True)
    assert mount.files("Root", "cluster-home", "/tenant-foo", "reading") == []
    with pytest.raises(WekaError, match="is not mounted"):
        mount.files("Root", "cluster-scratch", "/tenant-foo", "reading")
