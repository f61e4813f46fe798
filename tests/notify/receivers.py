"""Real local receivers for the notification tests: an HTTP server that records every request
(ntfy, Gotify and webhook shapes) and can be down, and an SMTP server (aiosmtpd)."""

import json
import threading
from dataclasses import dataclass
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from tests.server import free_port

# The receivers listen on 127.0.0.1, which mdboost refuses as a destination unless told that the
# receiver runs on the NAS itself: every server and Settings that sends to one sets this.
ALLOW_LOCAL = {"MDBOOST_NOTIFY_ALLOW_LOCAL": "true"}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class HttpReceiver:
    """Records requests on 127.0.0.1:<port>; `status` is what it answers (503: "down"; a 3xx
    sends `location`, and such requests are recorded too); stop() closes the port and start()
    opens the same port again."""

    def __init__(self) -> None:
        self.port = free_port()
        self.requests: list[Request] = []
        self.status = 200
        self.location = ""
        self.lock = threading.Lock()
        self.in_flight = 0  # requests being answered now
        self.server: ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "HttpReceiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                with receiver.lock:
                    receiver.in_flight += 1
                try:
                    self.answer()
                finally:
                    with receiver.lock:
                        receiver.in_flight -= 1

            def answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    status = receiver.status
                    if status < 400:
                        receiver.requests.append(Request(self.command, self.path, headers, body))
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("location", receiver.location)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"id": "x"}')

            do_GET = do_PUT = do_POST  # a followed redirect may arrive as any of these

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def idle(self) -> bool:
        with self.lock:
            return self.in_flight == 0

    def taken(self) -> list[Request]:
        with self.lock:
            return list(self.requests)


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


class SmtpReceiver:
    """aiosmtpd on a free port, no TLS: mdboost must send without STARTTLS when not offered."""

    def __init__(self) -> None:
        self.inbox = _Inbox()
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=free_port())

    @property
    def port(self) -> int:
        return int(self.controller.port)

    def __enter__(self) -> "SmtpReceiver":
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()
