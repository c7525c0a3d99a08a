"""An example WebSocket app on the httpd engine, as a real one is written: the gate (httpd.gate.Policy:
Host, Origin, bearer token) decides before `accept`; the handler echoes and records what it saw.
Also raw-socket helpers for sending frames no polite client would send."""

from __future__ import annotations

import base64
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mcp_agent_kit.auth.resource import Refusal
from mcp_agent_kit.httpd import Channel, Policy, Request, Server, WsConnection, WsLimits, accept
from mcp_agent_kit.httpd import websocket as ws
from mcp_agent_kit.httpd.head import status_reply

TOKEN = "s3cret-token"


class Recorder:
    """Echoes every message; 'raise' makes it fail, 'flood' makes it send until its queue refuses."""

    def __init__(self) -> None:
        self.conn: WsConnection | None = None
        self.messages: list[str | bytes] = []
        self.ready = threading.Event()
        self.done = threading.Event()
        self.closes: list[tuple[int, str]] = []
        self.flooded = threading.Event()
        self.concurrent = 0
        self.overlapped = False
        self._lock = threading.Lock()

    def opened(self, conn: WsConnection) -> None:
        self.conn = conn
        self.ready.set()

    def received(self, conn: WsConnection, message: str | bytes) -> None:
        with self._lock:
            self.concurrent += 1
            self.overlapped |= self.concurrent > 1
        try:
            self.messages.append(message)
            if message == "raise":
                raise RuntimeError("the handler fails (on purpose)")
            if message == "flood":
                chunk = "x" * 16384
                while conn.send(chunk):
                    pass
                self.flooded.set()
                return
            conn.send(message)
        finally:
            with self._lock:
                self.concurrent -= 1

    def closed(self, conn: WsConnection, code: int, reason: str) -> None:
        self.closes.append((code, reason))
        self.done.set()



class App:
    """The engine app: Policy first, then the upgrade; one Recorder per connection."""

    def __init__(self, policy: Policy, limits: WsLimits) -> None:
        self.policy = policy
        self.limits = limits
        self.server: Server | None = None
        self.handlers: list[Recorder] = []
        self.made = threading.Condition()

    def __call__(self, request: Request, channel: Channel) -> bool:
        headers = request.headers
        refused = self.policy.refusal(headers.get("host"), headers.get("origin"))
        if refused:
            channel.write(status_reply(403, "Forbidden"))
            return False
        try:
            principal = self.policy.authorize(headers.get("authorization"), request.method, request.target)
        except Refusal as refusal:
            channel.write(status_reply(refusal.status, "Unauthorized"))
            return False
        handler = Recorder()
        offered = ws.offered_subprotocols(request)
        assert self.server is not None
        kept = accept(self.server, request, channel, handler, principal=principal, limits=self.limits,
                      subprotocol="chat" if "chat" in offered else None)
        with self.made:
            self.handlers.append(handler)
            self.made.notify_all()
        return kept

    def handler(self, index: int = -1, count: int = 1) -> Recorder:
        with self.made:
            assert self.made.wait_for(lambda: len(self.handlers) >= count, 10)
            return self.handlers[index]


@contextmanager
def serving(limits: WsLimits | None = None, *, token: str | None = TOKEN) -> Iterator[tuple[Server, App]]:
    app = App(Policy(token=token), limits or WsLimits())
    server = Server(("127.0.0.1", 0), app)
    app.server = server
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server, app
    finally:
        server.shutdown()
        server.server_close()


def url(server: Server, path: str = "/ws") -> str:
    return f"ws://127.0.0.1:{server.server_address[1]}{path}"


def handshake(server: Server, extra: str = f"Authorization: Bearer {TOKEN}\r\n", after: bytes = b"",
              rcvbuf: int = 0) -> socket.socket:
    """A raw socket past a 101 (the test then writes frames by hand); `after` rides with the head."""
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect(server.server_address)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n").encode() + after)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        assert chunk, head
        head += chunk
    assert head.startswith(b"HTTP/1.1 101 "), head
    assert ws.accept_key(key).encode() in head
    return sock


def masked(opcode: int, payload: bytes = b"", *, fin: bool = True, rsv: int = 0) -> bytes:
    """A client frame; rsv sets reserved bits (0x70) on its first byte."""
    raw = bytearray(ws.frame(opcode, payload, fin=fin, masked=True))
    raw[0] |= rsv
    return bytes(raw)


def events(sock: socket.socket, until: Callable[[list[ws.Event]], bool]) -> list[ws.Event]:
    """Read server frames until `until(events)` holds or the server closes the connection."""
    decoder = ws.Decoder(server=False, max_frame=1 << 24, max_message=1 << 24)
    seen: list[ws.Event] = []
    while not until(seen):
        data = sock.recv(65536)
        if not data:
            break
        seen += decoder.feed(data)
    return seen


def close_code(sock: socket.socket) -> int | None:
    """The code of the server's close frame (None when the connection ended without one)."""
    seen = events(sock, lambda got: any(isinstance(e, ws.Close) for e in got))
    closes = [e.code for e in seen if isinstance(e, ws.Close)]
    return closes[0] if closes else None
