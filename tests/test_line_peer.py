"""line_peer.LinePeer.wait_idle: the end of input with no request in flight is signalled, not polled.

The last answer written after the end of input wakes a waiter at once, for both concurrency modes
(a thread per request; the reading thread handling requests, reading handed over to a new leader).
The test makes sure the waiter is really waiting (the peer's condition is a watched one) before it
lets the last handler answer, and bounds the wake generously (a missing notify would leave the
waiter to its own long timeout).
"""

from __future__ import annotations

import io
import os
import threading
from typing import Any

import pytest

from mcp_agent_kit.line_peer import Leaders, LinePeer, Threads
from mcp_agent_kit.wire.peer import STRICT_JSONRPC, JsonRpcPeer

BOUND = 10.0
LONG = 600.0  # the waiter's own timeout: far beyond the bound


class Watched(threading.Condition):
    """The peer's condition, telling when someone waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


@pytest.mark.parametrize("concurrency", [Threads(), Leaders()], ids=["threads", "leaders"])
def test_the_last_answer_after_the_end_of_input_wakes_wait_idle(concurrency: Threads | Leaders) -> None:
    entered, gate = threading.Event(), threading.Event()

    def handle(message: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        assert gate.wait(BOUND)
        return {"jsonrpc": "2.0", "id": message["id"], "result": {}}

    read_end, write_end = os.pipe()
    replies = io.BytesIO()
    peer: JsonRpcPeer[Any] = JsonRpcPeer(STRICT_JSONRPC, lambda message: (message, None), max_line=1 << 16)
    with os.fdopen(read_end, "rb") as reader:
        lines: LinePeer[Any] = LinePeer(reader, replies, peer, handle=handle, concurrency=concurrency)
        lines._changed = condition = Watched()  # before start: every wait goes through it
        lines.start()
        os.write(write_end, b'{"jsonrpc":"2.0","id":1,"method":"slow"}\n')
        os.close(write_end)  # the end of input, while the request is still being handled
        assert entered.wait(BOUND)
        assert lines.join(BOUND)
        assert lines.in_flight == 1
        assert not lines.wait_idle(0)

        idle: list[bool] = []
        condition.waiting.clear()
        waiter = threading.Thread(target=lambda: idle.append(lines.wait_idle(LONG)), daemon=True)
        waiter.start()
        assert condition.waiting.wait(BOUND)
        gate.set()
        waiter.join(BOUND)
        assert not waiter.is_alive(), "the last answer did not wake wait_idle"
        assert idle == [True]
        assert b'"id":1' in replies.getvalue()


def test_wait_idle_is_true_at_once_when_input_ended_with_nothing_in_flight() -> None:
    read_end, write_end = os.pipe()
    os.close(write_end)
    peer: JsonRpcPeer[Any] = JsonRpcPeer(STRICT_JSONRPC, lambda message: (message, None), max_line=1 << 16)
    with os.fdopen(read_end, "rb") as reader:
        lines: LinePeer[Any] = LinePeer(reader, io.BytesIO(), peer, handle=lambda message: None).start()
        assert lines.wait_idle(BOUND)
