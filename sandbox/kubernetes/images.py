"""Container images for the sandbox's real node, made here without a registry.

An image is one layer in an OCI image archive that `ctr images import` takes: either a few files
taken from this machine (each from a Debian package or built from source by `make setup`), or a
root filesystem `make setup` made as a tar (the login image, sandbox/kubernetes/login-image.sh).
The archive is byte-for-byte the same each time it is made from the same files, so its digest
says whether the node already holds it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.versions import pinned

# The pause image's name is the one kubelet and containerd 1.6 ask for by default, so nothing
# needs to be told another: containerd never pulls an image it already holds.
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
# A shell and the usual tools (sh, sleep, wget, nc, httpd, nslookup) in one static binary, for
# test pods.
TOOLS_IMAGE = "sandbox.local/tools:1"


def coredns_image() -> str:
    """The cluster DNS's image: the binary `make setup` built, tagged with its version."""
    return f"sandbox.local/coredns:{pinned('COREDNS_VERSION')}"


# Where `make setup` put the login image's root filesystem (toolchain/env.sh exports it).
LOGIN_IMAGE_VARIABLE = "GPU_TENANTS_LOGIN_IMAGE"
_EPOCH = 0
_CHUNK = 1 << 20


def login_rootfs() -> Path:
    """The login image's root filesystem, a tar, or what to do to get it."""
    path = os.environ.get(LOGIN_IMAGE_VARIABLE)
    if not path or not Path(path).is_file():
        raise FileNotFoundError(
            f"the login image ({LOGIN_IMAGE_VARIABLE}={path or ''}) is not made: run "
            '`make setup` and `eval "$(make -s env)"`'
        )
    return Path(path)


def login_image() -> str:
    """The login image's name: tagged by the digest its cache directory is named by."""
    return f"sandbox.local/login:{login_rootfs().parent.name.removeprefix('login-image-')}"


@dataclass(frozen=True)
class Image:
    name: str
    # Path inside the image -> file on this machine.
    files: Mapping[str, Path]
    entrypoint: tuple[str, ...]
    # Links inside the image -> what they point at (busybox's applets).
    links: Mapping[str, str] = field(default_factory=dict)
    # A root filesystem as a tar, the layer as it is, in place of `files` and `links`.
    rootfs: Path | None = None


def pause_source() -> Path:
    """Kubernetes' own pause.c, from the module `make setup` built the control plane from."""
    listed = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"],
        cwd=Path(__file__).resolve().parents[2] / "toolchain" / "go" / "kubernetes",
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(listed.stdout.strip()) / "build" / "pause" / "linux" / "pause.c"


def build_pause(target: Path) -> Path:
    """Compiles pause statically into `target` unless it is already there."""
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        source = pause_source()
        command = [
            "cc",
            "-Os",
            "-static",
            "-DVERSION=v3.9-sandbox",
            "-o",
            str(partial),
            str(source),
        ]
        subprocess.run(command, check=True)
        partial.rename(target)
    return target


def images(pause: Path, coredns: Path) -> list[Image]:
    busybox = Path(shutil.which("busybox") or "/usr/bin/busybox")
    applets = ("sh", "sleep", "cat", "echo", "ls", "id", "mkdir", "env", "wget", "nc", "httpd",
               "nslookup")  # fmt: skip
    return [
        Image(PAUSE_IMAGE, {"pause": pause}, ("/pause",)),
        Image(coredns_image(), {"coredns": coredns}, ("/coredns",)),
        Image(
            TOOLS_IMAGE,
            {"bin/busybox": busybox},
            ("/bin/sh",),
            links={f"bin/{applet}": "busybox" for applet in applets},
        ),
        Image(login_image(), {}, ("/usr/sbin/sshd", "-D", "-e"), rootfs=login_rootfs()),
    ]


def archive(image: Image, directory: Path) -> tuple[Path, str]:
    """The image's archive and its manifest's digest. A root filesystem's is made once, beside
    it (its directory is named by what went into it); the others' in `directory`, again only
    when what goes into them changed (compressing CoreDNS takes seconds, and every `up` asks)."""
    if image.rootfs is not None:
        target = image.rootfs.with_name("image.oci.tar")
        if target.exists():
            return target, archive_digest(target)
        return target, write_archive(image, target)
    target = directory / f"{image.name.replace('/', '_')}.tar"
    made_from = target.with_name(f"{target.name}.made-from")
    inputs = _inputs(image)
    if target.exists() and made_from.exists() and made_from.read_text() == inputs:
        return target, archive_digest(target)
    digest = write_archive(image, target)
    made_from.write_text(inputs)
    return target, digest


def _inputs(image: Image) -> str:
    """What an archive of `image` is made from: its files by path, size and change time."""
    files = {}
    for inside, source in sorted(image.files.items()):
        status = source.stat()
        files[inside] = [str(source), status.st_size, status.st_mtime_ns]
    made_of = [image.name, list(image.entrypoint), dict(sorted(image.links.items())), files]
    return json.dumps(made_of) + "\n"


def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = _EPOCH
    archive.addfile(info, io.BytesIO(data))


def _layer(image: Image) -> bytes:
    """The image's one layer: an uncompressed tar of its files, owned by root."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as layer:
        directories = sorted({str(Path(p).parent) for p in [*image.files, *image.links]} - {"."})
        for directory in directories:
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, _EPOCH
            layer.addfile(info)
        for inside, source in sorted(image.files.items()):
            info = tarfile.TarInfo(inside)
            data = source.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o755, _EPOCH
            layer.addfile(info, io.BytesIO(data))
        for inside, target in sorted(image.links.items()):
            info = tarfile.TarInfo(inside)
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, _EPOCH
            layer.addfile(info)
    return buffer.getvalue()


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _blob(archive: tarfile.TarFile, data: bytes) -> None:
    _add(archive, f"blobs/sha256/{_sha(data).split(':', 1)[1]}", data)


def _digest_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def write_archive(image: Image, target: Path) -> str:
    """Writes `image` as an OCI archive at `target`; returns its manifest's digest. A root
    filesystem goes in as it is, uncompressed: it is made once and read from this machine's disk,
    so compressing it would only cost time."""
    if image.rootfs is None:
        layer = _layer(image)
        layer_bytes = gzip.compress(layer, mtime=_EPOCH)
        diff_id, layer_digest, layer_size = _sha(layer), _sha(layer_bytes), len(layer_bytes)
        layer_type = "application/vnd.oci.image.layer.v1.tar+gzip"
    else:
        diff_id = layer_digest = _digest_of(image.rootfs)
        layer_size = image.rootfs.stat().st_size
        layer_type = "application/vnd.oci.image.layer.v1.tar"
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": list(image.entrypoint), "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": _sha(config),
                "size": len(config),
            },
            "layers": [{"mediaType": layer_type, "digest": layer_digest, "size": layer_size}],
        },
        sort_keys=True,
    ).encode()
    manifest_digest = _sha(manifest)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest),
                "annotations": {"io.containerd.image.name": image.name},
            }
        ],
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: two sandboxes starting at once may make the same archive.
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with tarfile.open(partial, mode="w") as archive:
        _add(archive, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _blob(archive, config)
        if image.rootfs is None:
            _blob(archive, layer_bytes)
        else:
            info = tarfile.TarInfo(f"blobs/sha256/{layer_digest.split(':', 1)[1]}")
            info.size, info.mtime = layer_size, _EPOCH
            with image.rootfs.open("rb") as stream:
                archive.addfile(info, stream)
        _blob(archive, manifest)
        _add(archive, "index.json", json.dumps(index, sort_keys=True).encode())
    partial.rename(target)
    return manifest_digest


def archive_digest(archive: Path) -> str:
    """The manifest digest of an archive `write_archive` made."""
    with tarfile.open(archive) as opened:
        member = opened.extractfile("index.json")
        assert member is not None
        return str(json.load(member)["manifests"][0]["digest"])
