"""A directory's archive streams from the mount host into a multipart upload: never held whole,
bounded parts, a stall or a failure fails it, and a failed archive leaves no object."""

from __future__ import annotations

import hashlib
import sys
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from providers.command import LocalTransport
from providers.errors import WekaError
from providers.retention.client import PART_SIZE, RetentionStore
from providers.retention.settings import Settings
from providers.weka.mount import MountClient

BLOCK = 1 << 20
# The size of the fake tree's archive: more than this test lets the process hold, many times.
ARCHIVE_BYTES = 1 << 30
HELD_AT_MOST = 48 << 20
# The mount host's stand-in: writes `blocks` distinct blocks of BLOCK bytes, then the count.
HOST = """
import hashlib, sys, time
blocks, pause = int(sys.argv[1]), float(sys.argv[2])
for n in range(blocks):
    sys.stdout.buffer.write(hashlib.sha256(str(n).encode()).digest() * (BLOCK // 32))
    if n == 3 and pause > 0:
        sys.stdout.flush()
        time.sleep(pause)
sys.stdout.flush()
print("tar: ./x: file changed as we read it" if pause < 0 else "members 7", file=sys.stderr)
sys.exit(2 if pause < 0 else 0)
""".replace("BLOCK", str(BLOCK))


@dataclass(frozen=True, kw_only=True)
class MountHost(LocalTransport):
    """The local transport, running the stand-in above in place of the archive script."""

    blocks: int
    pause: float = 0.0

    def command(self, argv: Sequence[str]) -> list[str]:
        return [sys.executable, "-c", HOST, str(self.blocks), str(self.pause)]


def expected_digest(blocks: int) -> str:
    digest = hashlib.sha256()
    for n in range(blocks):
        digest.update(hashlib.sha256(str(n).encode()).digest() * (BLOCK // 32))
    return digest.hexdigest()


@dataclass
class FakeS3:
    """The S3 calls of a multipart upload, keeping of each part its size only."""

    parts: list[int] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def list_multipart_uploads(self, **args: Any) -> dict[str, Any]:
        return {"Uploads": [{"Key": args["Prefix"], "UploadId": u} for u in self.stale]}

    def create_multipart_upload(self, **args: Any) -> dict[str, Any]:
        return {"UploadId": "upload-1"}

    def upload_part(self, **args: Any) -> dict[str, Any]:
        body, size = args["Body"], 0
        while chunk := body.read(BLOCK):
            size += len(chunk)
        self.parts.append(size)
        return {"ETag": f'"etag-{args["PartNumber"]}"'}

    def complete_multipart_upload(self, **args: Any) -> dict[str, Any]:
        self.completed.append(args["UploadId"])
        return {"ETag": f'"done-{len(args["MultipartUpload"]["Parts"])}"'}

    def abort_multipart_upload(self, **args: Any) -> None:
        self.aborted.append(args["UploadId"])


def store_with(fake: FakeS3) -> RetentionStore:
    store = RetentionStore(Settings("http://127.0.0.1:9", "retention", "key", "secret"))
    store._s3 = fake  # the client's one seam
    return store


def test_an_archive_larger_than_memory_goes_up_in_bounded_parts() -> None:
    fake = FakeS3(stale=["left-by-a-killed-run"])
    mount = MountClient(MountHost(backend="test", timeout=5, blocks=ARCHIVE_BYTES // BLOCK), "/m")
    tracemalloc.start()
    try:
        with mount.archive("Root", "home", "/tenant-foo", "archiving") as archive:
            uploaded = store_with(fake).upload("tenant-foo/storage/home.tar.gz", archive, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < HELD_AT_MOST, f"peak {peak} bytes for an archive of {ARCHIVE_BYTES}"
    assert (uploaded.size, archive.members) == (ARCHIVE_BYTES, 7)
    assert uploaded.sha256 == expected_digest(ARCHIVE_BYTES // BLOCK)
    assert fake.parts == [PART_SIZE] * (ARCHIVE_BYTES // PART_SIZE)
    assert (fake.completed, fake.aborted) == (["upload-1"], ["left-by-a-killed-run"])


@pytest.mark.parametrize(
    ("pause", "says"),
    [
        (5.0, "sent no byte for 0.5 s"),
        (-1.0, "tar: ./x: file changed as we read it"),
    ],
)
def test_a_stalled_or_failed_archive_aborts_its_upload(pause: float, says: str) -> None:
    fake = FakeS3()
    host = MountHost(backend="test", timeout=5, stall=0.5, blocks=40, pause=pause)
    mount = MountClient(host, "/m")
    with (
        pytest.raises(WekaError) as failed,
        mount.archive("Root", "home", "/t", "archiving /t") as archive,
    ):
        store_with(fake).upload("t/storage/home.tar.gz", archive, {})
    assert says in str(failed.value)
    assert str(failed.value).startswith("archiving /t")
    assert (fake.completed, fake.aborted) == ([], ["upload-1"])


@dataclass(frozen=True, kw_only=True)
class MissingTar(LocalTransport):
    def command(self, argv: Sequence[str]) -> list[str]:
        return ["no-such-tar-here"]


def test_an_archive_that_cannot_start_says_so_and_what_to_check() -> None:
    mount = MountClient(MissingTar(backend="test", timeout=5), "/m")
    with pytest.raises(WekaError) as failed, mount.archive("Root", "home", "/t", "x") as archive:
        list(archive)
    assert "could not run no-such-tar-here" in str(failed.value)
    assert "WEKA_MOUNT_TRANSPORT" in str(failed.value)
