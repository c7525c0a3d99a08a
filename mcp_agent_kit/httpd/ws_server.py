"""ws_server: WebSocket connections served without a thread per socket — `accept` and the hub.

An engine app that has passed its own gate (Host, Origin, auth) calls `accept`: it writes the 101
and the engine gives the socket (and any bytes read past the head) to the server's hub. One
selector thread per hub holds every upgraded socket: it reads and decodes frames (websocket.py),
answers pings, pings each peer every `ping_interval` and fails it (1011) without a pong within
`pong_timeout`, runs the closing handshake (bounded by `close_timeout`) and writes the send queues
without blocking. Whole messages go to a small worker pool, in order per connection: a
connection's handler calls never overlap. Rules: `send` never blocks; a queue past
`max_queued_bytes` closes that connection with 1008 and no other connection waits for it; a peer
whose handler falls behind stops being read (TCP pushes back); `closed` runs exactly once, after
every `received`; stopping the server closes every connection with 1001. An idle connection costs
one registered socket and a few small objects — no thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping

from mcp_agent_kit.httpd import websocket as ws
from mcp_agent_kit.httpd.engine import Server
from mcp_agent_kit.httpd.exchange import Channel, Request
from mcp_agent_kit.httpd.pool import Pool
from mcp_agent_kit.httpd.ws_connection import CLOSING, DONE, DRAINING, OPEN, WsConnection, WsHandler, WsLimits

upgrade_refusal = ws.upgrade_refusal
log = logging.getLogger("mcp_agent_kit.httpd")
WORKERS = 16  # the hub's handler threads, shared by all its connections
_WAKE = object()
_HUBS_LOCK = threading.Lock()
__all__ = ["WsConnection", "WsHandler", "WsLimits", "accept", "upgrade_refusal"]


class _Hub:
    """The selector thread of one server and every connection it holds."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.pool = Pool(WORKERS, "httpd-ws-worker")
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._lock = threading.Lock()
        self._new: list[tuple[WsConnection, socket.socket, bytes]] = []
        self._poked: set[WsConnection] = set()
        self._woken = False
        self._conns: set[WsConnection] = set()
        self._reserved = 0
        self._tick = 1.0
        self._next_timers = 0.0
        self._stopping = False
        self._halt = False
        self._empty = threading.Event()  # no connection now
        self._empty.set()
        self._thread = threading.Thread(target=self._loop, name="httpd-ws", daemon=True)
        self._thread.start()

    def run(self, call: Callable[[], None]) -> None:
        self.pool.submit(call)

    @property
    def count(self) -> int:
        return self._reserved

    def full(self) -> bool:
        return self._stopping or self._reserved >= self.capacity

    def add(self, conn: WsConnection, sock: socket.socket, rest: bytes) -> None:
        """The engine's receiver: the socket joins the loop (on the loop thread)."""
        with self._lock:
            if self._halt:
                sock.close()
                return
            self._reserved += 1
            self._empty.clear()
            self._new.append((conn, sock, rest))
        self._wake()

    def poke(self, conn: WsConnection) -> None:
        with self._lock:
            self._poked.add(conn)
        self._wake()

    def _wake(self) -> None:
        if not self._woken:
            self._woken = True
            with contextlib.suppress(OSError):
                self._wake_w.send(b"\0")

    def stop(self) -> None:
        """Close every connection with 1001, wait for the handshakes (bounded), end the loop."""
        with self._lock:
            self._stopping = True
            conns = list(self._conns) + [conn for conn, _, _ in self._new]
        for conn in conns:
            conn.close(1001, "server shutting down")
        waits = [conn.limits.close_timeout for conn in conns]
        if threading.current_thread() is not self._thread:
            self._empty.wait(max(waits, default=0.0) + 0.5)
        with self._lock:
            self._halt = True
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(5.0)
        self.pool.stop()

    # ---- the loop --------------------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while not self._halt:
                for key, events in self._sel.select(self._tick):
                    if key.data is _WAKE:
                        self._woke()
                        continue
                    conn = key.data
                    if events & selectors.EVENT_WRITE:
                        self._flush(conn)
                    if events & selectors.EVENT_READ and conn.state != DONE:
                        self._read(conn)
                now = time.monotonic()
                if now >= self._next_timers:
                    self._next_timers = now + self._tick
                    self._timers(now)
        except Exception:
            log.exception("WebSocket hub failed")
        finally:
            with self._lock:
                self._halt = True
            for conn in list(self._conns):
                self._finish(conn)
            with self._lock:
                new, self._new = self._new, []
            for conn, sock, _ in new:
                sock.close()
                self._release(conn)
            self._sel.close()
            self._wake_r.close()
            self._wake_w.close()

    def _woke(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_r.recv(4096):
                pass
        with self._lock:
            self._woken = False
            new, self._new = self._new, []
            poked, self._poked = self._poked, set()
        for conn, sock, rest in new:
            self._join(conn, sock, rest)
        for conn in poked:
            if conn in self._conns:
                self._flush(conn)

    def _join(self, conn: WsConnection, sock: socket.socket, rest: bytes) -> None:
        sock.setblocking(False)
        with conn.lock:
            conn.sock = sock
        with self._lock:  # stop() lists them from another thread
            self._conns.add(conn)
        limits = conn.limits
        self._tick = max(0.01, min(self._tick, limits.ping_interval / 4, limits.pong_timeout / 4,
                                   limits.close_timeout / 4))
        conn.post(conn.opened_call)
        self._interest(conn)
        if self._stopping:
            conn.close(1001, "server shutting down")
        if rest:
            self._take(conn, rest)
        if conn.state != OPEN or conn.out:
            self._flush(conn)

    def _interest(self, conn: WsConnection) -> None:
        want = 0
        if not conn.paused or conn.state == DRAINING or conn.failed:
            want |= selectors.EVENT_READ
        if conn.out:
            want |= selectors.EVENT_WRITE
        if want == conn.mask or conn.sock is None:
            return
        if conn.mask == 0:
            self._sel.register(conn.sock, want, conn)
        elif want == 0:
            self._sel.unregister(conn.sock)
        else:
            self._sel.modify(conn.sock, want, conn)
        conn.mask = want

    def _read(self, conn: WsConnection) -> None:
        assert conn.sock is not None
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._finish(conn)
            return
        self._take(conn, data)

    def _take(self, conn: WsConnection, data: bytes) -> None:
        """Bytes from the peer: decode them unless we failed it or are draining."""
        if conn.failed or conn.state == DRAINING or conn.decoder.closed:
            return
        try:
            events = conn.decoder.feed(data)
        except ws.WsFailure as failure:
            for event in failure.events:  # what came before the bad frame still counts
                self._event(conn, event)
            events = []
            self._fail(conn, failure.code, failure.reason)
        for event in events:
            self._event(conn, event)
        if conn.behind() and not conn.paused:
            conn.paused = True
        if conn.state != DONE:
            self._interest(conn)
            self._flush(conn)

    def _event(self, conn: WsConnection, event: ws.Event) -> None:
        if isinstance(event, ws.WsMessage):
            if conn.state == OPEN:
                conn.post(conn.received_call(event.data), len(event.data))
        elif isinstance(event, ws.Ping):
            with conn.lock:
                if conn.state == OPEN:
                    conn.queue_frame(ws.frame(ws.PONG, event.data))
        elif isinstance(event, ws.Pong):
            conn.pong_due = 0.0
        else:
            conn.close_seen = True
            with conn.lock:
                if conn.state == OPEN:  # the peer starts the handshake: echo its code
                    conn.state = CLOSING
                    conn.code, conn.reason = event.code, event.reason
                    conn.deadline = time.monotonic() + conn.limits.close_timeout
                    conn.queue_frame(ws.frame(ws.CLOSE, ws.echo_payload(event)))

    def _fail(self, conn: WsConnection, code: int, reason: str) -> None:
        with conn.lock:
            conn.failed = True
            if conn.state == OPEN:
                conn.start_close(code, reason)

    def _flush(self, conn: WsConnection) -> None:
        """Write what the socket takes now; once our close is out and the handshake is over (or the
        peer failed), half-close and read away what is left until its FIN."""
        sock = conn.sock
        if sock is None or conn.state == DONE:
            return
        with conn.lock:
            out = conn.out
            try:
                sent = sock.send(out) if out else 0
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                sent = -1
            if sent > 0:
                del out[:sent]
            pending = bool(out)
        if sent < 0:  # the peer is gone
            self._finish(conn)
            return
        if not pending and conn.state == CLOSING and (conn.close_seen or conn.failed):
            conn.state = DRAINING
            conn.deadline = time.monotonic() + conn.limits.close_timeout
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
        if conn.paused and not conn.behind():
            conn.paused = False
        self._interest(conn)

    def _timers(self, now: float) -> None:
        for conn in [c for c in self._conns if c.state != OPEN and c.deadline <= now]:
            self._finish(conn)
        for conn in self._conns:
            if conn.state != OPEN:
                continue
            if conn.pong_due and conn.pong_due <= now:
                with conn.lock:
                    conn.start_close(1011, "no pong within pong_timeout")
                conn.failed = True
                self._flush(conn)
            elif not conn.pong_due and conn.next_ping <= now:
                conn.next_ping = now + conn.limits.ping_interval
                conn.pong_due = now + conn.limits.pong_timeout
                with conn.lock:
                    conn.queue_frame(ws.frame(ws.PING, os.urandom(4)))
                self._flush(conn)

    def _finish(self, conn: WsConnection) -> None:
        """The TCP connection is over: close it and tell the handler, once."""
        if conn.state == DONE or conn not in self._conns:
            return
        with conn.lock:
            conn.state = DONE
            sock, conn.sock = conn.sock, None
            conn.out.clear()
        if sock is not None:
            if conn.mask:
                with contextlib.suppress(KeyError, ValueError, OSError):
                    self._sel.unregister(sock)
            sock.close()
        conn.mask = 0
        with self._lock:  # stop() lists them from another thread
            self._conns.discard(conn)
        conn.post(conn.closed_call)
        conn.post(lambda: self._release(conn))

    def _release(self, conn: WsConnection) -> None:
        with self._lock:
            self._reserved -= 1
            if self._reserved <= 0:
                self._empty.set()


def _hub(server: Server) -> _Hub:
    with _HUBS_LOCK:
        hub = server.hub
        if not isinstance(hub, _Hub):
            hub = _Hub(server.limits.max_connections)
            server.hub = hub
        return hub


def accept(server: Server, request: Request, channel: Channel, handler: WsHandler, *,
           principal: str | None, limits: WsLimits | None = None, subprotocol: str | None = None,
           headers: Mapping[str, str] | None = None) -> bool:
    """Complete the upgrade inside an engine app, after the app's own gate passed: write the 101 (with the
    app's `headers`) and give the connection to the server's hub. Returns False, the app's answer (the
    engine forgets the connection). A request that is no valid upgrade gets 400/426, a full hub 503."""
    refusal = ws.upgrade_refusal(request)
    if refusal is None:
        hub = _hub(server)
        if hub.full():
            refusal = (503, "too many WebSocket connections: try again later")
    if refusal is not None:
        channel.write(ws.refusal_head(*refusal))
        return False
    conn = WsConnection(request, channel.address, handler, limits or WsLimits(), principal, subprotocol)
    conn.hub = hub
    channel.write(ws.accept_head(request.headers.get("sec-websocket-key"), subprotocol, headers))
    server.take_over(channel, lambda sock, rest: hub.add(conn, sock, rest))
    return False
