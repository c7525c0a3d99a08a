"""a2a.client: the A2A client reads its streams with the one SSE reader (wire/sse.py), and talks to our server."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit.a2a.client import A2AClient, card_url, fetch_card, jsonrpc_endpoint
from mcp_agent_kit.a2a.protocol import A2AError

from .conftest import Live, call, user_message

# Each event's `result` the way a peer may legally frame it: JSON over several data lines, indented,
# with spaces around it, every line end the standard allows, comments, ids and event names between.
RESULTS = [
    {"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}},
    {"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING",
                                                 "message": {"parts": [{"text": "  spaced  "}]}}}},
    {"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}},
]


def framed() -> bytes:
    first = json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULTS[0]}, indent=2).encode()
    second = json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULTS[1]})
    third = json.dumps({"jsonrpc": "2.0", "id": 1, "result": RESULTS[2]}).encode()
    cut = third.index(b'"id"')  # between two JSON tokens: the joining newline is whitespace there
    return (b": keep-alive\r\n" + b"".join(b"data:" + line + b"\r\n" for line in first.splitlines()) + b"\r\n"
            + b"event: update\rid: 2\rdata:    " + second.encode() + b"   \r\r"
            + b"data:" + third[:cut] + b"\ndata: " + third[cut:] + b"\n\n")


class Peer(http.server.BaseHTTPRequestHandler):
    """A tiny A2A peer: a card on GET, the framed stream on POST."""

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        host, port = self.server.server_address[:2]
        card = {"name": "p", "supportedInterfaces": [
            {"url": f"http://{host}:{port}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}
        self._send("application/json", json.dumps(card).encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._send("text/event-stream", framed())

    def _send(self, kind: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def peer() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Peer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_every_legal_framing_reaches_the_client_intact(peer: str) -> None:
    client = A2AClient(jsonrpc_endpoint(fetch_card(peer, 10.0)), 10.0)
    got: list[dict[str, Any]] = []
    client.stream({"message": user_message({"text": "hi"})}, got.append)
    assert got == RESULTS


def test_stop_ends_the_stream_between_events(peer: str) -> None:
    client = A2AClient(jsonrpc_endpoint(fetch_card(card_url(peer), 10.0)), 10.0)
    got: list[dict[str, Any]] = []
    client.stream({"message": user_message({"text": "hi"})}, got.append, stop=lambda: len(got) == 1)
    assert got == RESULTS[:1]


def test_an_over_long_event_is_a_call_failure(peer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcp_agent_kit.a2a.client.MAX_EVENT", 64)
    client = A2AClient(jsonrpc_endpoint(fetch_card(peer, 10.0)), 10.0)
    with pytest.raises(A2AError, match="exceeds the size limit"):
        client.stream({"message": user_message({"text": "hi"})}, lambda result: None)


def test_the_client_drives_our_own_server_end_to_end(metrics: Live) -> None:
    card = fetch_card(metrics.base, 10.0)
    client = A2AClient(jsonrpc_endpoint(card), 10.0)
    got: list[dict[str, Any]] = []
    client.stream({"message": user_message(call([1, 2, 3]))}, got.append)
    assert [next(iter(event)) for event in got] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    task_id = got[0]["task"]["id"]
    assert client.get_task(task_id)["status"]["state"] == "TASK_STATE_COMPLETED"
    with pytest.raises(A2AError):
        client.cancel_task(task_id)
