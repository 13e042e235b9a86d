"""Container images for the sandbox's real node, made here without a registry.

An image is a set of files taken from this machine (each from a Debian package or built from
source by `make setup`), written as one layer of an OCI image archive that `ctr images import`
takes. The archive is byte-for-byte the same each time it is made from the same files, so its
digest says whether the node already holds it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
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


_EPOCH = 0


@dataclass(frozen=True)
class Image:
    name: str
    # Path inside the image -> file on this machine.
    files: Mapping[str, Path]
    entrypoint: tuple[str, ...]
    # Links inside the image -> what they point at (busybox's applets).
    links: Mapping[str, str] = field(default_factory=dict)


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
    ]


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


def _blob(archive: tarfile.TarFile, data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _add(archive, f"blobs/sha256/{digest.split(':', 1)[1]}", data)
    return digest


def write_archive(image: Image, target: Path) -> str:
    """Writes `image` as an OCI archive at `target`; returns its manifest's digest."""
    layer = _layer(image)
    compressed = gzip.compress(layer, mtime=_EPOCH)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": list(image.entrypoint), "WorkingDir": "/"},
            "rootfs": {
                "type": "layers",
                "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()],
            },
        },
        sort_keys=True,
    ).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        _add(archive, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        config_digest = _blob(archive, config)
        layer_digest = _blob(archive, compressed)
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": config_digest,
                    "size": len(config),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": layer_digest,
                        "size": len(compressed),
                    }
                ],
            },
            sort_keys=True,
        ).encode()
        manifest_digest = _blob(archive, manifest)
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
        _add(archive, "index.json", json.dumps(index, sort_keys=True).encode())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(buffer.getvalue())
    return manifest_digest
