"""Task limits under hostile load: finished tasks never block new ones, per-principal quotas,
2025-11-25 tasks ended with their session and at their ttl, a bounded worker pool (both eras, A2A)."""

from __future__ import annotations

import json
import threading
from typing import Any

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.core.task_table import TaskLimits
from tests.http.conftest import META, parse_body, start

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
LEGACY = "2025-11-25"


def make_server(**options: Any) -> tuple[Server, threading.Event]:
    server = Server("limits", "1.0.0", **options)
    gate = threading.Event()

    @server.tool(long_running=True)
    def quick() -> str:
        """Finish at once."""
        return "done"

    @server.tool(long_running=True)
    def held(ctx: Context) -> str:
        """Run until the gate opens or the task is cancelled."""
        while not gate.is_set() and not ctx.cancel_event.wait(0.05):
            pass
        return "released"

    @server.tool(long_running=True)
    def until_cancelled(ctx: Context) -> str:
        """Run until cancelled."""
        ctx.cancel_event.wait()
        return "stopped"

    return server, gate


def call(server: Server, conn: Connection, tool: str) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": tool, "arguments": {},
                          "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": TASKS}}}
    reply = server.handle(message, conn)
    assert reply is not None
    return reply


def tasks_of(server: Server) -> Any:
    return server.dispatcher.extension("tasks")


# ---- 2026-07-28 -----------------------------------------------------------------------------------
def test_finished_tasks_of_one_principal_never_block_new_tasks() -> None:
    server, _ = make_server()  # the default limits
    greedy, other = Connection(principal="greedy"), Connection(principal="other")
    table = tasks_of(server).table
    for _ in range(10_100):
        reply = call(server, greedy, "quick")
        assert reply["result"]["resultType"] == "task", reply
        task = table.find(reply["result"]["taskId"], "greedy")
        assert table.wait_end(task, None)
    for conn in (other, greedy):
        reply = call(server, conn, "quick")
        assert reply.get("result", {}).get("resultType") == "task", reply


def test_finished_tasks_of_many_principals_never_block_a_new_one() -> None:
    """Every principal within its own quota, together past the server's: the oldest finished task
    of anyone makes room, so a newcomer still gets a task and the table stays at its limit."""
    server, _ = make_server(task_limits=TaskLimits(max_tasks=40, per_principal=10))
    table = tasks_of(server).table
    for n in range(6):  # 60 finished tasks, 10 per principal
        conn = Connection(principal=f"p{n}")
        for _ in range(10):
            reply = call(server, conn, "quick")
            assert reply["result"]["resultType"] == "task", reply
            assert table.wait_end(table.find(reply["result"]["taskId"], f"p{n}"), None)
    reply = call(server, Connection(principal="newcomer"), "quick")
    assert reply.get("result", {}).get("resultType") == "task", reply
    assert len(table._tasks) <= 40


def test_a_greedy_principal_is_refused_while_another_still_gets_tasks() -> None:
    server, gate = make_server(task_limits=TaskLimits(running_per_principal=5, per_principal=8))
    greedy, other = Connection(principal="greedy"), Connection(principal="other")
    try:
        for _ in range(5):
            assert call(server, greedy, "held")["result"]["resultType"] == "task"
        refused = call(server, greedy, "held")
        assert refused["error"]["code"] == -32603
        assert "too many unfinished tasks" in refused["error"]["message"]
        kept = call(server, other, "quick")["result"]["taskId"]
        assert call(server, other, "held")["result"]["resultType"] == "task"
    finally:
        gate.set()
    table = tasks_of(server).table
    assert server.dispatcher.extension("tasks").pool.wait_idle(5.0)
    for _ in range(20):  # the greedy principal's finished tasks make room for its own new ones only
        task = table.find(call(server, greedy, "quick")["result"]["taskId"], "greedy")
        assert table.wait_end(task, None)
    assert table.find(kept, "other").status == "completed"
    assert len(table.owned_by("greedy")) <= 8


def test_running_tasks_share_a_bounded_pool_of_threads() -> None:
    server, gate = make_server(task_limits=TaskLimits(workers=4))
    conn = Connection(principal="p")
    before = threading.active_count()
    try:
        ids = [call(server, conn, "held")["result"]["taskId"] for _ in range(200)]
        table = tasks_of(server).table
        assert all(table.find(task_id, "p").status == "working" for task_id in ids)  # queued ones too
        assert threading.active_count() - before <= 4 + 1  # the pool, and the ttl reaper
    finally:
        gate.set()
    for task_id in ids:
        task = table.find(task_id, "p")
        assert table.wait_end(task, None) and task.status == "completed"


def test_both_eras_share_one_pool_built_by_the_first_task() -> None:
    server, _ = make_server(task_limits=TaskLimits(workers=3))
    modern, legacy = tasks_of(server), server.dispatcher.extension("legacy-tasks")
    assert not modern.lazy_pool.built and legacy.lazy_pool is modern.lazy_pool  # a plain start builds none
    reply = call(server, Connection(principal="p"), "quick")
    assert reply["result"]["resultType"] == "task" and modern.lazy_pool.built
    assert legacy.pool is modern.pool and modern.pool.workers == 3
    assert modern.pool.wait_idle(5.0)


# ---- 2025-11-25 over HTTP ----------------------------------------------------------------------------
class LegacySession:
    def __init__(self, running: Any) -> None:
        self.running = running
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        status, headers, _ = running.post(init, {"MCP-Protocol-Version": LEGACY})
        assert status == 200
        self.headers = {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": headers["mcp-session-id"]}
        running.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers)

    def task(self, tool: str, ttl: int | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool, "arguments": {}, "task": {} if ttl is None else {"ttl": ttl}}
        body = self.call(params)
        assert "task" in body["result"], body
        return dict(body["result"]["task"])

    def call(self, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC reply to one tools/call (a JSON body or the last SSE event)."""
        status, headers, payload = self.running.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, self.headers)
        assert status == 200, payload
        body = parse_body(headers, payload)
        return dict(body[-1] if isinstance(body, list) else body)


def test_deleting_a_session_cancels_its_300_running_tasks_and_frees_their_workers() -> None:
    server, _ = make_server()
    legacy = server.dispatcher.extension("legacy-tasks")
    running = start(server.dispatcher)
    try:
        session = LegacySession(running)
        ids = {session.task("until_cancelled")["taskId"] for _ in range(300)}
        conn = running.server.sessions.get(session.headers["Mcp-Session-Id"], None).conn  # type: ignore[union-attr]
        records = legacy.tasks_of(conn)
        assert {task.id for task in records} == ids
        assert legacy.pool.threads <= 32
        status, _, _ = running.request("DELETE", session.headers)
        assert status in (200, 204)
        assert {task.status for task in records} == {"cancelled"}
        assert legacy.pool.wait_idle(1.0), "the workers are still busy a second after the session ended"
        assert legacy.tasks_of(conn) == []
    finally:
        running.server.shutdown()
        running.server.server_close()


def test_a_running_2025_task_is_cancelled_and_dropped_at_its_ttl() -> None:
    server, _ = make_server()
    legacy = server.dispatcher.extension("legacy-tasks")
    running = start(server.dispatcher)
    try:
        session = LegacySession(running)
        session.task("until_cancelled", ttl=100)
        conn = running.server.sessions.get(session.headers["Mcp-Session-Id"], None).conn  # type: ignore[union-attr]
        (task,) = legacy.tasks_of(conn)
        assert task.cancel.wait(5.0), "the task outlived its ttl"
        assert legacy.pool.wait_idle(1.0)
        assert task.status == "cancelled" and legacy.tasks_of(conn) == []
    finally:
        running.server.shutdown()
        running.server.server_close()


def test_2025_tasks_are_bounded_overall_not_per_session() -> None:
    server, gate = make_server(task_limits=TaskLimits(running_per_principal=10))
    running = start(server.dispatcher)
    try:
        sessions = [LegacySession(running) for _ in range(3)]
        for session in sessions[:2]:
            for _ in range(5):
                session.task("held")
        refused = sessions[2].call({"name": "held", "arguments": {}, "task": {}})
        assert refused["error"]["code"] == -32603
    finally:
        gate.set()
        running.server.shutdown()
        running.server.server_close()


# ---- A2A -----------------------------------------------------------------------------------------------
def test_a2a_tasks_run_on_a_bounded_pool_with_a_per_principal_quota() -> None:
    import pytest

    from mcp_agent_kit.a2a.engine import Agent, Job, TaskEngine, Work
    from mcp_agent_kit.a2a.protocol import A2AError

    gate = threading.Event()

    class Held(Agent):
        def accept(self, message: dict[str, Any], task: dict[str, Any] | None) -> Work:
            def work(job: Job) -> None:
                gate.wait(10)
                job.reply("done")

            return work

    engine = TaskEngine(Held(), workers=3, max_running_per_owner=40)
    message = {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}]}
    before = threading.active_count()
    try:
        for n in range(40):
            engine.send("greedy", {"message": {**message, "messageId": f"m{n}"},
                                   "configuration": {"returnImmediately": True}})
        assert threading.active_count() - before <= 3
        with pytest.raises(A2AError):
            engine.send("greedy", {"message": message, "configuration": {"returnImmediately": True}})
        engine.send("other", {"message": message, "configuration": {"returnImmediately": True}})
    finally:
        gate.set()
    assert engine.pool.wait_idle(10.0)


def test_stdio_eof_cancels_the_streams_2025_tasks() -> None:
    import os

    from mcp_agent_kit.transports.stdio import StdioTransport

    server, _ = make_server()
    legacy = server.dispatcher.extension("legacy-tasks")
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    transport = StdioTransport(server.dispatcher, os.fdopen(in_r, "rb"), os.fdopen(out_w, "wb", buffering=0))
    served = threading.Thread(target=transport.serve, daemon=True)
    served.start()
    writer, reader = os.fdopen(in_w, "wb", buffering=0), os.fdopen(out_r, "rb")

    def send(message: dict[str, Any]) -> dict[str, Any]:
        writer.write(json.dumps(message).encode() + b"\n")
        return dict(json.loads(reader.readline())) if "id" in message else {}

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for n in range(20):
        reply = send({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                      "params": {"name": "until_cancelled", "arguments": {}, "task": {}}})
        assert "task" in reply["result"], reply
    records = legacy.tasks_of(transport.conn)
    assert len(records) == 20
    writer.close()  # EOF
    served.join(5.0)
    assert not served.is_alive()
    assert {task.status for task in records} == {"cancelled"}
    assert legacy.pool.wait_idle(1.0)
    reader.close()
