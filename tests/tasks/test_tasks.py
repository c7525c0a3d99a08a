"""The tasks extension on both transports: create, poll, answer, cancel, expire, gate."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_agent_kit import Context, Server, ToolError
from mcp_agent_kit.core.tasks import task_tool
from mcp_agent_kit.transports.stdio import StdioTransport
from tests.http.conftest import META, start

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def make_server() -> Server:
    server = Server("tasks-test", "1.0.0")

    @server.tool(long_running=True)
    def slow(ctx: Context, seconds: float = 0.0) -> str:
        """Sleep cooperatively."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ctx.cancelled:
                return "stopped"
            time.sleep(0.01)
        return f"slept {seconds}"

    @server.tool(long_running=True)
    def confirm(ctx: Context) -> str:
        """Ask the user, then finish."""
        answer = ctx.elicit("Sure?", CONFIRM, key="sure")
        return f"ok={answer['content']['ok']}"

    @server.tool(long_running=True)
    def broken() -> str:
        """Fail as a tool."""
        raise ToolError("nope")

    @server.tool
    def must_be_task() -> str:
        """Only runs as a task."""
        return "ran"

    @server.tool
    def short_lived() -> str:
        """A task with a tiny ttl."""
        return "gone soon"

    task_tool(server, "must_be_task", required=True)
    task_tool(server, "short_lived", ttl_ms=50)
    return server


class HttpPeer:
    def __init__(self, server: Server) -> None:
        self.running = start(server.dispatcher)

    def call(self, method: str, params: dict[str, Any], caps: dict[str, Any] | None = TASKS) -> dict[str, Any]:
        meta = {"io.modelcontextprotocol/clientCapabilities": caps or {}}
        _, body = self.running.modern(method, params, meta=meta)
        assert isinstance(body, dict)
        return body

    def close(self) -> None:
        self.running.server.shutdown()
        self.running.server.server_close()


class StdioPeer:
    def __init__(self, server: Server) -> None:
        in_r, self._in_w = os.pipe()
        self._out_r, out_w = os.pipe()
        self._writer = os.fdopen(self._in_w, "wb", buffering=0)
        self._reader = os.fdopen(self._out_r, "rb")
        transport = StdioTransport(server.dispatcher, os.fdopen(in_r, "rb"), os.fdopen(out_w, "wb", buffering=0))
        threading.Thread(target=transport.serve, daemon=True).start()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def call(self, method: str, params: dict[str, Any], caps: dict[str, Any] | None = TASKS) -> dict[str, Any]:
        id_ = next(self._ids)
        meta = {**META, "io.modelcontextprotocol/clientCapabilities": caps or {}}
        message = {"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, "_meta": meta}}
        with self._lock:
            self._writer.write(json.dumps(message).encode() + b"\n")
            while True:
                reply: dict[str, Any] = json.loads(self._reader.readline())
                if reply.get("id") == id_:
                    return reply

    def close(self) -> None:
        self._writer.close()


@pytest.fixture(params=["http", "stdio"])
def peer(request: pytest.FixtureRequest) -> Iterator[Any]:
    made = HttpPeer(make_server()) if request.param == "http" else StdioPeer(make_server())
    yield made
    made.close()


def _wait(peer: Any, task_id: str, until: set[str]) -> dict[str, Any]:
    for _ in range(1000):  # a bound on polls, not a timing assertion
        got = peer.call("tasks/get", {"taskId": task_id})["result"]
        if got["status"] in until:
            return dict(got)
        time.sleep(0.01)
    raise AssertionError(f"task {task_id} never reached {until}")


def test_create_poll_completed(peer: Any) -> None:
    created = peer.call("tools/call", {"name": "slow", "arguments": {"seconds": 0.05}})["result"]
    assert created["resultType"] == "task" and created["status"] == "working"
    assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= created.keys()
    assert "requestState" not in created and "task" not in created
    first = peer.call("tasks/get", {"taskId": created["taskId"]})["result"]  # exists before the reply went out
    assert first["resultType"] == "complete" and first["taskId"] == created["taskId"]
    done = _wait(peer, created["taskId"], {"completed"})
    assert done["result"]["content"][0]["text"] == "slept 0.05"
    assert "error" not in done


def test_tool_error_completes_with_is_error(peer: Any) -> None:
    created = peer.call("tools/call", {"name": "broken", "arguments": {}})["result"]
    done = _wait(peer, created["taskId"], {"completed", "failed"})
    assert done["status"] == "completed" and done["result"]["isError"] is True


def test_input_required_then_update_completes(peer: Any) -> None:
    created = peer.call("tools/call", {"name": "confirm", "arguments": {}}, TASKS | {"elicitation": {}})["result"]
    parked = _wait(peer, created["taskId"], {"input_required"})
    assert list(parked["inputRequests"]) == ["sure"]
    assert parked["inputRequests"]["sure"]["method"] == "elicitation/create"
    ack = peer.call("tasks/update", {"taskId": created["taskId"], "inputResponses": {
        "sure": {"action": "accept", "content": {"ok": True}}, "unknown-key": {"ignored": True}}})["result"]
    assert ack["resultType"] == "complete" and "status" not in ack
    done = _wait(peer, created["taskId"], {"completed", "failed", "cancelled"})
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "ok=True"


def test_cancel_while_working(peer: Any) -> None:
    created = peer.call("tools/call", {"name": "slow", "arguments": {"seconds": 30}})["result"]
    ack = peer.call("tasks/cancel", {"taskId": created["taskId"]})["result"]
    assert ack["resultType"] == "complete"
    done = _wait(peer, created["taskId"], {"completed", "failed", "cancelled"})
    assert done["status"] == "cancelled"
    assert peer.call("tasks/cancel", {"taskId": created["taskId"]})["result"]["resultType"] == "complete"


def test_cancel_while_input_required(peer: Any) -> None:
    created = peer.call("tools/call", {"name": "confirm", "arguments": {}}, TASKS | {"elicitation": {}})["result"]
    _wait(peer, created["taskId"], {"input_required"})
    peer.call("tasks/cancel", {"taskId": created["taskId"]})
    assert _wait(peer, created["taskId"], {"completed", "failed", "cancelled"})["status"] == "cancelled"


def test_expired_task_is_unknown(peer: Any) -> None:
    created = peer.call("tools/call", {"name": "short_lived", "arguments": {}})["result"]
    assert created["ttlMs"] == 50
    for _ in range(1000):
        reply = peer.call("tasks/get", {"taskId": created["taskId"]})
        if "error" in reply:
            assert reply["error"]["code"] == -32602
            return
        time.sleep(0.01)
    raise AssertionError("the task never expired")


def test_undeclared_extension(peer: Any) -> None:
    for method, params in (("tasks/get", {"taskId": "x"}), ("tasks/cancel", {"taskId": "x"}),
                           ("tasks/update", {"taskId": "x", "inputResponses": {}})):
        reply = peer.call(method, params, caps={})
        assert reply["error"]["code"] == -32021
        assert reply["error"]["data"]["requiredCapabilities"] == TASKS
    required = peer.call("tools/call", {"name": "must_be_task", "arguments": {}}, caps={})
    assert required["error"]["code"] == -32021 and required["error"]["data"]["requiredCapabilities"] == TASKS
    sync = peer.call("tools/call", {"name": "slow", "arguments": {"seconds": 0}}, caps={})["result"]
    assert sync["resultType"] == "complete" and sync["content"][0]["text"] == "slept 0"


def test_unknown_task_and_bad_update(peer: Any) -> None:
    assert peer.call("tasks/get", {"taskId": "no-such-task"})["error"]["code"] == -32602
    created = peer.call("tools/call", {"name": "slow", "arguments": {"seconds": 0}})["result"]
    bad = peer.call("tasks/update", {"taskId": created["taskId"], "inputResponses": []})
    assert bad["error"]["code"] == -32602


def test_tasks_are_private_to_their_principal() -> None:
    running = start(make_server().dispatcher, tokens={"alice-t": "alice", "bob-t": "bob"})
    try:
        caps = {"io.modelcontextprotocol/clientCapabilities": TASKS}
        _, created = running.modern("tools/call", {"name": "slow", "arguments": {"seconds": 0}}, meta=caps,
                                    headers={"Authorization": "Bearer alice-t"})
        task_id = created["result"]["taskId"]
        alice, bob = {"Authorization": "Bearer alice-t"}, {"Authorization": "Bearer bob-t"}
        _, mine = running.modern("tasks/get", {"taskId": task_id}, meta=caps, headers=alice)
        assert mine["result"]["taskId"] == task_id
        _, theirs = running.modern("tasks/get", {"taskId": task_id}, meta=caps, headers=bob)
        assert theirs["error"]["code"] == -32602
    finally:
        running.server.shutdown()
        running.server.server_close()


def test_mrtr_prelude_then_detach(peer: Any) -> None:
    server_peer_caps = TASKS | {"elicitation": {}}
    first = peer.call("tools/call", {"name": "prelude", "arguments": {}}, server_peer_caps)["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    second = peer.call("tools/call", {"name": "prelude", "arguments": {}, "requestState": first["requestState"],
                                      "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}},
                       server_peer_caps)["result"]
    assert second["resultType"] == "task" and "requestState" not in second
    done = _wait(peer, second["taskId"], {"completed", "failed", "cancelled"})
    assert done["result"]["content"][0]["text"] == "hello Ada"


def test_discover_advertises_the_extension(peer: Any) -> None:
    caps = peer.call("server/discover", {}, caps={})["result"]["capabilities"]
    assert caps["extensions"] == {"io.modelcontextprotocol/tasks": {}}


@pytest.fixture(autouse=True)
def _prelude_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adds a tool that asks first (MRTR) and then detaches with start_task."""
    from mcp_agent_kit.core.tasks import start_task

    original = make_server

    def with_prelude() -> Server:
        server = original()

        @server.tool
        def prelude(ctx: Context) -> str:
            """Ask, then continue as a task."""
            answer = ctx.elicit("Who?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
            start_task(ctx)
            return f"hello {answer['content']['name']}"

        task_tool(server, "prelude", manual=True)
        return server

    monkeypatch.setitem(globals(), "make_server", with_prelude)
