"""A webhook receiver: a real HTTP server in a thread on loopback that keeps every POST it gets
(headers and body as sent) and answers with the status it is told to. `stop()` takes it down
(its port refuses connections, as a receiver that is down does) and `start()` brings it back
on the same port.

    with WebhookReceiver() as receiver:
        receiver.status = 503            # answers 503 until told otherwise
        receiver.url                     # http://127.0.0.1:<port>/hooks
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict
    body: bytes


class WebhookReceiver:
    def __init__(self):
        self.received: list[Received] = []
        self.status = 204
        self.port = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def _handler_class(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 — the http.server protocol
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                receiver.received.append(Received(path=self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body))
                self.send_response(receiver.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format, *args):  # noqa: A002 — keep test output quiet
                pass

        return Handler

    def start(self) -> WebhookReceiver:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler_class())
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
