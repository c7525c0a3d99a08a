"""line_peer.LinePeer: wait_idle is signalled, not polled; deferred replies (line_peer.Deferred).

wait_idle: the end of input with no request in flight is signalled, not polled.

The last answer written after the end of input wakes a waiter at once, for both concurrency modes
(a thread per request; the reading thread handling requests, reading handed over to a new leader).
The test makes sure the waiter is really waiting (the peer's condition is a watched one) before it
lets the last handler answer, and bounds the wake generously (a missing notify would leave the
waiter to its own long timeout).

Deferred: a handler that returns one ends at once; the reply is written once, by the thread that settles it
(a second settle is ignored), the request counting as in flight until then; a connection that closes (our
output, or the end of input) drops every open one unanswered, and a request deferred beyond the bound is
refused -32603.
"""

from __future__ import annotations

import io
import json
import os
import threading
from typing import Any

import pytest

from mcp_agent_kit.line_peer import Deferred, Leaders, LinePeer, Threads
from mcp_agent_kit.wire.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from mcp_agent_kit.wire.peer import STRICT_JSONRPC, JsonRpcPeer
from tests.net import until

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


# -- deferred replies --------------------------------------------------------------------------------


class Recorder:
    """The peer's input as a list of the lines written to it; closing it makes later writes fail, as a pipe's."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.closed = False
        self._buffer = b""

    def write(self, data: bytes) -> int:
        if self.closed:
            raise ValueError("write to closed file")
        self._buffer += data
        *whole, self._buffer = self._buffer.split(b"\n")
        self.lines.extend(json.loads(line) for line in whole)
        return len(data)

    def flush(self) -> None:
        if self.closed:
            raise ValueError("flush of closed file")

    def close(self) -> None:
        self.closed = True


class Deferring:
    """A handler that defers every request, keeping each Deferred by request id (and the thread it ran on)."""

    def __init__(self) -> None:
        self.deferred: dict[Any, Deferred] = {}
        self.threads: list[threading.Thread] = []

    def __call__(self, message: dict[str, Any]) -> Deferred:
        self.threads.append(threading.current_thread())
        self.deferred[message["id"]] = made = Deferred()
        return made


def _serving(handle: Any, concurrency: Threads | Leaders, **kwargs: Any) -> tuple[LinePeer[Any], Recorder, int, Any]:
    read_end, write_end = os.pipe()
    reader = os.fdopen(read_end, "rb")
    replies = Recorder()
    peer: JsonRpcPeer[Any] = JsonRpcPeer(STRICT_JSONRPC, lambda message: (message, None), max_line=1 << 16)
    lines: LinePeer[Any] = LinePeer(reader, replies, peer, handle=handle, concurrency=concurrency,  # type: ignore[arg-type]
                                    **kwargs).start()
    return lines, replies, write_end, reader


def _ask(write_end: int, *ids: int) -> None:
    os.write(write_end, b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ask"}\n' % i for i in ids))


MODES = pytest.mark.parametrize("concurrency", [Threads(4), Leaders()], ids=["threads", "leaders"])


@MODES
def test_a_deferred_reply_is_written_once_by_the_thread_that_settles_it(concurrency: Threads | Leaders) -> None:
    handler = Deferring()
    lines, replies, write_end, reader = _serving(handler, concurrency)
    try:
        _ask(write_end, 1, 2)
        until(lambda: len(handler.deferred) == 2, "both requests to be deferred")
        for thread in handler.threads:
            if thread.name.endswith("-ask"):  # a request's own handler thread ended when it returned
                until(lambda thread=thread: not thread.is_alive(), "the handler thread to end")
        assert lines.in_flight == 2 and replies.lines == []

        settler = threading.Thread(target=lambda: handler.deferred[2].resolve({"answer": 42}))
        settler.start()
        settler.join(BOUND)
        assert replies.lines == [{"jsonrpc": "2.0", "id": 2, "result": {"answer": 42}}]  # written by the settler
        assert lines.in_flight == 1
        assert not handler.deferred[2].resolve({"answer": 0})  # settled once: a second settle is ignored
        assert not handler.deferred[2].reject(RpcError(INTERNAL_ERROR, "late"))

        assert handler.deferred[1].reject(RpcError(INVALID_PARAMS, "no such thing"))
        assert replies.lines[1]["id"] == 1 and replies.lines[1]["error"]["code"] == INVALID_PARAMS
        assert len(replies.lines) == 2 and lines.in_flight == 0
    finally:
        os.close(write_end)
        assert lines.join(BOUND)
        reader.close()


@MODES
def test_a_deferred_settled_before_the_handler_returns_is_answered_at_once(concurrency: Threads | Leaders) -> None:
    def handle(message: dict[str, Any]) -> Deferred:
        made = Deferred()
        made.resolve("now")
        return made

    lines, replies, write_end, reader = _serving(handle, concurrency)
    _ask(write_end, 7)
    os.close(write_end)
    assert lines.join(BOUND) and lines.wait_idle(BOUND)
    assert replies.lines == [{"jsonrpc": "2.0", "id": 7, "result": "now"}]
    reader.close()


@MODES
@pytest.mark.parametrize("how", ["close_output", "end_of_input"])
def test_a_closing_connection_drops_every_open_deferred(concurrency: Threads | Leaders, how: str) -> None:
    handler = Deferring()
    lines, replies, write_end, reader = _serving(handler, concurrency)
    _ask(write_end, 1, 2, 3)
    until(lambda: lines.in_flight == 3, "three requests deferred")
    if how == "close_output":
        lines.close_output()
        assert lines.in_flight == 0  # nothing leaks
        os.close(write_end)
    else:
        os.close(write_end)
    assert lines.join(BOUND)
    assert lines.wait_idle(BOUND) and lines.in_flight == 0
    replies.closed = False  # a write now would be seen: none comes
    assert all(deferred.settled for deferred in handler.deferred.values())
    assert not handler.deferred[1].resolve("late") and not handler.deferred[2].reject(RpcError(INTERNAL_ERROR, "x"))
    assert replies.lines == []  # the peer gets no reply after the close
    reader.close()


def test_deferred_requests_beyond_the_bound_are_refused() -> None:
    handler = Deferring()
    lines, replies, write_end, reader = _serving(handler, Threads(), max_deferred=2)
    try:
        _ask(write_end, 1, 2, 3)
        until(lambda: replies.lines, "the refusal of the third")
        refused = replies.lines[0]["id"]  # whichever came last of the three (each runs on its own thread)
        assert refused in handler.deferred and replies.lines[0]["error"]["code"] == INTERNAL_ERROR
        assert "too many deferred" in replies.lines[0]["error"]["message"]
        assert not handler.deferred[refused].resolve("late")  # the refused one is settled already
        assert lines.in_flight == 2
        for id_, deferred in handler.deferred.items():
            if id_ != refused:
                assert deferred.resolve(id_)
        assert sorted(line["id"] for line in replies.lines) == [1, 2, 3] and lines.in_flight == 0
    finally:
        os.close(write_end)
        assert lines.join(BOUND)
        reader.close()
