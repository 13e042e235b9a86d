"""Run the Weka emulator: `python -m sandbox.weka --state-dir DIR --admin-password-file F
[--mount-root DIR] [--object-store-bucket NAME]`. With RETENTION_S3_ENDPOINT (and the other
RETENTION_S3_* variables that `providers.retention.settings` reads) in its environment, the
cluster has one object store bucket, NAME, in that S3 bucket, for Snap-To-Object."""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import sys
import threading
from collections.abc import Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from providers.errors import RetentionStoreError
from sandbox.weka.api import WekaApi, handler_for, parse_capacity
from sandbox.weka.cluster import Cluster
from sandbox.weka.errors import ApiError
from sandbox.weka.mounts import Mounts
from sandbox.weka.object_store import DEFAULT_NAME, ObjectStore
from sandbox.weka.store import Store
from sandbox.weka.tokens import Tokens, generate_password

DEFAULT_CAPACITY = "2PB"
REFRESH_TTL = 30 * 24 * 3600  # Weka 4.3 default: one month


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sandbox.weka", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=14000)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument(
        "--admin-password-file",
        type=Path,
        required=True,
        help="password of Root's cluster admin 'admin'; generated (mode 0600) if missing",
    )
    parser.add_argument(
        "--mount-root",
        type=Path,
        help="where filesystem F of organization O is the directory O/F, as on a host that "
        "mounts them all (default: STATE_DIR/mounts)",
    )
    parser.add_argument(
        "--object-store-bucket",
        default=DEFAULT_NAME,
        help="the name of the cluster's object store bucket, the S3 bucket that RETENTION_S3_* "
        f"in the environment describe (default {DEFAULT_NAME}; none without "
        "RETENTION_S3_ENDPOINT)",
    )
    parser.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate chain")
    parser.add_argument("--tls-key", type=Path, help="private key for --tls-cert")
    parser.add_argument("--access-token-ttl", type=int, default=300, help="seconds")
    parser.add_argument("--refresh-token-ttl", type=int, default=REFRESH_TTL, help="seconds")
    parser.add_argument(
        "--capacity-bytes",
        default=DEFAULT_CAPACITY,
        help=f"cluster capacity, bytes or with a unit (default {DEFAULT_CAPACITY})",
    )
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=0.0,
        help="how long a new filesystem stays not ready, a quota ADDING and an upload "
        "UPLOADING, as the real cluster's background work does (default 0: done at once)",
    )
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    try:
        args.capacity_bytes = parse_capacity(args.capacity_bytes, "--capacity-bytes")
    except ApiError as error:
        parser.error(error.message)
    return args


def _admin_password(path: Path) -> str:
    if path.exists():
        password = path.read_text(encoding="utf-8").strip()
        if not password:
            raise SystemExit(f"{path} is empty")
        return password
    password = generate_password()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(password + "\n")
    print(f"weka: generated the admin password into {path}", file=sys.stderr)
    return password


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # One line instead of a traceback for aborted connections and failed TLS handshakes.
        error = sys.exc_info()[1]
        print(f"weka {client_address[0]} connection error: {error!r}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse_args(argv)
    store = Store(args.state_dir)
    tokens = Tokens(store.state, args.access_token_ttl, args.refresh_token_ttl)
    try:
        object_store = ObjectStore.from_environment(args.object_store_bucket, os.environ)
    except RetentionStoreError as error:
        raise SystemExit(f"weka: {error}") from error
    try:
        mounts = Mounts(args.mount_root or args.state_dir / "mounts")
        cluster = Cluster(store.state, tokens, args.capacity_bytes, mounts, object_store)
        cluster.background.settle_seconds = args.settle_seconds
        if not store.state.orgs:
            cluster.bootstrap(_admin_password(args.admin_password_file))
        cluster.create_mounts(every_directory=store.loaded_version == 1)
        dropped = cluster.drop_orphan_snapshots()
        if dropped:
            print(
                f"weka: dropped snapshots of deleted filesystems: {', '.join(dropped)}",
                file=sys.stderr,
            )
    except ApiError as error:
        raise SystemExit(f"weka: {error.message}") from error
    store.save()

    server = _Server((args.host, args.port), handler_for(WekaApi(store, cluster)))
    scheme = "http"
    if args.tls_cert is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        # Handshake in the connection's thread, so a silent client cannot block accept().
        server.socket = context.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
        scheme = "https"

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    url = f"{scheme}://{args.host}:{server.server_port}/api/v2"
    print(f"weka: listening on {url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
