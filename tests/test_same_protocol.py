"""One script of requests, three ways in: in-process `server.handle`, stdio and Streamable HTTP
give the same answers to examples/everything_server.py — tasks of both eras included.

Only what legitimately differs is normalised: task ids (numbered by first appearance) and
timestamps. Every transport serves the dispatcher the Server composed, so a difference here means
a transport added or lost protocol.
"""

from __future__ import annotations

import http.client
import json
import runpy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.core.dispatcher import Connection
from mcp_agent_kit.wire import headers as wire_headers
from tests.http.conftest import parse_body, start
from tests.stdio_peer import StdioPeer

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/everything_server.py"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TERMINAL = {"completed", "failed", "cancelled"}

Send = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def modern(id_: int, method: str, caps: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {},
        "io.modelcontextprotocol/clientInfo": {"name": "same-protocol", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": {"_meta": meta, **params}}


def legacy(id_: int | None, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        message["id"] = id_
    return message


# ---- the script: each step builds its request from what earlier replies said -----------------------
Step = Callable[[dict[str, Any]], dict[str, Any]]


def _task_id(reply: dict[str, Any]) -> str:
    result = reply["result"]
    return str(result["task"]["taskId"] if "task" in result else result["taskId"])


def run_script(send: Send, steps: list[tuple[str, Step]]) -> list[Any]:
    """Send each step; `poll:` steps repeat (same id) until the task is terminal."""
    saved: dict[str, Any] = {}
    replies: list[Any] = []
    for name, build in steps:
        message = build(saved)
        reply = send(message)
        if name.startswith("poll:"):
            deadline = time.monotonic() + 15
            while reply is not None and _status(reply) not in TERMINAL and time.monotonic() < deadline:
                time.sleep(0.02)
                reply = send(message)
        if name.startswith("task:") and reply is not None and "result" in reply:
            saved[name[5:]] = _task_id(reply)
        replies.append((name, reply))
    return replies


def _status(reply: dict[str, Any]) -> Any:
    result = reply.get("result") or {}
    return result.get("status", (result.get("task") or {}).get("status"))


MODERN_SCRIPT: list[tuple[str, Step]] = [
    ("discover", lambda s: modern(1, "server/discover")),
    ("tools", lambda s: modern(2, "tools/list")),
    ("sync call", lambda s: modern(3, "tools/call", name="greet", arguments={"name": "Ada"})),
    ("long_running without the extension", lambda s: modern(4, "tools/call", name="slow_compute",
                                                            arguments={"seconds": 0, "label": "sync"})),
    ("task:quick", lambda s: modern(5, "tools/call", TASKS, name="slow_compute",
                                    arguments={"seconds": 0, "label": "quick"})),
    ("poll:quick", lambda s: modern(6, "tasks/get", TASKS, taskId=s["quick"])),
    ("task:long", lambda s: modern(7, "tools/call", TASKS, name="slow_compute",
                                   arguments={"seconds": 30, "label": "long"})),
    ("get long", lambda s: modern(8, "tasks/get", TASKS, taskId=s["long"])),
    ("cancel long", lambda s: modern(9, "tasks/cancel", TASKS, taskId=s["long"])),
    ("poll:long", lambda s: modern(10, "tasks/get", TASKS, taskId=s["long"])),
    ("tasks/list is not a 2026-07-28 method", lambda s: modern(11, "tasks/list", TASKS)),
    ("unknown task", lambda s: modern(12, "tasks/get", TASKS, taskId="no-such-task")),
    ("tasks/get without the extension", lambda s: modern(13, "tasks/get", taskId=s["quick"])),
    ("task-only tool without the extension", lambda s: modern(14, "tools/call", name="failing_job", arguments={})),
]

LEGACY_SCRIPT: list[tuple[str, Step]] = [
    ("initialize", lambda s: legacy(1, "initialize", protocolVersion=LEGACY, capabilities={},
                                    clientInfo={"name": "same-protocol", "version": "0"})),
    ("initialized", lambda s: legacy(None, "notifications/initialized")),
    ("tools", lambda s: legacy(2, "tools/list")),
    ("sync call", lambda s: legacy(3, "tools/call", name="greet", arguments={"name": "Ada"})),
    ("task:quick", lambda s: legacy(4, "tools/call", name="slow_compute", arguments={"seconds": 0, "label": "q"},
                                    task={"ttl": 60000})),
    ("poll:quick", lambda s: legacy(5, "tasks/get", taskId=s["quick"])),
    ("result quick", lambda s: legacy(6, "tasks/result", taskId=s["quick"])),
    ("task:long", lambda s: legacy(7, "tools/call", name="slow_compute", arguments={"seconds": 30, "label": "l"},
                                   task={"ttl": 60000})),
    ("get long", lambda s: legacy(8, "tasks/get", taskId=s["long"])),
    ("cancel long", lambda s: legacy(9, "tasks/cancel", taskId=s["long"])),
    ("poll:long", lambda s: legacy(10, "tasks/get", taskId=s["long"])),
    ("list", lambda s: legacy(11, "tasks/list")),
    ("cancel again", lambda s: legacy(12, "tasks/cancel", taskId=s["long"])),
    ("unknown task", lambda s: legacy(13, "tasks/get", taskId="no-such-task")),
    ("ping", lambda s: legacy(14, "ping")),
]


# ---- normalising -------------------------------------------------------------------------------------
TIME_KEYS = {"createdAt", "lastUpdatedAt"}


def normalise(replies: list[Any]) -> list[Any]:
    names: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key in TIME_KEYS and isinstance(item, str):
                    out[key] = "<time>"
                elif key == "taskId" and isinstance(item, str) and item != "no-such-task":
                    out[key] = names.setdefault(item, f"<task-{len(names) + 1}>")
                else:
                    out[key] = walk(item)
            return out
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        return value

    return walk(replies)  # type: ignore[no-any-return]


# ---- the three ways in ---------------------------------------------------------------------------------
def fresh_server() -> Any:
    return runpy.run_path(str(ROOT / EXAMPLE))["server"]


def in_process() -> Iterator[Send]:
    server = fresh_server()
    conn = Connection()
    yield lambda message: server.handle(message, conn)


def over_stdio() -> Iterator[Send]:
    peer = StdioPeer(EXAMPLE)

    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        if "id" not in message:
            peer.send(message)
            return None
        return peer.call(message)

    try:
        yield send
    finally:
        peer.close()


def over_http() -> Iterator[Send]:
    running = start(fresh_server().dispatcher)
    session: dict[str, str] = {}

    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        params = message.get("params") or {}
        hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if "_meta" in params:
            hdrs.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": message["method"]})
            field = wire_headers.NAME_FIELD.get(message["method"])
            if field is not None and field in params:
                hdrs["Mcp-Name"] = str(params[field])
        elif session:
            hdrs.update(session)
        conn = http.client.HTTPConnection(running.host, running.port, timeout=20)
        conn.request("POST", "/mcp", json.dumps(message).encode(), hdrs)
        response = conn.getresponse()
        got = {k.lower(): v for k, v in response.getheaders()}
        payload = response.read()
        conn.close()
        if "mcp-session-id" in got:
            session.update({"Mcp-Session-Id": got["mcp-session-id"], "MCP-Protocol-Version": LEGACY})
        if "id" not in message:
            assert response.status == 202, payload
            return None
        body = parse_body(got, payload)
        if isinstance(body, list):  # an SSE stream: the reply is the event with our id
            body = next(event for event in body if event.get("id") == message["id"] and "method" not in event)
        return body  # type: ignore[no-any-return]

    try:
        yield send
    finally:
        running.server.shutdown()
        running.server.server_close()


WAYS = {"in-process": in_process, "stdio": over_stdio, "http": over_http}


@pytest.mark.parametrize("script", [MODERN_SCRIPT, LEGACY_SCRIPT], ids=["2026-07-28", "2025-11-25"])
def test_in_process_stdio_and_http_answer_alike(script: list[tuple[str, Step]]) -> None:
    answers: dict[str, list[Any]] = {}
    for way, open_way in WAYS.items():
        ways = open_way()
        send = next(ways)
        try:
            answers[way] = normalise(run_script(send, script))
        finally:
            ways.close()
    reference = answers["in-process"]
    for way in ("stdio", "http"):
        for (name, expected), (_, got) in zip(reference, answers[way], strict=True):
            assert got == expected, f"{way} differs from in-process at step {name!r}"


def test_the_script_exercises_tasks_in_process() -> None:
    """The reference answers themselves: tasks are offered in-process, not only by transports."""
    ways = in_process()
    send = next(ways)
    modern_answers = dict(normalise(run_script(send, MODERN_SCRIPT)))
    skills = {"io.modelcontextprotocol/skills": {"directoryRead": True}}  # the example serves examples/skills
    assert modern_answers["discover"]["result"]["capabilities"]["extensions"] == {**TASKS["extensions"], **skills}
    assert modern_answers["task:quick"]["result"]["resultType"] == "task"
    assert modern_answers["poll:quick"]["result"]["status"] == "completed"
    assert modern_answers["get long"]["result"]["status"] == "working"
    assert modern_answers["poll:long"]["result"]["status"] == "cancelled"
    assert modern_answers["long_running without the extension"]["result"]["resultType"] == "complete"
    assert modern_answers["tasks/list is not a 2026-07-28 method"]["error"]["code"] == -32601
    assert modern_answers["unknown task"]["error"]["code"] == -32602
    assert modern_answers["tasks/get without the extension"]["error"]["code"] == -32021
    assert modern_answers["task-only tool without the extension"]["error"]["code"] == -32021
    ways = in_process()
    send = next(ways)
    legacy_answers = dict(normalise(run_script(send, LEGACY_SCRIPT)))
    assert "tasks" in legacy_answers["initialize"]["result"]["capabilities"]
    assert legacy_answers["task:quick"]["result"]["task"]["status"] == "working"
    assert legacy_answers["poll:quick"]["result"]["status"] == "completed"
    assert legacy_answers["result quick"]["result"]["content"][0]["text"] == "computed q after 0s"
    assert legacy_answers["cancel long"]["result"]["status"] == "cancelled"
    assert [task["status"] for task in legacy_answers["list"]["result"]["tasks"]] == ["completed", "cancelled"]
    assert legacy_answers["cancel again"]["error"]["code"] == -32602
