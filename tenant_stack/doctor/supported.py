"""The versions of each backend the program supports, written once: what its clients and parsers
were written against and tested on. Widen a range after testing a release outside it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tenant_stack.doctor.report import CheckFailedError

__all__ = ["SUPPORTED", "Range", "judge", "parse_version"]


@dataclass(frozen=True)
class Range:
    """From `lowest` (included) to `below` (excluded), as release numbers."""

    lowest: tuple[int, ...]
    below: tuple[int, ...]
    why: str

    def holds(self, version: tuple[int, ...]) -> bool:
        return self.lowest <= version < self.below

    def __str__(self) -> str:
        return f">= {_dotted(self.lowest)}, < {_dotted(self.below)}"


SUPPORTED: dict[str, Range] = {
    "kubernetes": Range(
        (1, 28), (1, 33), "ValidatingAdmissionPolicy v1 from 1.28; tested on RKE2 1.30"
    ),
    "authentik": Range(
        (2024, 10),
        (2026, 1),
        "string uidNumber/gidNumber from 2024.10; a group's `parent` and `parents` to 2025.12",
    ),
    "weka": Range((4, 3), (4, 5), "the REST API v2 of Weka 4.3 and 4.4 (CSI role from 4.4)"),
    # The sacctmgr and scontrol output the parsers read was captured from 22.05 (Debian bookworm).
    "slurmctld": Range((22, 5), (23, 0), "scontrol output and 22.05 partition syntax"),
    "slurmdbd": Range((22, 5), (23, 0), "sacctmgr output captured from 22.05"),
    "temporal": Range((1, 22), (2, 0), "the temporalio SDK's update and schedule calls"),
}

_RELEASE = re.compile(r"v?(\d+(?:\.\d+)*)")


def parse_version(text: str) -> tuple[int, ...] | None:
    """The release numbers at the start of `text` (`v1.30.14+rke2r1` -> (1, 30, 14)); None when
    it does not start with one."""
    found = _RELEASE.match(text.strip())
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(
        f"{part:02d}" if i == 1 and version[0] >= 20 else str(part)
        for i, part in enumerate(version)
    )


def judge(backend: str, reported: str) -> str:
    """The detail of a supported version; CheckFailedError, with the range, for any other (or
    for text that is no version)."""
    supported = SUPPORTED[backend]
    version = parse_version(reported)
    if version is None:
        raise CheckFailedError(
            f"{backend} reports version {reported!r}, not a release number",
            f"check that this is {backend}; the program supports {supported}",
        )
    if not supported.holds(version):
        raise CheckFailedError(
            f"{backend} {reported} is outside the supported range {supported}",
            f"run {backend} {supported} ({supported.why}), or test this release and widen "
            "SUPPORTED in tenant_stack/doctor/supported.py",
        )
    return f"{reported} (supported: {supported})"
