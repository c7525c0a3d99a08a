"""handler: `http.server.BaseHTTPRequestHandler` driven by the engine, one parsed request at a time.

Subclasses keep writing `do_GET`/`do_POST` with `send_response`, `send_header`, `wfile` and
`headers` as before; the engine has already read the head and the body (`rfile` holds the body),
so nothing here waits for the client. `serve` is the engine's application callable for a class.
Rules: no protocol above HTTP; a method without `do_X` goes to `method_missing` (501 by default).
"""

from __future__ import annotations

import io
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any

from mcp_agent_kit.httpd.engine import Channel, Request


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, request: Request, channel: Channel, server: Any) -> None:  # no socketserver lifecycle
        self.server = server
        self.connection: socket.socket = channel.sock
        self.request = channel.sock
        self.client_address = channel.address  # type: ignore[assignment]
        self.rfile = io.BytesIO(request.body)
        self.wfile = channel  # type: ignore[assignment]
        self.command = request.method
        self.path = request.target
        self.request_version = request.version
        self.requestline = request.requestline
        self.raw_requestline = request.requestline.encode("iso-8859-1")
        self.headers = request.headers  # type: ignore[assignment]
        self.close_connection = not request.keep_alive
        self.body_complete = request.complete
        self._connection_sent = False

    @classmethod
    def serve(cls, server: Any) -> Any:
        """The engine's app for this handler class: one instance per request."""

        def app(request: Request, channel: Channel) -> bool:
            handler = cls(request, channel, server)
            handler.run()
            return not handler.close_connection

        return app

    def send_header(self, keyword: str, value: str) -> None:
        if keyword.lower() == "connection":
            self._connection_sent = True
        super().send_header(keyword, value)

    def end_headers(self) -> None:
        """A response after which the connection closes says so (RFC 9112 §9.6): a keep-alive client
        must not send its next request on it."""
        if self.close_connection and not self._connection_sent:
            self.send_header("Connection", "close")
        super().end_headers()

    def run(self) -> None:
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self.method_missing()
        else:
            method()
        self.wfile.flush()

    def method_missing(self) -> None:
        self.send_error(501, f"Unsupported method ({self.command!r})")
