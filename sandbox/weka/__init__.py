"""An emulator of the Weka 4.3 REST API v2, for tests and the local sandbox.

Weka is proprietary and cannot run here, so this serves the subset of `/api/v2` that the project
and the csi-wekafs driver use (login, organizations, users, filesystems, directory quotas,
snapshots), with the real envelope, field names and error codes, plus a few test-only calls under
`/api/v2/_emulator/` to stand in for what only a client can do (create directories, write data,
hold a filesystem mounted). Each filesystem is also a real directory under `--mount-root`, as on a
host that mounts them all, so a plain `mkdir` there makes a directory the API then finds
(mounts.py). Run it with `python -m sandbox.weka --help`.
"""
