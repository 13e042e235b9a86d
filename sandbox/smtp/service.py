"""The mail relay as a sandbox service: STARTTLS with a certificate of the sandbox's CA, and AUTH
with the one account the platform's notifier signs in with, as a submission relay (port 587)
asks of a client."""

from __future__ import annotations

import secrets
import smtplib
import ssl
from pathlib import Path

from sandbox.pki import Pki
from sandbox.service import PYTHON, Service, source_revision

__all__ = ["USERNAME", "maildir", "password_file", "smtp_service", "smtp_url"]

USERNAME = "gpu-tenants-notices"
_CERT = "smtp"


def smtp_url(port: int) -> str:
    return f"smtp://127.0.0.1:{port}"


def password_file(state_dir: Path) -> Path:
    return state_dir / "password"


def maildir(state_dir: Path) -> Path:
    """Where every message the relay takes is delivered (a Maildir: one file a message)."""
    return state_dir / "Maildir"


def smtp_service(state_dir: Path, pki: Pki, port: int) -> Service:
    def prepare() -> None:
        pki.ensure()
        pki.issue_server(_CERT, ["smtp.sandbox.internal"])
        state_dir.mkdir(parents=True, exist_ok=True)
        password = password_file(state_dir)
        if not password.exists():
            password.write_text(secrets.token_urlsafe(24) + "\n")
            password.chmod(0o600)

    def ready() -> bool:
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=2) as relay:
                relay.starttls(context=ssl.create_default_context(cafile=pki.ca_cert))
                return relay.noop()[0] == 250
        except (OSError, smtplib.SMTPException):
            return False

    return Service(
        name="smtp-relay",
        argv=[
            PYTHON,
            "-m",
            "sandbox.smtp",
            f"--port={port}",
            f"--maildir={maildir(state_dir)}",
            f"--username={USERNAME}",
            f"--password-file={password_file(state_dir)}",
            f"--tls-cert={pki.cert(_CERT)}",
            f"--tls-key={pki.key(_CERT)}",
        ],
        ports=(port,),
        cwd=Path(__file__).resolve().parents[2],
        prepare=prepare,
        revision=source_revision(Path(__file__).parent),
        ready=ready,
    )
