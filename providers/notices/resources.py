"""The notices as the program declares them."""

from __future__ import annotations

import pulumi
from pulumi.dynamic import Resource

from providers.notices.notice_provider import NoticeProvider

__all__ = ["TenantNotice"]


class TenantNotice(Resource, module="notices", name="TenantNotice"):
    """Sent to the tenant's contact by the `up` that declares it, once."""

    sent_at: pulumi.Output[str]
    message_id: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        tenant: str,
        kind: str,
        sender: str,
        to: str,
        subject: str,
        text: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        inputs = {
            "tenant": tenant,
            "kind": kind,
            "sender": sender,
            "to": to,
            "subject": subject,
            "text": text,
            "sent_at": None,
            "message_id": None,
        }
        super().__init__(NoticeProvider(), resource_name, inputs, opts)
