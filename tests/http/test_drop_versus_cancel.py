"""The drop-versus-cancel rule over HTTP, observed from the tool's side.

2026-07-28 (digest §4.5, §6): closing the response stream IS the cancellation. 2025-11-25 with a
resumable stream (SEP-1699): a dropped connection is not cancellation; later events wait for the
client's Last-Event-ID. A handshake-era session cancels with notifications/cancelled. The drop is
made noticeable: the client resets the connection (SO_LINGER 0), then the tool keeps writing
progress until it sees `ctx.cancelled` or has written enough to be sure the server saw the reset.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Any

from mcp_agent_kit import Context, Server
from tests.http.conftest import META, MODERN, Running
from tests.http.test_sse_resume import Peer, events

WRITES = 200


class Probe:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.gate = threading.Event()
        self.done = threading.Event()
        self.seen: list[str] = []


def make_server(probe: Probe) -> Server:
    server = Server("drop-test", "1.0.0")

    @server.tool
    def hold(ctx: Context) -> str:
        """Say it started, wait for the gate, then write progress until cancelled."""
        ctx.progress(1, None, "started")
        probe.started.set()
        probe.gate.wait(10)
        writes = 0
        while writes < WRITES and not ctx.cancelled:
            writes += 1
            ctx.progress(1 + writes, None, f"after drop {writes}")
            probe.gate.wait(0.002)
        probe.seen.append(f"cancelled={ctx.cancelled}")
        probe.done.set()
        return "held"

    return server


def raw_post(running: Running, body: dict[str, Any], headers: dict[str, str]) -> tuple[socket.socket, bytes]:
    """POST over a raw socket and return once the first event (the tool's "started") arrived."""
    sock = socket.create_connection((running.host, running.port), timeout=10)
    data = json.dumps(body).encode()
    head = {"Host": f"{running.host}:{running.port}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "Content-Length": str(len(data)), **headers}
    sock.sendall(b"POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode()
                 + b"\r\n" + data)
    received = b""
    while b'"started"' not in received:
        chunk = sock.recv(4096)
        assert chunk, received
        received += chunk
    return sock, received.partition(b"\r\n\r\n")[2]


def reset(sock: socket.socket) -> None:
    """Close with a TCP reset, so the server's next write fails at once."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_modern_a_dropped_stream_cancels_the_call(serve: Any) -> None:
    probe = Probe()
    running = serve(make_server(probe).dispatcher)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": {**META, "progressToken": "p"}}}
    sock, _ = raw_post(running, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "hold"})
    assert probe.started.wait(10)
    reset(sock)
    probe.gate.set()
    assert probe.done.wait(10)
    assert probe.seen == ["cancelled=True"]


def test_modern_a_stream_kept_open_is_not_cancelled(serve: Any) -> None:
    probe = Probe()
    running = serve(make_server(probe).dispatcher)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": {**META, "progressToken": "p"}}}
    sock, _ = raw_post(running, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "hold"})
    probe.gate.set()
    assert probe.done.wait(10)
    sock.close()
    assert probe.seen == ["cancelled=False"]


def test_2025_11_25_a_dropped_resumable_stream_does_not_cancel_and_resumes(serve: Any) -> None:
    probe = Probe()
    running = serve(make_server(probe).dispatcher)
    peer = Peer(running)
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": {"progressToken": "p"}}}
    sock, received = raw_post(running, body, peer.headers())
    priming = events(received)[0]
    assert priming["id"].endswith("-0"), priming
    reset(sock)
    probe.gate.set()
    assert probe.done.wait(10)
    assert probe.seen == ["cancelled=False"]  # every write after the reset failed, and still no cancel
    status, _, payload = peer.resume(priming["id"])
    assert status == 200
    replayed = [json.loads(e["data"]) for e in events(payload) if e.get("data")]
    messages = [m["params"]["message"] for m in replayed if m.get("method") == "notifications/progress"]
    assert messages[0] == "started" and messages[-1] == f"after drop {WRITES}", messages[-3:]
    assert replayed[-1]["id"] == 9 and replayed[-1]["result"]["content"][0]["text"] == "held"


def test_2025_11_25_notifications_cancelled_cancels_the_call(serve: Any) -> None:
    probe = Probe()
    running = serve(make_server(probe).dispatcher)
    peer = Peer(running)
    body = {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
            "params": {"name": "hold", "arguments": {}, "_meta": {"progressToken": "p"}}}
    sock, _ = raw_post(running, body, peer.headers())
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 11}}
    assert running.post(note, peer.headers())[0] == 202
    probe.gate.set()
    assert probe.done.wait(10)
    sock.close()
    assert probe.seen == ["cancelled=True"]

