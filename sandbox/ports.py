"""Every TCP port the sandbox listens on, all on 127.0.0.1.

The operator's sandbox uses the base ports; each of the tests' sandboxes adds an offset of its own
(1000 for the first, 2000 for the second, ...), so that `make test` runs beside a sandbox where
`make demo` left tenant-foo onboarded, without touching it, and its workers beside each other.
"""

from __future__ import annotations

from dataclasses import dataclass

# Every port of every sandbox stays below 32768, where Linux hands out the local ports of outgoing
# connections: a listener there can find its port taken for a while. The highest base port
# (29202) leaves room for three offsets of 1000, so for three tests' sandboxes.
TEST_SANDBOX_OFFSET = 1000
TEST_SANDBOXES = 3


@dataclass(frozen=True)
class Ports:
    offset: int = 0

    @property
    def etcd_client(self) -> int:
        return 23790 + self.offset

    @property
    def etcd_peer(self) -> int:
        return 23800 + self.offset

    @property
    def apiserver(self) -> int:
        return 26443 + self.offset

    @property
    def controller_manager(self) -> int:
        return 26257 + self.offset

    @property
    def scheduler(self) -> int:
        return 26259 + self.offset

    @property
    def weka(self) -> int:
        # Weka's own API port for the operator's sandbox, so URLs look like production's.
        return 14000 + self.offset

    @property
    def authentik(self) -> int:
        return 29000 + self.offset

    @property
    def ldap_outpost(self) -> int:
        return 29010 + self.offset

    @property
    def smtp(self) -> int:
        return 29025 + self.offset

    @property
    def dns(self) -> int:
        """The zone external-dns writes to (TCP and UDP)."""
        return 29053 + self.offset

    @property
    def retention_store(self) -> int:
        return 29100 + self.offset

    @property
    def temporal(self) -> int:
        return 29200 + self.offset

    @property
    def temporal_http(self) -> int:
        return 29201 + self.offset

    @property
    def temporal_metrics(self) -> int:
        return 29202 + self.offset
