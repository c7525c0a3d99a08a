"""2025-11-25's experimental tasks for handshake-era clients, with the official mcp 1.30.0 client
(its `session.experimental` API, run in its own venv) as the oracle, over stdio and over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.net import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]

SERVER = textwrap.dedent(
    """
    import sys, threading, time
    from mcp_agent_kit import Context, Server
    from mcp_agent_kit.core.tasks import task_tool

    server = Server("legacy-tasks", "1.0.0")
    gate = threading.Event()

    @server.tool(long_running=True)
    def slow_sum(a: int, b: int, ctx: Context) -> int:
        "Add slowly, reporting progress."
        for step in range(3):
            ctx.progress(step + 1, 3, f"step {step + 1}")
            time.sleep(0.05)
        return a + b

    @server.tool(long_running=True)
    def wait_forever(ctx: Context) -> str:
        "Run until cancelled."
        while not ctx.cancelled:
            time.sleep(0.02)
        return "stopped"

    @server.tool(long_running=True)
    def ask_name(ctx: Context) -> str:
        "Ask the user for a name, as a task."
        answer = ctx.elicit("What is your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"Hello, {answer['content']['name']}!"

    @server.tool(long_running=True)
    def broken() -> str:
        "Fail as a task."
        raise ValueError("no luck")

    @server.tool
    def quick() -> str:
        "Never a task."
        return "quick"

    @server.tool
    def only_task() -> str:
        "Must run as a task."
        return "as a task"

    task_tool(server, "only_task", required=True)

    if __name__ == "__main__":
        server.run()
    """
)

CLIENT = textwrap.dedent(
    """
    import asyncio, json, sys
    from mcp import ClientSession, types
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import McpError

    report = {"status_notes": []}

    async def on_message(message):
        root = getattr(message, "root", message)
        if isinstance(root, types.TaskStatusNotification):
            report["status_notes"].append(root.params.status)

    async def on_elicit(context, params):
        report["elicit_meta"] = params.meta.model_dump(by_alias=True) if params.meta else None
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def until_done(session, task_id):
        seen = []
        while True:
            task = await session.experimental.get_task(task_id)
            seen.append(task.status)
            if task.status in ("completed", "failed", "cancelled"):
                return seen
            await asyncio.sleep(0.05)

    def connect():
        if sys.argv[3].startswith("http"):
            from mcp.client.streamable_http import streamablehttp_client
            return streamablehttp_client(sys.argv[3])
        params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]], env={"PYTHONPATH": sys.argv[2]})
        return stdio_client(params)

    async def main():
        async with connect() as streams:
            read, write = streams[0], streams[1]
            handlers = {"elicitation_callback": on_elicit, "message_handler": on_message}
            async with ClientSession(read, write, **handlers) as session:
                init = await session.initialize()
                report["version"] = init.protocolVersion
                tasks = init.capabilities.tasks
                report["capability"] = tasks.model_dump(exclude_none=True) if tasks else None
                tools = (await session.list_tools()).tools
                report["support"] = {t.name: (t.execution.taskSupport if t.execution else None) for t in tools}

                created = await session.experimental.call_tool_as_task("slow_sum", {"a": 2, "b": 40}, ttl=60000)
                report["created"] = created.task.model_dump(mode="json")
                report["statuses"] = await until_done(session, created.task.taskId)
                result = await session.experimental.get_task_result(created.task.taskId, types.CallToolResult)
                report["result"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)

                failing = await session.experimental.call_tool_as_task("broken", {})
                await until_done(session, failing.task.taskId)
                bad = await session.experimental.get_task_result(failing.task.taskId, types.CallToolResult)
                report["broken"] = [(await session.experimental.get_task(failing.task.taskId)).status, bad.isError]

                asking = await session.experimental.call_tool_as_task("ask_name", {})
                answered = await session.experimental.get_task_result(asking.task.taskId, types.CallToolResult)
                report["asked"] = answered.content[0].text

                endless = await session.experimental.call_tool_as_task("wait_forever", {})
                cancelled = await session.experimental.cancel_task(endless.task.taskId)
                report["cancelled"] = cancelled.status
                try:
                    await session.experimental.cancel_task(endless.task.taskId)
                except McpError as exc:
                    report["cancel_again"] = exc.error.code

                listed = await session.experimental.list_tasks()
                report["listed"] = sorted(t.status for t in listed.tasks)

                for name, as_task in (("quick", True), ("only_task", False)):
                    try:
                        if as_task:
                            await session.experimental.call_tool_as_task(name, {})
                        else:
                            await session.call_tool(name, {})
                        report[name] = "accepted"
                    except McpError as exc:
                        report[name] = exc.error.code
                report["only_task_as_task"] = (await session.experimental.get_task_result(
                    (await session.experimental.call_tool_as_task("only_task", {})).task.taskId, types.CallToolResult
                )).content[0].text
                try:
                    await session.experimental.get_task("no-such-task")
                except McpError as exc:
                    report["unknown"] = exc.error.code
        print(json.dumps(report))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module", params=["stdio", "http"])
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, legacy_python: str) -> Any:
    """What the official client saw, over stdio (our server as its child) or Streamable HTTP."""
    folder = tmp_path_factory.mktemp("legacy_tasks")
    server, client = folder / "server.py", folder / "client.py"
    server.write_text(SERVER)
    client.write_text(CLIENT)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    target, served = "stdio", None
    if request.param == "http":
        port = free_port()
        served = subprocess.Popen([sys.executable, str(server), "--http", f"127.0.0.1:{port}"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(port, served)
        target = f"http://127.0.0.1:{port}/mcp"
    try:
        done = subprocess.run([legacy_python, str(client), str(server), str(ROOT), target], capture_output=True,
                              text=True, timeout=120, env=env)
    finally:
        if served is not None:
            served.terminate()
            served.wait(10)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_capability_and_tool_level_support(report: dict[str, Any]) -> None:
    assert report["version"] == "2025-11-25"
    assert report["capability"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert report["support"] == {"slow_sum": "optional", "wait_forever": "optional", "ask_name": "optional",
                                 "broken": "optional", "quick": None, "only_task": "required"}


def test_a_task_runs_and_its_result_is_what_the_call_would_return(report: dict[str, Any]) -> None:
    created = report["created"]
    assert created["status"] == "working" and created["ttl"] == 60000 and created["pollInterval"] == 500
    assert report["statuses"][-1] == "completed"
    result = report["result"]
    assert result["content"][0]["text"] == "42" and result["isError"] is False
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": created["taskId"]}


def test_a_tool_error_is_a_failed_task(report: dict[str, Any]) -> None:
    assert report["broken"] == ["failed", True]


def test_status_changes_are_announced(report: dict[str, Any]) -> None:
    notes = report["status_notes"]
    for status in ("completed", "failed", "input_required", "cancelled"):
        assert status in notes, notes


def test_a_task_asks_the_user_with_the_related_task_tag(report: dict[str, Any]) -> None:
    assert report["asked"] == "Hello, Ada!"
    assert "io.modelcontextprotocol/related-task" in report["elicit_meta"]


def test_cancel_list_and_errors(report: dict[str, Any]) -> None:
    assert report["cancelled"] == "cancelled"
    assert report["cancel_again"] == -32602
    assert "cancelled" in report["listed"] and "completed" in report["listed"] and "failed" in report["listed"]
    assert report["quick"] == -32601  # forbidden as a task
    assert report["only_task"] == -32601  # required as a task
    assert report["only_task_as_task"] == "as a task"
    assert report["unknown"] == -32602


def test_older_revisions_see_no_tasks_and_a_task_field_is_ignored() -> None:
    from mcp_agent_kit import Server
    from mcp_agent_kit.core.dispatcher import Connection

    server = Server("older", "1.0.0")

    @server.tool(long_running=True)
    def slow() -> str:
        "A task-capable tool."
        return "done"

    conn = Connection()
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    reply = server.handle({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, conn)
    assert reply is not None and "tasks" not in reply["result"]["capabilities"]
    listed = server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, conn)
    assert listed is not None and "execution" not in listed["result"]["tools"][0]
    called = server.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": {"name": "slow", "arguments": {}, "task": {"ttl": 1000}}}, conn)
    assert called is not None and called["result"]["content"][0]["text"] == "done"  # processed normally
    got = server.handle({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": "x"}}, conn)
    assert got is not None and got["error"]["code"] == -32601
    newer = Connection()
    init["protocolVersion"] = "2025-11-25"
    reply = server.handle({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, newer)
    assert reply is not None and reply["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
