"""Long-lived MCP streams: off the request workers, capped, and bounded per stream.

A `subscriptions/listen` or a handshake-era GET stream runs on the engine's stream threads, so
any number of them up to `max_streams` leave every request worker free; one more gets 503 with
Retry-After. A consumer that stops reading is dropped once its bounded buffer is full, and the
notifying thread (a registry change fanned out to every stream) never waits for its socket.
Raw sockets; every wait is bounded; readiness is each stream's first event, never a sleep.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from mcp_agent_kit import Server
from mcp_agent_kit.core.listen import MAX_QUEUED, ListenExtension
from tests.http.conftest import MODERN
from tests.http.test_http_legacy import INIT
from tests.net import wait_until

LISTEN_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def make_server() -> Server:
    server = Server("streams", "1.0.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    @server.resource("test://r")
    def r() -> str:
        """A resource."""
        return "r"

    return server


def listen_request(port: int, notifications: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
                       "params": {"notifications": notifications, "_meta": LISTEN_META}}).encode()
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\n"
            f"Mcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def _send(port: int, request: bytes, rcvbuf: int | None) -> socket.socket:
    """A socket (with a small receive buffer when asked: a consumer that stalls) that sent request."""
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    return sock


def open_stream(port: int, request: bytes, rcvbuf: int | None = None) -> tuple[socket.socket, bytes]:
    """Send the request; return the socket once the head and the first event arrived (readiness)."""
    sock = _send(port, request, rcvbuf)
    got = b""
    while b"\r\n\r\n" not in got or (b"data:" not in got.split(b"\r\n\r\n", 1)[1] and b" 200 " in got[:13]):
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return sock, got


def tools_list(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                       "params": {"_meta": {**LISTEN_META, "io.modelcontextprotocol/clientInfo": {"name": "t",
                                                                                                  "version": "0"}}}})
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json", "Accept": "application/json",
                                        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    status = conn.getresponse().status
    conn.close()
    return status


def test_listen_streams_leave_the_request_workers_free(serve: Any) -> None:
    running = serve(make_server().dispatcher, max_workers=4)
    socks = [open_stream(running.port, listen_request(running.port, {"toolsListChanged": True}))
             for _ in range(16)]  # four times the request workers
    try:
        for _, got in socks:
            assert b" 200 " in got[:13] and b"notifications/subscriptions/acknowledged" in got
        assert running.server.streams == 16
        started = time.monotonic()
        assert tools_list(running.port) == 200
        assert time.monotonic() - started < 5
    finally:
        for sock, _ in socks:
            sock.close()


def test_streams_over_the_cap_get_503(serve: Any) -> None:
    running = serve(make_server().dispatcher, max_workers=4, max_streams=2)
    socks = [open_stream(running.port, listen_request(running.port, {"toolsListChanged": True})) for _ in range(2)]
    try:
        sock, got = open_stream(running.port, listen_request(running.port, {"toolsListChanged": True}))
        sock.close()
        head = got.split(b"\r\n\r\n", 1)[0].lower()
        assert got.startswith(b"HTTP/1.1 503") and b"retry-after: 5" in head
        assert tools_list(running.port) == 200
    finally:
        for sock, _ in socks:
            sock.close()


class Reader:
    """A consumer that keeps up: counts the occurrences of `marker` it reads, on its own thread."""

    def __init__(self, sock: socket.socket, marker: bytes) -> None:
        self.sock, self.marker, self.count = sock, marker, 0
        self.cond = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        tail = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                return
            data = tail + chunk
            cut = data.rfind(b"\n")
            tail, data = data[cut + 1:], data[:cut + 1]
            with self.cond:
                self.count += data.count(self.marker)
                self.cond.notify_all()

    def reached(self, count: int, timeout: float = 20.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.count >= count, timeout)


def flood(emit: Callable[[int], None], reader: Reader, total: int, burst: int = 256) -> float:
    """Emit `total` changes in bursts, each burst read by the healthy consumer before the next."""
    started = time.monotonic()
    for first in range(0, total, burst):
        for n in range(first, min(first + burst, total)):
            emit(n)
        assert reader.reached(min(first + burst, total)), f"the healthy stream saw {reader.count} of {first + burst}"
    return time.monotonic() - started


def test_a_stalled_listen_is_dropped_and_memory_stays_bounded(serve: Any) -> None:
    server = make_server()
    running = serve(server.dispatcher)
    listen = server.dispatcher.extension("listen")
    assert isinstance(listen, ListenExtension)
    stalled, _ = open_stream(running.port, listen_request(running.port, {"resourceSubscriptions": ["test://r"]}),
                             rcvbuf=4096)
    healthy, _ = open_stream(running.port, listen_request(running.port, {"resourceSubscriptions": ["test://r"]}))
    reader = Reader(healthy, b"resources/updated")

    def emit(_: int) -> None:
        server.notify_resource_updated("test://r")
        assert all(sub.queue.qsize() <= MAX_QUEUED for sub in listen.subscribers())

    elapsed = flood(emit, reader, 100_000)
    assert elapsed < 60  # the notifier never waited on the stalled socket
    assert wait_until(lambda: len(listen.subscribers()) == 1, 10), "the stalled listener is still subscribed"
    assert wait_until(lambda: running.server.streams == 1, 10), "the stalled listen still holds a stream thread"
    stalled.close()
    healthy.close()


def legacy_session(port: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/mcp", json.dumps(INIT), {"Content-Type": "application/json",
                                                   "Accept": "application/json, text/event-stream"})
    response = conn.getresponse()
    response.read()
    session = response.getheader("Mcp-Session-Id")
    assert session
    conn.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                 {"Content-Type": "application/json", "Mcp-Session-Id": session,
                  "MCP-Protocol-Version": "2025-11-25"})
    conn.getresponse().read()
    conn.close()
    return session


def get_stream(port: int, session: str, rcvbuf: int | None = None) -> socket.socket:
    request = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n"
               f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n").encode()
    sock = _send(port, request, rcvbuf)
    got = b""
    while b"\r\n\r\n" not in got:  # readiness: the stream's head (it is registered before it is sent)
        got += sock.recv(4096)
    assert got.startswith(b"HTTP/1.1 200")
    return sock


def test_a_stalled_get_stream_blocks_no_one(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A small queue: the kernel's send buffer (megabytes on loopback) must not absorb the whole flood.
    from mcp_agent_kit.transports import sse

    monkeypatch.setattr(sse, "MAX_QUEUED_BYTES", 64 * 1024)
    server = make_server()
    running = serve(server.dispatcher)
    stalled = get_stream(running.port, legacy_session(running.port), rcvbuf=4096)
    healthy = get_stream(running.port, legacy_session(running.port))
    reader = Reader(healthy, b"list_changed")
    # past the 25,905 changes at which the old fan-out blocked on the stalled socket
    registry = server.dispatcher.registry

    def emit(n: int) -> None:  # each add and each removal is one tools/list_changed to every session
        if n % 2:
            registry.remove_tool("flip")
        else:
            registry.add_tool(lambda: "x", name="flip")

    elapsed = flood(emit, reader, 40_000)
    assert elapsed < 60
    assert wait_until(lambda: running.server.streams == 1, 10), "the stalled GET stream was not dropped"
    stalled.close()
    healthy.close()
