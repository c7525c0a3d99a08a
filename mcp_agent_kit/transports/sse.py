"""sse: one HTTP response that is JSON by default and becomes a Server-Sent Events stream on demand.

An Exchange is the Outbox of one POST (or a GET stream): the first notification switches the
reply to `text/event-stream`, each message is one `event: message` and the final reply closes
the stream. A failed write marks the client gone and sets the request's cancel flag (closing the
stream is cancellation, digest §6), except on a resumable stream (sse_replay), whose events are
kept for the client to fetch again. A long-lived stream (the handshake-era GET stream) switches
to queued writes: `notify` from any thread only appends to a per-stream buffer of at most
MAX_QUEUED_BYTES and never touches the socket; the stream's own thread `pump`s the buffer out. A
consumer that falls a full buffer behind is cut off (`abort`), never slowing the notifier.
Rules: no protocol logic; writes are serialized by one lock; it never blocks on anything but the
socket, and in queued mode the notifier never blocks at all.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from mcp_agent_kit.core.context import CancelFlag
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, RpcError
from mcp_agent_kit.wire.reply import encode_reply

if TYPE_CHECKING:
    from mcp_agent_kit.transports.sse_replay import Stream

Requester = Callable[["Exchange", str, dict[str, Any]], dict[str, Any]]
MAX_QUEUED_BYTES = 1024 * 1024  # per queued stream: events waiting to be written; one more drops it


class Exchange:
    """The response channel of one HTTP request; also the dispatcher's Outbox for it."""

    def __init__(
        self,
        handler: BaseHTTPRequestHandler,
        *,
        can_stream: bool,
        extra_headers: dict[str, str] | None = None,
        requester: Requester | None = None,
        stream: Stream | None = None,
        afterwards: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.handler = handler
        self.can_stream = can_stream
        self.extra_headers = extra_headers or {}
        self.cancel: threading.Event = CancelFlag()  # listenable: Context.add_listener('cancelled', fn)
        self.streaming = False
        self.broken = False
        self.sent = False
        self._lock = threading.RLock()  # re-entered when this exchange is its own stream's sink
        self._requester = requester
        self._stream = stream
        self._afterwards = afterwards  # where notifications go once this reply is over (a legacy task's)
        self._queued: collections.deque[bytes] | None = None  # queued mode: frames pump() will write
        self._queued_bytes = 0
        self._queue_limit = MAX_QUEUED_BYTES
        self._ready = threading.Condition(threading.Lock())

    # ---- Outbox ------------------------------------------------------------------------------
    def notify(self, message: dict[str, Any]) -> None:
        if self._queued is not None:
            self._enqueue(b"event: message\ndata: " + encode_reply(message) + b"\n\n")
            return
        with self._lock:
            if self.sent:
                if self._afterwards is not None:
                    self._afterwards(message)
                return
            if self._stream is not None and self.streaming:  # kept for a resuming client, even when gone
                self._event(message)
                return
            if self.broken or not (self.streaming or self.can_stream):
                return
            if not self.streaming:
                self._start()
            self._event(message)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self._requester is None:
            raise RpcError(INTERNAL_ERROR, "this transport cannot send requests to the client")
        return self._requester(self, method, params)

    def heartbeat(self) -> bool:
        """Write an SSE comment so a vanished client is noticed; False once it is gone."""
        with self._lock:
            if self.streaming and not self.broken and not self.sent:
                self._write(b": keep-alive\n\n")
            return not self.broken

    # ---- queued mode (a long-lived stream) ----------------------------------------------------------
    def queue_writes(self, limit: int | None = None) -> None:
        """From now on `notify` only queues (at most `limit` bytes) and `pump` writes."""
        self._queue_limit = MAX_QUEUED_BYTES if limit is None else limit
        self._queued = collections.deque()

    def _enqueue(self, frame: bytes) -> None:
        with self._ready:
            if self.broken or self.sent:
                return
            if self._queued_bytes + len(frame) > self._queue_limit:
                overflow = True
            else:
                overflow = False
                assert self._queued is not None
                self._queued.append(frame)
                self._queued_bytes += len(frame)
                self._ready.notify()
        if overflow:
            self.abort()

    def pump(self, timeout: float) -> int:
        """Write what is queued, waiting up to `timeout` for something: frames written, -1 once gone."""
        with self._ready:
            queued = self._queued
            assert queued is not None
            if not queued and not self.broken:
                self._ready.wait(timeout)
            frames = list(queued)
            queued.clear()
            self._queued_bytes = 0
        with self._lock:
            for frame in frames:
                self._write(frame)
            return -1 if self.broken else len(frames)

    def abort(self) -> None:
        """Cut the connection now, from any thread (a consumer too far behind): even a write
        blocked on the socket fails at once. Not resumable; a listen or GET stream just ends."""
        self.broken = True
        self.cancel.set()
        self.handler.close_connection = True
        with contextlib.suppress(OSError):
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        with self._ready:
            self._ready.notify_all()

    def start_stream(self) -> None:
        with self._lock:
            if not self.streaming:
                self._start()

    # ---- the end ------------------------------------------------------------------------------
    def finish(self, reply: dict[str, Any] | None, status: int = 200) -> None:
        """Send the final reply: as the last SSE event, or as one JSON body."""
        with self._lock:
            if self.sent:
                return
            self.sent = True
            if self.streaming:
                if self._stream is not None:
                    frame = b"event: message\ndata: " + encode_reply(reply) + b"\n\n" if reply is not None else b""
                    self._stream.emit(frame, last=True)
                elif reply is not None:
                    self._event(reply)
                self.handler.close_connection = True
                return
            if self.broken:
                return
            if reply is None:
                self._respond(202 if status == 200 else status, b"", None)
                return
            self._respond(status, encode_reply(reply), "application/json")

    def close_stream(self) -> None:
        """End an SSE stream early (the client may resume it); later events are dropped."""
        with self._lock:
            if self.streaming and not self.sent:
                self.sent = True
                self.handler.close_connection = True
                self.broken = True

    def interrupt(self) -> bool:
        """Close a resumable stream's connection now, the request going on (SSE polling): the
        client comes back with Last-Event-ID for the rest. False when this stream cannot resume."""
        with self._lock:
            if self._stream is None or not self.streaming or self.broken:
                return False
            self._disconnect()
            return True

    # ---- as a resumable stream's connection (sse_replay.Stream calls these, its lock held) ------------
    def write_raw(self, frame: bytes) -> None:
        with self._lock:
            if not self.streaming:
                self._start()
            self._write(frame)

    def end(self) -> None:
        """No more events will come through this connection (the stream ended, or moved to a
        newer connection): close it. The request it may belong to goes on."""
        with self._lock:
            self.handler.close_connection = True
            if not self.broken:
                self._disconnect()

    # ---- writing (lock held) ---------------------------------------------------------------------
    def _respond(self, status: int, body: bytes, content_type: str | None) -> None:
        handler = self.handler
        try:
            handler.send_response(status)
            if content_type:
                handler.send_header("Content-Type", content_type)
            for name, value in self.extra_headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            handler.wfile.flush()
        except OSError:
            self._gone()

    def _start(self) -> None:
        handler = self.handler
        self.streaming = True
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("X-Accel-Buffering", "no")
            handler.send_header("Connection", "close")
            for name, value in self.extra_headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.close_connection = True
        except OSError:
            self._gone()
            return
        stream = self._stream
        if stream is not None and stream.sink is None:  # a resumable POST stream opens with its priming event
            stream.sink = self
            self._write(stream.priming())
        else:
            self._write(b"")

    def _event(self, message: dict[str, Any]) -> None:
        frame = b"event: message\ndata: " + encode_reply(message) + b"\n\n"
        if self._stream is not None:
            self._stream.emit(frame)
        else:
            self._write(frame)

    def _write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            if data:
                self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except OSError:
            self._gone()

    def _disconnect(self) -> None:
        """Half-close the socket so the client sees the stream end; later writes just fail."""
        self.broken = True
        self.handler.close_connection = True
        try:
            self.handler.wfile.flush()
            self.handler.connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _gone(self) -> None:
        self.broken = True
        if self._stream is None:  # a resumable stream's events wait for the client to come back
            self.cancel.set()
        self.handler.close_connection = True
