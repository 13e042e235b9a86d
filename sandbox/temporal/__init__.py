"""The sandbox's workflow engine: the Temporal CLI's dev server (built by `make setup`), one
process on 127.0.0.1 keeping its history in a SQLite file, where the fleet's workers and
Schedules run. It is a development server: one process, no replication, no authentication
(docs/scale-out.md says what production runs instead)."""

from sandbox.temporal.service import temporal_address, temporal_service

__all__ = ["temporal_address", "temporal_service"]
