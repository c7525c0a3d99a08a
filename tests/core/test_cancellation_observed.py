"""notifications/cancelled reaches the running tool: the tool itself sees `ctx.cancelled`, stops early,
and the cancelled request is never answered. In-process and over stdio, with readiness signals
(the tool says it started) instead of sleeps."""

from __future__ import annotations

import threading
import time
from typing import Any

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.dispatcher import Connection
from tests.stdio_peer import StdioPeer, legacy, modern

FIXTURE = "tests/fixtures/cancel_server.py"
PROMPT = 5.0  # seconds: "ends promptly" (the tool would otherwise hold for 60)


def cancelled(id_: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id_, "reason": "test"}}


def holding_server(started: threading.Event, seen: list[bool]) -> Server:
    server = Server("cancel-in-process", "1.0")

    @server.tool
    def hold(ctx: Context) -> str:
        """Wait for cancellation (at most 60 s)."""
        started.set()
        deadline = time.monotonic() + 60
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        seen.append(ctx.cancelled)
        return "held"

    return server


def test_in_process_the_tool_sees_the_cancel_and_the_call_is_not_answered() -> None:
    started, seen = threading.Event(), []
    server = holding_server(started, seen)
    conn = Connection()
    replies: list[Any] = []
    worker = threading.Thread(daemon=True, target=lambda: replies.append(
        server.dispatcher.handle(modern("h1", "tools/call", name="hold", arguments={}), conn, None,
                                 conn.inflight.setdefault("h1", threading.Event()))))
    worker.start()
    assert started.wait(10), "the tool never started"
    began = time.monotonic()
    assert server.handle(cancelled("h1"), conn) is None  # a notification: never answered
    worker.join(PROMPT)
    assert not worker.is_alive(), "the cancelled call is still running"
    assert time.monotonic() - began < PROMPT
    assert seen == [True] and replies == [None]


def test_in_process_a_cancel_for_another_id_changes_nothing() -> None:
    started, seen = threading.Event(), []
    server = holding_server(started, seen)
    conn = Connection()
    flag = conn.inflight.setdefault("mine", threading.Event())
    worker = threading.Thread(daemon=True, target=lambda: server.dispatcher.handle(
        modern("mine", "tools/call", name="hold", arguments={}), conn, None, flag))
    worker.start()
    assert started.wait(10)
    server.handle(cancelled("other"), conn)
    server.handle(cancelled(None), conn)
    worker.join(0.2)
    assert worker.is_alive() and seen == []  # still holding: only its own id cancels it
    server.handle(cancelled("mine"), conn)
    worker.join(PROMPT)
    assert seen == [True]


def wait_for(peer: StdioPeer, prefix: str) -> str:
    while True:
        line = peer.stderr_line(PROMPT)
        if line.startswith(prefix):
            return line


def test_over_stdio_the_tool_sees_the_cancel_and_stops_promptly() -> None:
    with StdioPeer(FIXTURE) as peer:
        peer.send(modern("slow", "tools/call", name="hold", arguments={"seconds": 60}))
        assert wait_for(peer, "started") == "started slow"
        peer.send(cancelled("slow"))
        finished = wait_for(peer, "finished")
        assert finished.startswith("finished slow cancelled=True"), finished
        assert float(finished.rsplit("after=", 1)[1]) < PROMPT
        # the server goes on, and the cancelled request gets no reply (the strict peer fails on one)
        assert peer.call(modern("after", "server/discover"))["id"] == "after"
        assert peer.close(PROMPT) == 0


def test_over_stdio_a_handshake_era_session_cancels_too() -> None:
    with StdioPeer(FIXTURE) as peer:
        init = legacy(0, "initialize", protocolVersion="2025-11-25", capabilities={},
                      clientInfo={"name": "t", "version": "0"})
        assert peer.call(init)["result"]["protocolVersion"] == "2025-11-25"
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        peer.send(legacy(7, "tools/call", name="hold", arguments={"seconds": 60}))
        assert wait_for(peer, "started") == "started 7"
        peer.send(cancelled(7))
        assert wait_for(peer, "finished").startswith("finished 7 cancelled=True")
        assert peer.call(legacy(8, "ping"))["id"] == 8
        assert peer.close(PROMPT) == 0


def test_over_stdio_an_uncancelled_call_runs_to_its_end() -> None:
    with StdioPeer(FIXTURE) as peer:
        reply = peer.call(modern(1, "tools/call", name="hold", arguments={"seconds": 0.2}))
        assert reply["result"]["content"][0]["text"] == "held"
        assert wait_for(peer, "finished").startswith("finished 1 cancelled=False")
