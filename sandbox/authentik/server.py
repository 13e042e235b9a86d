"""HTTP plumbing: a threading server that hands each request to the Api and logs one line."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

from sandbox.authentik.api import Api, Request
from sandbox.authentik.listing import Query


class Handler(BaseHTTPRequestHandler):
    api: ClassVar[Api]
    protocol_version = "HTTP/1.1"
    server_version = "authentik-emulator"

    def _handle(self) -> None:
        started = time.monotonic()
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = Request(
            method=self.command,
            path=url.path,
            query=Query(parse_qs(url.query, keep_blank_values=True)),
            authorization=self.headers.get("Authorization"),
            body=self.rfile.read(length) if length else b"",
        )
        response = self.api.handle(request)
        payload = b"" if response.body is None else json.dumps(response.body).encode()
        self.send_response(response.status)
        if response.body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        elapsed = (time.monotonic() - started) * 1000
        # Never the headers: the Authorization header carries the token. Written before the
        # body, so a client that has its answer finds the request in the log.
        sys.stderr.write(
            f"{self.client_address[0]} {self.command} {self.path} {response.status} "
            f"{elapsed:.1f}ms\n"
        )
        self.wfile.write(payload)

    # http.server dispatches on these names.
    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Replaced by the line _handle writes before the reply's body."""


def make_server(host: str, port: int, api: Api) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"api": api})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
