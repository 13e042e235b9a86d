"""`gpu-tenants expiring --remind` against a versitygw of its own (the ledger bucket with Object
Lock) and a webhook receiver started here: each reminder (30, 14, 7 and 0 days before the term's
end) is posted exactly once over the days of a term's last month, reruns included; a receiver
that fails gets the reminder again on the next run; the webhook's URL is never printed."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from providers.retention.ledger import Ledger
from sandbox.retention_store.service import LEDGER_BUCKET
from tenant_stack.commands import main
from tenant_stack.expiry import REMINDER_ACTION
from tests.isolated import ROOT, Gateway, ledger_gateway

END = date(2028, 1, 4)  # tenant-foo's term end
TOKEN = "T0KEN-" + uuid.uuid4().hex


@dataclass
class Receiver:
    """A Slack-style webhook: takes JSON posts at /hooks/<token>, or answers `fail_with`."""

    url: str
    bodies: list[dict[str, object]] = field(default_factory=list)
    fail_with: int | None = None


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with ledger_gateway(tmp_path_factory.mktemp("reminders")) as running:
        yield running


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    got = Receiver(f"http://127.0.0.1:{server.server_address[1]}/hooks/{TOKEN}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = got.fail_with or (200 if self.path == f"/hooks/{TOKEN}" else 404)
            if status == 200:
                got.bodies.append(json.loads(body))
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"invalid_token")

        def log_message(self, *_: object) -> None:
            pass

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield got
    server.shutdown()
    server.server_close()


@pytest.fixture
def tenants(tmp_path: Path) -> tuple[Path, str]:
    """tenant-foo's spec under a slug of its own, so its ledger starts empty."""
    name = f"term-{uuid.uuid4().hex[:6]}"
    slug = f"tenant-{name}"
    text = (ROOT / "tenants" / "tenant-foo.yaml").read_text()
    text = text.replace("tenant-foo", slug).replace("team-foo", f"team-{name}")
    (tmp_path / f"{slug}.yaml").write_text(text)
    return tmp_path, slug


@pytest.fixture
def env(gateway: Gateway, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in gateway.env(RETENTION_S3_LEDGER_BUCKET=LEDGER_BUCKET).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GPU_TENANTS_WEBHOOK_URL", receiver.url)


def expiring(
    capsys: pytest.CaptureFixture[str], directory: Path, day: date
) -> tuple[int, dict[str, object], str]:
    status = main(
        ["expiring", "--remind", "--json", "--tenants", str(directory), "--now", day.isoformat()]
    )
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    return status, (json.loads(out) if out else {}), err


@pytest.mark.usefixtures("env")
def test_each_reminder_goes_out_once_over_the_terms_last_month(
    capsys: pytest.CaptureFixture[str], receiver: Receiver, tenants: tuple[Path, str]
) -> None:
    directory, slug = tenants
    sent_on: dict[int, list[int]] = {}
    for days_before in (40, 31, 30, 30, 29, 20, 10, 8, 7, 7, 3, 0, 0, -2):
        status, report, _ = expiring(capsys, directory, END - timedelta(days=days_before))
        assert status == (1 if days_before <= 30 else 0)
        for reminder in report["reminders_sent"]:  # type: ignore[attr-defined]
            sent_on.setdefault(days_before, []).append(reminder["days"])
    assert sent_on == {30: [30], 10: [14], 7: [7], 0: [0]}
    texts = [str(body["text"]) for body in receiver.bodies]
    assert len(texts) == 4
    assert all(slug in text and "2028-01-04" in text for text in texts)
    assert "ends in 30 days" in texts[0]
    assert f"gpu-tenants stage {slug} frozen" in texts[-1]
    assert "ends today" in texts[-1]
    with Ledger.open() as ledger:
        recorded = [e for e in ledger.entries(slug) if e.action == REMINDER_ACTION]
    assert sorted(int(e.details["days"]) for e in recorded) == [0, 7, 14, 30]


@pytest.mark.usefixtures("env")
def test_a_receiver_that_fails_gets_the_reminder_on_the_next_run(
    capsys: pytest.CaptureFixture[str], receiver: Receiver, tenants: tuple[Path, str]
) -> None:
    directory, slug = tenants
    receiver.fail_with = 500
    status, _, err = expiring(capsys, directory, END - timedelta(days=14))
    assert status == 2
    assert "HTTP 500" in err
    assert "127.0.0.1" in err
    with Ledger.open() as ledger:
        assert [e for e in ledger.entries(slug) if e.action == REMINDER_ACTION] == []
    receiver.fail_with = None
    status, report, _ = expiring(capsys, directory, END - timedelta(days=13))
    assert status == 1
    assert [r["days"] for r in report["reminders_sent"]] == [14]  # type: ignore[attr-defined]
    assert len(receiver.bodies) == 1


@pytest.mark.usefixtures("env")
def test_remind_without_a_webhook_cannot_run(
    capsys: pytest.CaptureFixture[str], tenants: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, _ = tenants
    monkeypatch.delenv("GPU_TENANTS_WEBHOOK_URL")
    status, report, err = expiring(capsys, directory, END)
    assert (status, report) == (2, {})
    assert "GPU_TENANTS_WEBHOOK_URL" in err
