"""ws_connection: one upgraded WebSocket connection — its limits, its handler, its queues.

`WsConnection.send` and `close` may be called from any thread: a frame is written at once when the
socket takes it, else queued for the hub's loop (ws_server) to write without blocking; a queue past
`WsLimits.max_queued_bytes` closes the connection with 1008 and refuses the message. Handler calls
run on the hub's pool through a per-connection inbox, one at a time and in order. Rules: the
lock guards the output buffer, the state and the inbox; only the hub's loop reads the socket or
closes it; `closed` runs once, after every `received`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from mcp_agent_kit.httpd import websocket as ws
from mcp_agent_kit.httpd.exchange import Request
from mcp_agent_kit.httpd.head import Headers

log = logging.getLogger("mcp_agent_kit.httpd")
OPEN, CLOSING, DRAINING, DONE = range(4)
BATCH = 64  # handler calls one connection runs before its worker turns to the others


class Loop(Protocol):
    """What a connection needs of its hub."""

    def poke(self, conn: WsConnection) -> None: ...

    def run(self, call: Callable[[], None]) -> None: ...


@dataclass(frozen=True)
class WsLimits:
    """Per connection. Sizes are bytes, times seconds."""

    max_frame: int = 1 << 20
    max_message: int = 1 << 20
    max_queued_bytes: int = 4 << 20  # unsent output; past it the connection is closed with 1008
    ping_interval: float = 20.0
    pong_timeout: float = 20.0
    close_timeout: float = 5.0
    text_only: bool = True


class WsHandler(Protocol):
    """One instance per connection, made by the app; its calls run on the hub's workers."""

    def opened(self, conn: WsConnection) -> None: ...

    def received(self, conn: WsConnection, message: str | bytes) -> None: ...

    def closed(self, conn: WsConnection, code: int, reason: str) -> None: ...


class WsConnection:
    """One upgraded connection. `send` and `close` are safe from any thread; the rest is the hub's."""

    __slots__ = ("__weakref__", "_inbox", "_inbox_bytes", "_scheduled", "address", "close_seen", "code", "deadline",
                 "decoder", "failed", "handler", "headers", "hub", "limits", "lock", "mask", "next_ping", "out",
                 "path", "paused", "pong_due", "principal", "query", "reason", "sock", "state", "subprotocol")

    def __init__(self, request: Request, address: object, handler: WsHandler, limits: WsLimits,
                 principal: str | None, subprotocol: str | None) -> None:
        parts = urlsplit(request.target)
        self.principal = principal
        self.path = parts.path
        self.query = parts.query
        self.headers: Headers = request.headers
        self.address = address
        self.subprotocol = subprotocol
        self.handler = handler
        self.limits = limits
        self.sock: socket.socket | None = None
        self.hub: Loop | None = None
        self.decoder = ws.Decoder(server=True, max_frame=limits.max_frame, max_message=limits.max_message,
                                  text_only=limits.text_only)
        self.state = OPEN
        self.code = ws.ABNORMAL  # what `closed` reports: the first close sent or received
        self.reason = ""
        self.close_seen = False  # the peer's close frame arrived
        self.failed = False  # we failed the connection: its input is read away, not decoded
        self.deadline = 0.0  # CLOSING/DRAINING: when we stop waiting for the peer
        self.next_ping = time.monotonic() + limits.ping_interval
        self.pong_due = 0.0
        self.mask = 0  # the selector events registered now
        self.paused = False  # its handler is behind: stop reading
        self.lock = threading.Lock()
        self.out = bytearray()
        self._inbox: collections.deque[Callable[[], None]] = collections.deque()
        self._inbox_bytes = 0
        self._scheduled = False

    def __repr__(self) -> str:
        return f"<WsConnection {self.path} {self.address} principal={self.principal!r}>"

    # ---- any thread --------------------------------------------------------------------------------
    def send(self, message: str | bytes) -> bool:
        """Queue a message (never blocks). False when closing or closed; a queue past its bound
        closes the connection with 1008 and drops this message."""
        data = ws.message_frame(message)
        with self.lock:
            if self.state != OPEN:
                return False
            if self.out and len(self.out) + len(data) > self.limits.max_queued_bytes:  # one message may exceed it
                self.start_close(1008, "the client is not reading fast enough")
                overflow = True
            else:
                overflow = False
                self.queue_frame(data)
        self._poke()
        return not overflow

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake (a code that may be sent: 1000-1003, 1007-1014, 3000-4999)."""
        ws.close_payload(code, reason)  # ValueError for a code that must not be sent
        with self.lock:
            if self.state == OPEN:
                self.start_close(code, reason)
        self._poke()

    @property
    def queued_bytes(self) -> int:
        return len(self.out)

    # ---- under the lock --------------------------------------------------------------------------------
    def queue_frame(self, data: bytes) -> None:
        """Append a frame; written at once when the socket takes it (the loop writes the rest)."""
        out = self.out
        if not out and self.sock is not None:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                sent = len(data)  # the reader sees the broken connection
            if sent == len(data):
                return
            data = data[sent:]
        out += data

    def start_close(self, code: int, reason: str) -> None:
        self.state = CLOSING
        self.code, self.reason = code, reason
        self.deadline = time.monotonic() + self.limits.close_timeout
        self.queue_frame(ws.close_frame(code, reason))

    def _poke(self) -> None:
        hub = self.hub
        if hub is not None and (self.out or self.state != OPEN):
            hub.poke(self)

    # ---- the handler side -------------------------------------------------------------------------
    def post(self, call: Callable[[], None], size: int = 0) -> None:
        """Run `call` on the hub's pool after this connection's earlier calls."""
        with self.lock:
            self._inbox.append(call)
            self._inbox_bytes += size
            if self._scheduled:
                return
            self._scheduled = True
        assert self.hub is not None
        self.hub.run(self._run)

    def behind(self) -> bool:
        return self._inbox_bytes > self.limits.max_queued_bytes

    def _run(self) -> None:
        for _ in range(BATCH):
            with self.lock:
                if not self._inbox:
                    self._scheduled = False
                    return
                call = self._inbox.popleft()
            call()
        with self.lock:
            if not self._inbox:
                self._scheduled = False
                return
        assert self.hub is not None
        self.hub.run(self._run)  # fairness: the others get a turn

    def received_call(self, message: str | bytes) -> Callable[[], None]:
        size = len(message)

        def call() -> None:
            with self.lock:
                self._inbox_bytes -= size
                resume = self.paused and not self.behind()
            if resume and self.hub is not None:
                self.hub.poke(self)
            self._guard(self.handler.received, message)

        return call

    def _guard(self, method: Callable[..., None], *args: object) -> None:
        try:
            method(self, *args)
        except Exception:
            log.exception("WebSocket handler failed")
            with contextlib.suppress(ValueError):
                self.close(1011, "internal error")

    def opened_call(self) -> None:
        self._guard(self.handler.opened)

    def closed_call(self) -> None:
        try:
            self.handler.closed(self, self.code, self.reason)
        except Exception:
            log.exception("WebSocket handler failed in closed()")
