"""A notice to a tenant's contact, sent once: before sending, the tenant's retention ledger is read
for an entry `notice` with the same digest (kind, recipient, subject and text); after the relay
took it, one is written, with its Message-ID. So a rerun sends nothing, and a corrected text is a
new notice. Only a crash between the relay taking a message and the entry being written could
send it twice; nothing here can lose one that was recorded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage

from providers.notices.smtp import Relay
from providers.retention.ledger import Ledger

__all__ = ["NOTICE", "Notice", "Sent", "send_once", "sent_notices"]

# The ledger's action for a notice the relay took.
NOTICE = "notice"


@dataclass(frozen=True)
class Notice:
    tenant: str
    kind: str  # start, completion
    sender: str  # the From header: "Name <address>"
    to: str  # the To header: the tenant's contact, "Name <address>"
    subject: str
    text: str

    @property
    def digest(self) -> str:
        made_of = [self.kind, self.to, self.subject, self.text]
        return hashlib.sha256(json.dumps(made_of).encode()).hexdigest()


@dataclass(frozen=True)
class Sent:
    kind: str
    to: str
    at: datetime
    message_id: str
    digest: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "to": self.to, "sent_at": self.at.isoformat(),
                "message_id": self.message_id}  # fmt: skip


def send_once(notice: Notice) -> tuple[Sent, bool]:
    """The notice as sent, and whether it was sent now (False: the ledger had it already)."""
    with Ledger.open() as ledger:
        for sent in sent_notices(ledger, notice.tenant):
            if sent.digest == notice.digest:
                return sent, False
        message = EmailMessage()
        message["From"] = notice.sender
        message["To"] = notice.to
        message["Subject"] = notice.subject
        message.set_content(notice.text)
        message_id = Relay.from_environment().send(message)
        details = {
            "kind": notice.kind,
            "to": notice.to,
            "subject": notice.subject,
            "digest": notice.digest,
            "message_id": message_id,
        }
        entry = ledger.append(notice.tenant, NOTICE, datetime.now(UTC), details)
    return Sent(notice.kind, notice.to, entry.at, message_id, notice.digest), True


def sent_notices(ledger: Ledger, tenant: str) -> list[Sent]:
    """Every notice the tenant's ledger records, in the order they were sent."""
    return [
        Sent(e.details["kind"], e.details["to"], e.at, e.details["message_id"], e.details["digest"])
        for e in ledger.entries(tenant, (NOTICE,))
    ]
