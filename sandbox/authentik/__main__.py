"""python -m sandbox.authentik: run the Authentik API emulator until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType

from sandbox.authentik import audit
from sandbox.authentik.api import Api
from sandbox.authentik.bootstrap import ensure_defaults, read_or_create_key
from sandbox.authentik.endpoints import ROUTES
from sandbox.authentik.ldap_numbering import LdapSettings
from sandbox.authentik.ldap_publisher import (
    Directory,
    Publisher,
    bind_account,
    directory,
    ssha,
)
from sandbox.authentik.server import make_server
from sandbox.authentik.store import Store


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sandbox.authentik", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--state-dir", type=Path, required=True, help="persistent state lives here")
    parser.add_argument(
        "--bootstrap-token-file",
        type=Path,
        required=True,
        help="key of akadmin's API token; created with a random key (mode 0600) if missing",
    )
    parser.add_argument(
        "--ldap-base-dn",
        default=LdapSettings.base_dn,
        help="base DN of the emulated LDAP outpost's entries",
    )
    parser.add_argument(
        "--ldap-url",
        help="where to publish the outpost's entries: an LDAP server's local socket "
        "(ldapi://...) on which this process is its root; none: publish nowhere",
    )
    parser.add_argument("--ldap-bind-dn", help="the outpost's bind account, made in the server")
    parser.add_argument(
        "--ldap-bind-password-file", type=Path, help="the bind account's password (one line)"
    )
    args = parser.parse_args(argv)
    if args.ldap_url and not (args.ldap_bind_dn and args.ldap_bind_password_file):
        parser.error("--ldap-url needs --ldap-bind-dn and --ldap-bind-password-file")
    return args


def _publisher(args: argparse.Namespace, store: Store, settings: LdapSettings) -> Publisher:
    password = ssha(args.ldap_bind_password_file.read_text().strip())

    def compute() -> Directory:
        with store.lock:
            return directory(store, settings, args.ldap_bind_dn, password)

    return Publisher(args.ldap_url, settings.base_dn, compute)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    store = Store.open(args.state_dir)
    ensure_defaults(store, read_or_create_key(args.bootstrap_token_file))
    settings = LdapSettings(base_dn=args.ldap_base_dn)
    if args.ldap_bind_dn:
        with store.lock:
            bind_account(store, settings, args.ldap_bind_dn)
    publisher = _publisher(args, store, settings) if args.ldap_url else None
    changed = publisher.changed if publisher else None
    api = Api(store, settings, [*ROUTES, *audit.ROUTES], changed)
    if publisher:
        publisher.start()
    server = make_server(args.host, args.port, api)
    signal.signal(signal.SIGTERM, _stop)
    host, port = server.server_address[:2]
    print(f"authentik emulator listening on http://{host!s}:{port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
