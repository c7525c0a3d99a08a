"""acp.connection against a raw peer on os pipes: routing by method before id, junk and long lines, EOF."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest

from mcp_agent_kit.acp.connection import Connection, ConnectionClosed, RequestTimeout, RpcError


class RawPeer:
    """The far end: writes raw lines into our reader, reads what we write."""

    def __init__(self) -> None:
        r1, w1 = os.pipe()  # peer -> us
        r2, w2 = os.pipe()  # us -> peer
        self.to_us = os.fdopen(w1, "wb", buffering=0)
        self.from_us = os.fdopen(r2, "rb")
        self.our_reader, self.our_writer = os.fdopen(r1, "rb"), os.fdopen(w2, "wb")

    def send(self, obj: Any) -> None:
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        self.to_us.write(data)

    def receive(self) -> Any:
        return json.loads(self.from_us.readline())

    def close(self) -> None:
        self.to_us.close()


@pytest.fixture
def pair() -> Any:
    peer = RawPeer()
    logged: list[str] = []
    conn = Connection(peer.our_reader, peer.our_writer, log=logged.append, max_line=1 << 20, max_junk=3,
                      handlers={"echo": lambda params: params}, name="agent")
    conn.logged = logged  # type: ignore[attr-defined]
    conn.start()
    yield peer, conn
    peer.close()
    conn.close()


def test_a_request_of_the_peer_with_our_pending_id_is_routed_as_a_request(pair: Any) -> None:
    peer, conn = pair
    pending = conn.send_request("session/prompt", {"x": 1})
    sent = peer.receive()
    assert sent == {"jsonrpc": "2.0", "id": 0, "method": "session/prompt", "params": {"x": 1}}
    peer.send({"jsonrpc": "2.0", "id": 0, "method": "echo", "params": {"same": "id"}})
    assert peer.receive() == {"jsonrpc": "2.0", "id": 0, "result": {"same": "id"}}
    assert not pending.done
    peer.send({"jsonrpc": "2.0", "id": 0, "result": {"stopReason": "end_turn"}})
    assert pending.wait(5) == {"stopReason": "end_turn"}


def test_unknown_requests_get_32601_and_unknown_notifications_go_to_the_fallback(pair: Any) -> None:
    peer, conn = pair
    seen: list[tuple[str, Any]] = []
    conn.fallback = lambda method, params: seen.append((method, params))
    peer.send({"jsonrpc": "2.0", "method": "qwen/notify/x", "params": {"a": 1}})
    peer.send({"jsonrpc": "2.0", "id": 7, "method": "craft/drainMidTurnQueue"})
    reply = peer.receive()
    assert reply["id"] == 7 and reply["error"]["code"] == -32601
    assert seen == [("qwen/notify/x", {"a": 1})]


def test_error_replies_raise_rpc_error(pair: Any) -> None:
    peer, conn = pair
    pending = conn.send_request("session/new", {})
    peer.receive()
    peer.send({"jsonrpc": "2.0", "id": 0, "error": {"code": -32000, "message": "Authentication required",
                                                      "data": {"authMethods": []}}})
    with pytest.raises(RpcError) as caught:
        pending.wait(5)
    assert caught.value.code == -32000 and caught.value.data == {"authMethods": []}


def test_handler_errors_become_error_replies(pair: Any) -> None:
    peer, conn = pair

    def refuse(params: Any) -> Any:
        raise RpcError(-32602, "bad path")

    conn.handlers["fs/read_text_file"] = refuse
    conn.handlers["boom"] = lambda params: 1 // 0
    peer.send({"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file"})
    assert peer.receive()["error"] == {"code": -32602, "message": "bad path"}
    peer.send({"jsonrpc": "2.0", "id": 2, "method": "boom"})
    assert peer.receive()["error"]["code"] == -32603


def test_junk_lines_are_logged_then_the_cap_closes_the_connection(pair: Any) -> None:
    peer, conn = pair
    pending = conn.send_request("initialize", {})
    peer.send_raw(b"Starting agent...\n\n[1,2]\n")
    peer.send({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})
    assert pending.wait(5) == {"protocolVersion": 1}
    assert conn.junk_lines == 2 and any("Starting agent" in line for line in conn.logged)
    waiting = conn.send_request("session/new", {})
    peer.send_raw(b"a\nb\n")
    with pytest.raises(ConnectionClosed, match="more than 3 lines"):
        waiting.wait(5)


def test_lines_over_64_kib_are_accepted_and_over_the_cap_dropped(pair: Any) -> None:
    peer, conn = pair
    big = "x" * (300 * 1024)
    pending = conn.send_request("fs", {})
    answer = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"text": big}}).encode()
    data = b'{"huge":"' + b"y" * (2 << 20) + b'"}\n' + answer + b"\n"
    threading.Thread(target=peer.send_raw, args=(data,), daemon=True).start()  # one writer: pipes are not atomic
    assert pending.wait(10) == {"text": big}
    assert conn.oversize_lines == 1 and any("line limit" in line for line in conn.logged)


def test_end_of_input_fails_pending_requests_and_waits_are_bounded(pair: Any) -> None:
    peer, conn = pair
    with pytest.raises(RequestTimeout):
        conn.request("slow", None, timeout=0.05)
    pending = conn.send_request("session/prompt", {})
    peer.close()
    with pytest.raises(ConnectionClosed, match="agent closed its output"):
        pending.wait(5)
    with pytest.raises(ConnectionClosed):
        conn.send_request("again").wait(1)
