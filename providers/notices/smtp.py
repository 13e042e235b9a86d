"""The mail relay the customer notices go through, read from the environment at each call:

    GPU_TENANTS_SMTP_URL            smtp://host:port (STARTTLS, which the client requires before
                                    it signs in: port 587, submission) or smtps://host:port
                                    (TLS from the first byte: port 465)
    GPU_TENANTS_SMTP_USERNAME       the account the client signs in with (AUTH)
    GPU_TENANTS_SMTP_PASSWORD(_FILE)  its password, or the file that holds it
    GPU_TENANTS_SMTP_CA_FILE        optional: the CA bundle (PEM) of a relay with a private CA
    GPU_TENANTS_SMTP_TIMEOUT        seconds for one exchange with the relay (default 30)

A relay that answers with an error is quoted (its code and its words); the password never is.
"""

from __future__ import annotations

import contextlib
import os
import smtplib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from urllib.parse import urlsplit

from providers import environment
from providers.errors import NoticeError

__all__ = ["URL_VARIABLE", "Relay"]

URL_VARIABLE = "GPU_TENANTS_SMTP_URL"
_DOING = "reading the mail relay's settings from the environment"


@dataclass(frozen=True)
class Relay:
    host: str
    port: int
    implicit_tls: bool
    username: str
    password: str
    ca_file: Path | None
    timeout: float

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Relay:
        env = os.environ if env is None else env
        try:
            url = urlsplit(environment.required(env, URL_VARIABLE))
            if url.scheme not in ("smtp", "smtps") or not url.hostname:
                raise ValueError(
                    f"{URL_VARIABLE} must be smtp://host:port (STARTTLS) or smtps://host:port"
                )
            return cls(
                host=url.hostname,
                port=url.port or (465 if url.scheme == "smtps" else 587),
                implicit_tls=url.scheme == "smtps",
                username=environment.required(env, "GPU_TENANTS_SMTP_USERNAME"),
                password=environment.secret(env, "GPU_TENANTS_SMTP_PASSWORD"),
                ca_file=environment.ca_file(env, "GPU_TENANTS_SMTP_CA_FILE"),
                timeout=environment.seconds(env, "GPU_TENANTS_SMTP_TIMEOUT", "30"),
            )
        except ValueError as error:
            raise NoticeError(_DOING, str(error), "set the variables the notices need") from None

    def send(self, message: EmailMessage) -> str:
        """Sends `message` (its From and To set) and returns its Message-ID; NoticeError when
        the relay refuses it or cannot be reached. A relay that took the message has it: an
        error after that (on QUIT) is no failure to send."""
        message["Message-ID"] = make_msgid(domain=self.host)
        doing = f"sending {message['Subject']!r} to {message['To']} through {self.host}"
        tls = ssl.create_default_context(cafile=self.ca_file)
        try:
            if self.implicit_tls:
                relay: smtplib.SMTP = smtplib.SMTP_SSL(
                    self.host, self.port, timeout=self.timeout, context=tls
                )
            else:
                relay = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
                relay.starttls(context=tls)
            try:
                relay.login(self.username, self.password)
                relay.send_message(message)
            finally:
                with contextlib.suppress(smtplib.SMTPException, OSError):
                    relay.quit()
        except smtplib.SMTPAuthenticationError as error:
            raise NoticeError(
                doing,
                _said(error),
                "check GPU_TENANTS_SMTP_USERNAME and the password; nothing was sent",
                refused=True,
            ) from None
        except smtplib.SMTPRecipientsRefused as error:
            refused = "; ".join(f"{to}: {_said(e)}" for to, e in error.recipients.items())
            raise NoticeError(
                doing, f"the relay refused the recipient: {refused}",
                "correct the tenant's contact (contract.contact.email); nothing was sent",
            ) from None  # fmt: skip
        except smtplib.SMTPResponseException as error:
            raise NoticeError(doing, _said(error), "run the command again later") from None
        except (OSError, smtplib.SMTPException) as error:
            raise NoticeError(
                doing,
                f"the relay cannot be reached: {error}",
                f"check {URL_VARIABLE} and that the relay answers; nothing was sent",
            ) from None
        return str(message["Message-ID"])


def _said(error: smtplib.SMTPResponseException | tuple[int, bytes]) -> str:
    code, words = (
        (error.smtp_code, error.smtp_error)
        if isinstance(error, smtplib.SMTPResponseException)
        else error
    )
    text = words.decode(errors="replace") if isinstance(words, bytes) else str(words)
    return f"{code} {text}"
