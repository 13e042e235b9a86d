"""The forms a tenant's names and numbers take in every backend they reach, written once: the
spec checks them where a problem can name its field, and each provider checks them again before
any call, since a provider is also driven by programs that never read a spec.
"""

from __future__ import annotations

import re

__all__ = ["EMAIL", "HYPHENATED", "MAX_ID"]

# Lowercase words joined by single hyphens, starting with a letter: what a Kubernetes namespace,
# a Slurm account and partition, a Weka organization and a POSIX user or group name all accept.
HYPHENATED = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")
MAX_ID = 2**31 - 1  # uidNumber/gidNumber are signed 32-bit in NSS and in Slurm's accounting
