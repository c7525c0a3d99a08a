"""exchange: what the engine hands an application — the parsed Request and the Channel to answer on.

Rules: plain data and a write buffer; no parsing, no event loop. The engine fills a Request from a
head it has read; the app writes its response to the Channel (buffered, flushed onto the socket
in blocking mode under the engine's write timeout). An app may give the connection away after
its response (`Server.hand_off` for a stream thread, `Server.take_over` for another owner such
as the WebSocket hub).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass

from mcp_agent_kit.httpd.head import Headers

Receiver = Callable[[socket.socket, bytes], None]
"""receiver(sock, rest): the new owner of a connection and the bytes already read past the head."""


@dataclass(slots=True)
class Request:
    method: str
    target: str
    version: str
    headers: Headers
    body: bytes
    requestline: str
    keep_alive: bool
    complete: bool = True  # False: the body was not read (over the limit, or framing not spoken)


class Channel:
    """Where a handler writes its response: a small buffer in front of the (blocking) socket."""

    __slots__ = ("_buf", "address", "broken", "handoff", "receiver", "sock")

    def __init__(self, sock: socket.socket, address: object) -> None:
        self.sock = sock
        self.address = address
        self._buf = bytearray()
        self.broken = False
        self.handoff: Callable[[], bool] | None = None  # set by Server.hand_off: runs on a stream thread
        self.receiver: Receiver | None = None  # set by Server.take_over: gets the socket when the app returns

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._buf += data
        if len(self._buf) >= 65536:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if not self._buf:
            return
        data, self._buf = bytes(self._buf), bytearray()
        try:
            self.sock.sendall(data)
        except OSError:
            self.broken = True
            raise

    closed = False
