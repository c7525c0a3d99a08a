"""The WebSocket hub behind the engine, checked with a client we did not write (`websockets`) and
with hostile frames sent raw over a socket: echo, fragments, ping/pong, every close code, slow
consumers, keep-alive, shutdown, the gate before the upgrade, and no thread per idle socket."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from mcp_agent_kit.httpd import WsLimits
from mcp_agent_kit.httpd import websocket as ws
from tests.httpd.ws_app import TOKEN, close_code, events, handshake, masked, serving, url
from tests.net import until

AUTH = {"Authorization": f"Bearer {TOKEN}"}
OPTIONS = {"proxy": None, "ping_interval": None, "open_timeout": 10, "close_timeout": 5}


def test_echo_fragments_ping_and_a_normal_close() -> None:
    with serving(WsLimits(text_only=False)) as (server, app), \
            connect(url(server), additional_headers=AUTH, subprotocols=["chat"], **OPTIONS) as client:
        assert client.subprotocol == "chat"
        assert client.response.headers.get("Sec-WebSocket-Extensions") is None  # deflate declined
        client.send("héllo")
        assert client.recv(10) == "héllo"
        client.send(b"\x00\xff\x80")
        assert client.recv(10) == b"\x00\xff\x80"
        client.send(["a", "é" * 100, "z"])  # one message in three frames
        assert client.recv(10) == "a" + "é" * 100 + "z"
        client.send([b"\x01", b"\x02"])
        assert client.recv(10) == b"\x01\x02"
        big = "y" * 70000  # a 64-bit length field
        client.send(big)
        assert client.recv(10) == big
        assert client.ping(b"are you there").wait(10)
        handler = app.handler()
        assert handler.conn is not None and handler.conn.principal is not None
        assert handler.conn.path == "/ws" and server.websocket_count == 1
        client.close(4000, "bye")
    assert handler.done.wait(10)
    assert handler.closes == [(4000, "bye")]
    assert not handler.overlapped


@pytest.mark.parametrize(("limits", "send", "code"), [
    (WsLimits(), b"binary on a text-only endpoint", 1003),
    (WsLimits(max_message=1000), "x" * 1001, 1009),
    (WsLimits(max_frame=100, max_message=1000), ["x" * 60, "x" * 60], 1000),  # small frames, one message
    (WsLimits(), "raise", 1011),
])
def test_close_codes_a_client_sees(limits: WsLimits, send: str | bytes | list[str], code: int) -> None:
    with serving(limits) as (server, app), connect(url(server), additional_headers=AUTH, **OPTIONS) as client:
        client.send(send)
        if code == 1000:
            assert client.recv(10) == "x" * 120
            client.close()
        else:
            with pytest.raises(ConnectionClosed) as closed:
                client.recv(10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == code
        handler = app.handler()
        assert handler.done.wait(10)
        assert handler.closes[0][0] == code


def _close(code: int, reason: bytes = b"") -> bytes:
    return masked(ws.CLOSE, struct.pack("!H", code) + reason)


HOSTILE = {
    "unmasked frame": (ws.frame(ws.TEXT, b"hi"), 1002),
    "reserved opcode 3": (masked(3, b"x"), 1002),
    "reserved opcode 0xB": (masked(0xB), 1002),
    "RSV1 without an extension": (masked(ws.TEXT, b"x", rsv=0x40), 1002),
    "fragmented ping": (masked(ws.PING, b"x", fin=False), 1002),
    "126-byte ping": (masked(ws.PING, b"p" * 126), 1002),
    "continuation without a start": (masked(ws.CONT, b"x"), 1002),
    "a new text frame inside a fragmented one": (masked(ws.TEXT, b"a", fin=False) + masked(ws.TEXT, b"b"), 1002),
    "bad UTF-8 split across fragments": (masked(ws.TEXT, b"ok \xe2\x82", fin=False) + masked(ws.CONT, b"\x28"),
                                         1007),
    "bad UTF-8 after an interleaved ping": (masked(ws.TEXT, b"\xf0\x9f", fin=False) + masked(ws.PING, b"p")
                                            + masked(ws.CONT, b"\x98"), 1007),
    "one-byte close payload": (masked(ws.CLOSE, b"\x03"), 1002),
    "close code 1005": (_close(1005), 1002),
    "close code 1006": (_close(1006), 1002),
    "close code 999": (_close(999), 1002),
    "close code 2000": (_close(2000), 1002),
    "close reason not UTF-8": (_close(1000, b"\xff"), 1007),
    "oversize length in the header alone": (b"\x81\xff" + struct.pack("!Q", 1 << 40), 1009),
    "binary on a text-only endpoint": (masked(ws.BINARY, b"\x00"), 1003),
    "a good message, then a bad frame": (masked(ws.TEXT, b"kept") + masked(3), 1002),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_frames_get_their_close_code(name: str) -> None:
    raw, code = HOSTILE[name]
    with serving() as (server, app):
        sock = handshake(server)
        with sock:
            sock.sendall(raw)
            assert close_code(sock) == code
        handler = app.handler()
        assert handler.done.wait(10)
        assert handler.closes[0][0] == code
        assert handler.messages == (["kept"] if name.startswith("a good message") else [])


def test_control_frames_between_fragments_and_bytes_pipelined_with_the_head() -> None:
    frames = (masked(ws.TEXT, "€".encode()[:2], fin=False) + masked(ws.PING, b"mid") + masked(ws.CONT, b"\xac",
                                                                                             fin=False)
              + masked(ws.PONG, b"unasked") + masked(ws.CONT, b"!"))
    with serving() as (server, _), handshake(server, after=frames) as sock:  # frames ride with the head
        seen = events(sock, lambda got: any(isinstance(e, ws.WsMessage) for e in got))
        assert ws.Pong(b"mid") in seen and ws.WsMessage("€!") in seen
        sock.sendall(_close(1000))
        assert close_code(sock) == 1000


def test_a_consumer_that_stops_reading_is_closed_with_1008_and_others_go_on() -> None:
    limits = WsLimits(max_queued_bytes=64 * 1024, close_timeout=0.5)
    with serving(limits) as (server, app), handshake(server, rcvbuf=4096) as slow, \
            connect(url(server), additional_headers=AUTH, **OPTIONS) as other:
        slow.sendall(masked(ws.TEXT, b"flood"))  # the server sends until the queue refuses; we read nothing
        handler = app.handler(0, count=2)
        assert handler.flooded.wait(10)
        assert handler.done.wait(10)
        assert handler.closes[0][0] == 1008
        other.send("still served")
        assert other.recv(10) == "still served"
        assert handler.conn is not None and not handler.conn.send("late")


def test_a_peer_that_never_answers_pings_is_closed_with_1011() -> None:
    with serving(WsLimits(ping_interval=0.05, pong_timeout=0.1, close_timeout=0.2)) as (server, app), \
            handshake(server) as sock:
        seen = events(sock, lambda got: any(isinstance(e, ws.Close) for e in got))
        assert isinstance(seen[0], ws.Ping)
        assert [e.code for e in seen if isinstance(e, ws.Close)] == [1011]
        assert app.handler().done.wait(10)


def test_server_close_says_1001_to_every_client() -> None:
    with serving() as (server, app), contextlib.ExitStack() as stack:
        clients = [stack.enter_context(connect(url(server), additional_headers=AUTH, **OPTIONS)) for _ in range(3)]
        until(lambda: server.websocket_count == 3, "three connections on the hub")
        server.shutdown()
        server.server_close()
        for client in clients:
            with pytest.raises(ConnectionClosed) as closed:
                client.recv(10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        assert all(handler.closes == [(1001, "server shutting down")] for handler in app.handlers)
        assert server.websocket_count == 0


@pytest.mark.parametrize(("headers", "status"), [
    ({"Origin": "http://evil.example", **AUTH}, 403),  # a page of another site
    ({}, 401),  # no token
    ({"Authorization": "Bearer wrong"}, 401),
])
def test_the_gate_decides_before_the_upgrade(headers: dict[str, str], status: int) -> None:
    with serving() as (server, app):
        with pytest.raises(InvalidStatus) as refused:
            connect(url(server), additional_headers=headers, **OPTIONS)
        assert refused.value.response.status_code == status
        assert app.handlers == [] and server.websocket_count == 0


@pytest.mark.parametrize(("host", "head", "status"), [
    ("127.0.0.1", "Sec-WebSocket-Version: 8\r\n", b"426"),
    ("127.0.0.1", "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: c2hvcnQ=\r\n", b"400"),
    ("evil.example", "Sec-WebSocket-Version: 13\r\n", b"403"),  # DNS rebinding: the gate says no first
])
def test_a_bad_upgrade_is_refused(host: str, head: str, status: bytes) -> None:
    with serving(token=None) as (server, _), socket.create_connection(server.server_address, timeout=10) as sock:
        sock.sendall((f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n{head}\r\n").encode())
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
        assert reply.split(b" ")[1] == status
        if status == b"426":
            assert b"Sec-WebSocket-Version: 13" in reply


def test_idle_connections_hold_no_thread_each() -> None:
    with serving() as (server, app):
        first = handshake(server)
        app.handler(0).ready.wait(10)
        before = threading.active_count()
        socks = [handshake(server) for _ in range(99)]
        until(lambda: server.websocket_count == 100, "100 upgraded connections")
        for handler in app.handlers:
            assert handler.ready.wait(10)
        assert threading.active_count() - before <= 16  # the hub's bounded pool at most, not one per socket
        assert all(h.conn is not None and h.conn.queued_bytes == 0 for h in app.handlers)
        for sock in [first, *socks]:
            sock.close()
        until(lambda: server.websocket_count == 0, "the hub to let the closed sockets go")
        assert all(handler.closes == [(1006, "")] for handler in app.handlers)
