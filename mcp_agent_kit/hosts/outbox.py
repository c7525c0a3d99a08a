"""hosts.outbox: one Server-Sent Events stream of an ACP connection — buffered until its GET comes, then written.

The agent's reader thread `put`s each message for the stream (connection-scoped or one session's); when
OUTBOX_LIMIT messages wait unread, `put` blocks (the agent's output waits: back-pressure, as the ACP SDK's
server does) until a reader takes some or the outbox closes. A GET `attach`es (a later GET for the same stream
takes over, the earlier one ends) and `serve` writes on the engine's stream thread: `data: <message>\\n\\n`
per message (compact JSON, one line, as the agent wrote it), a `: keepalive` comment after `keepalive`
seconds of quiet, until the outbox closes (what is left is written first, unless it was discarded) or the
client goes. A message is removed only once written. Rules: one reader at a time; no JSON-RPC knowledge.
"""

from __future__ import annotations

import collections
import threading

from mcp_agent_kit.httpd import Channel

__all__ = ["OUTBOX_LIMIT", "SSE_HEAD", "SseOutbox"]

OUTBOX_LIMIT = 1024
SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache, no-transform\r\n"
            b"X-Accel-Buffering: no\r\nConnection: close\r\n\r\n")


class SseOutbox:
    """One stream's messages (see the module's doc)."""

    def __init__(self, limit: int = OUTBOX_LIMIT) -> None:
        self.limit = limit
        self._items: collections.deque[str] = collections.deque()
        self._cond = threading.Condition()
        self._reader: object | None = None
        self.closed = False

    @property
    def waiting(self) -> int:
        return len(self._items)

    @property
    def attached(self) -> bool:
        return self._reader is not None

    def put(self, text: str) -> bool:
        """Queue one message; blocks while the outbox is full; False once it is closed."""
        with self._cond:
            while len(self._items) >= self.limit and not self.closed:
                self._cond.wait(1.0)
            if self.closed:
                return False
            self._items.append(text)
            self._cond.notify_all()
            return True

    def close(self, discard: bool = False) -> None:
        """No more messages; readers write what is left (unless `discard`), then end."""
        with self._cond:
            self.closed = True
            if discard:
                self._items.clear()
            self._cond.notify_all()

    def attach(self) -> object:
        """A new reader's token (an earlier reader ends)."""
        token = object()
        with self._cond:
            self._reader = token
            self._cond.notify_all()
        return token

    def _take(self, token: object, timeout: float) -> list[str] | None:
        """What waits (maybe nothing after `timeout`); None when this reader must end."""
        with self._cond:
            if self._reader is token and not self._items and not self.closed:
                self._cond.wait(timeout)
            if self._reader is not token or (self.closed and not self._items):
                return None
            return list(self._items)

    def _taken(self, token: object, count: int) -> None:
        with self._cond:
            if self._reader is token:
                for _ in range(min(count, len(self._items))):
                    self._items.popleft()
                self._cond.notify_all()

    def _detach(self, token: object) -> None:
        with self._cond:
            if self._reader is token:
                self._reader = None

    def serve(self, channel: Channel, token: object, keepalive: float) -> bool:
        """Write this stream on `channel` until it ends (see the module's doc); False: close the connection."""
        try:
            channel.write(SSE_HEAD)
            channel.flush()
            while (items := self._take(token, keepalive)) is not None:
                if not items:
                    channel.write(b": keepalive\n\n")
                for text in items:
                    channel.write(b"data: " + text.encode() + b"\n\n")
                channel.flush()
                self._taken(token, len(items))
        except OSError:
            pass
        finally:
            self._detach(token)
        return False
