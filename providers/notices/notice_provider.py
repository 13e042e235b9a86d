"""A notice to the tenant's contact as a resource of its stack: the `up` that declares it sends it
(`delivery.send_once`: once, recorded in the tenant's ledger), so the pull request's `pulumi
preview` shows the notice about to go out, and its text is reviewed with the stage. An `up` with
a changed text sends the corrected notice; a notice cannot be taken back, so deleting the
resource sends and deletes nothing (the ledger keeps the record).
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import Field, Schema, SchemaProvider, nonempty_text
from providers.errors import NoticeError
from providers.notices.delivery import Notice, send_once

__all__ = ["NoticeProvider"]

NOTICE = Schema(
    kind="notice",
    fields=(
        Field("tenant", nonempty_text, replaces=True),
        Field("kind", nonempty_text, replaces=True),
        Field("sender", nonempty_text),
        Field("to", nonempty_text),
        Field("subject", nonempty_text),
        Field("text", nonempty_text),
    ),
)


class NoticeProvider(SchemaProvider):
    schema = NOTICE
    error = NoticeError

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.load(props, f"sending the {props.get('kind')} notice of {props.get('tenant')!r}")
        return CreateResult(f"{p['tenant']}-{p['kind']}", _sent(p))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # A record of what was sent; nothing live stands behind it.
        return ReadResult(id_, props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        p = self.load(news, f"sending the corrected {news.get('kind')} notice")
        return UpdateResult(_sent(p))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None


def _sent(p: dict[str, Any]) -> dict[str, Any]:
    fields = ("tenant", "kind", "sender", "to", "subject", "text")
    sent, _ = send_once(Notice(**{key: p[key] for key in fields}))
    return {**p, "sent_at": sent.at.isoformat(), "message_id": sent.message_id}
