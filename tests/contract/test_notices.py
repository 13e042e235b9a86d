"""The customer notices' client against the sandbox's relay (a real SMTP server, aiosmtpd's, that
requires STARTTLS and AUTH and delivers into a Maildir), and their delivery: sent once, recorded
in the tenant's ledger."""

from __future__ import annotations

import os
import smtplib
import uuid
from email.message import EmailMessage
from pathlib import Path

import pytest

from providers.errors import NoticeError
from providers.notices.delivery import Notice, send_once, sent_notices
from providers.notices.smtp import Relay
from providers.retention.ledger import Ledger
from sandbox.layout import SandboxLayout
from tests.backends import delivered, text_of

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("sandbox")]


def test_a_notice_goes_to_the_contact_once_and_the_ledger_says_when(
    sandbox: SandboxLayout,
) -> None:
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    notice = Notice(
        tenant=tenant,
        kind="start",
        sender="GPU platform <gpu-support@example.internal>",
        to="Lee Chen <lee.chen@customer.example>",
        subject=f"{tenant}: offboarding notice",
        text="# Offboarding notice\n\n- New jobs are refused.\n",
    )
    sent, now = send_once(notice)
    assert now
    [message] = delivered(sandbox, sent.message_id)
    assert message["X-RcptTo"] == "lee.chen@customer.example"
    assert message["X-MailFrom"] == "gpu-support@example.internal"
    assert message["Subject"] == notice.subject
    assert text_of(message) == notice.text
    again, now = send_once(notice)
    assert (now, again) == (False, sent)
    assert len(delivered(sandbox, sent.message_id)) == 1
    corrected, now = send_once(Notice(**{**notice.__dict__, "text": notice.text + "- More.\n"}))
    assert now
    assert corrected.message_id != sent.message_id
    with Ledger.open() as ledger:
        recorded = sent_notices(ledger, tenant)
    assert [(s.kind, s.message_id) for s in recorded] == [
        ("start", sent.message_id),
        ("start", corrected.message_id),
    ]


def test_a_wrong_password_is_refused_and_nothing_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = tmp_path / "password"
    wrong.write_text("not-the-password\n")
    monkeypatch.setenv("GPU_TENANTS_SMTP_PASSWORD_FILE", str(wrong))
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example", "b@example", "test"
    with pytest.raises(NoticeError) as refused:
        Relay.from_environment().send(message)
    assert refused.value.refused
    assert "535" in str(refused.value)
    assert "not-the-password" not in str(refused.value)


def test_the_relay_takes_no_credentials_before_starttls() -> None:
    relay = Relay.from_environment()
    with smtplib.SMTP(relay.host, relay.port, timeout=10) as plain:
        plain.ehlo()
        code, said = plain.docmd("AUTH", "PLAIN")
    assert code == 530, said
    assert os.environ["GPU_TENANTS_SMTP_URL"].startswith("smtp://")
