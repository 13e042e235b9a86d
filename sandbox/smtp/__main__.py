"""Run the sandbox's mail relay: `python -m sandbox.smtp --port P --maildir DIR --username U
--password-file F --tls-cert C --tls-key K`. It takes mail only after STARTTLS and AUTH (PLAIN or
LOGIN) as U, and delivers each message into DIR, with the envelope in its X-MailFrom and X-RcptTo
headers."""

from __future__ import annotations

import argparse
import hmac
import mailbox
import signal
import ssl
import threading
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox.smtp")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--maildir", type=Path, required=True)
    parser.add_argument("--username", required=True)
    parser.add_argument("--password-file", type=Path, required=True)
    parser.add_argument("--tls-cert", type=Path, required=True)
    parser.add_argument("--tls-key", type=Path, required=True)
    args = parser.parse_args()
    password = args.password_file.read_text().strip().encode()
    username = args.username.encode()

    def authenticator(
        _server: Any, _session: Any, _envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        given = isinstance(data, LoginPassword) and mechanism in ("PLAIN", "LOGIN")
        ok = (
            given
            and hmac.compare_digest(data.login, username)
            and hmac.compare_digest(data.password, password)
        )
        return AuthResult(success=bool(ok), handled=False)

    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(args.tls_cert, args.tls_key)
    # Maildir's own: a missing directory gets its cur/, new/ and tmp/, an existing one nothing.
    mailbox.Maildir(args.maildir, create=True)
    relay = Controller(
        Mailbox(args.maildir),
        hostname="127.0.0.1",
        port=args.port,
        server_hostname="smtp.sandbox.internal",
        tls_context=tls,
        require_starttls=True,
        auth_required=True,
        auth_require_tls=True,
        authenticator=authenticator,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    relay.start()
    try:
        stop.wait()
    finally:
        relay.stop()


if __name__ == "__main__":
    main()
