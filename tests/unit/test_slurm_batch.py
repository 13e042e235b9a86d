"""The smoke tests' output directory, made by real mkdir and chown on this host: a new one is
the user's alone; an existing one, which may be someone else's, is refused and left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from providers.command import LocalTransport
from providers.slurm.batch import BatchJobs
from providers.slurm.transport import SlurmCommandError

UID, GID = 2201, 4102  # tenant-bar's dave and group
OTHER_UID = 2147  # another tenant's user


def jobs() -> BatchJobs:
    return BatchJobs(LocalTransport(backend="slurm", timeout=10))


def test_a_new_output_directory_is_made_for_the_user_alone(tmp_path: Path) -> None:
    path = tmp_path / "smoke" / "run-1"
    jobs().make_output_dir(str(path), UID, GID)
    info = path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (UID, GID, 0o700)


def test_an_existing_directory_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o750)
    (theirs / "data").write_text("kept")
    os.chown(theirs, OTHER_UID, OTHER_UID)
    with pytest.raises(SlurmCommandError) as refused:
        jobs().make_output_dir(str(theirs), UID, GID)
    message = str(refused.value)
    assert f"making the job output directory {theirs}" in message
    assert "File exists" in message
    assert "name a directory that does not exist yet" in message
    info = theirs.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (OTHER_UID, OTHER_UID, 0o750)
    assert (theirs / "data").read_text() == "kept"
