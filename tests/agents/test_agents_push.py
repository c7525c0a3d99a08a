"""After a task-mode invoke_agent returned, the turn's progress reaches the caller as `notifications/tasks` on a
`subscriptions/listen` naming the task (the tasks extension's optional push; a progressToken dies with its request)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.conftest import TASKS_META, GatewayRun
from tests.agents.test_agents_acp import AGENT, _config
from tests.agents.test_agents_docs import matches


def _documented() -> list[Any]:
    """The listen request and the pushed notification the docs show (the Tasks section)."""
    from tests.agents.test_agents_docs import DOC
    from tests.test_docs import blocks

    section = DOC.read_text(encoding="utf-8").split("\n## Tasks\n", 1)[1].split("\n## ", 1)[0]
    return [json.loads(b.body) for b in blocks(section) if b.lang == "json"]


def _listen(run: GatewayRun, task_ids: list[str], headers: dict[str, str]) -> tuple[Any, http.client.HTTPConnection]:
    conn = http.client.HTTPConnection(run.http.host, run.http.port, timeout=20)
    request = _documented()[0]
    request["params"]["notifications"]["taskIds"] = task_ids
    conn.request("POST", "/mcp", json.dumps(request),
                 {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                  "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen", **headers})
    return conn.getresponse(), conn


def _events(response: Any, until: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """SSE events up to and including the first `until` accepts (the connection's timeout bounds each read)."""
    seen: list[dict[str, Any]] = []
    while True:
        line = response.readline().decode()
        assert line, f"the stream ended after {seen}"
        if line.startswith("data:") and line[5:].strip():
            seen.append(json.loads(line[5:]))
            if until(seen[-1]):
                return seen


def _paused(run: GatewayRun, headers: dict[str, str], message: str) -> tuple[str, str]:
    """A task-mode invoke_agent that the echo agent pauses on its permission question: (task id, request key)."""
    created = run.rpc("tools/call", {"name": "invoke_agent", "arguments": {"agent": AGENT, "message": message},
                                     "_meta": TASKS_META}, headers)["result"]
    deadline = time.monotonic() + 20
    while True:
        task = run.rpc("tasks/get", {"taskId": created["taskId"], "_meta": TASKS_META}, headers)["result"]
        if task["status"] == "input_required":
            return created["taskId"], next(iter(task["inputRequests"]))
        assert time.monotonic() < deadline, task


def _allow(run: GatewayRun, headers: dict[str, str], task: str, key: str) -> None:
    run.rpc("tasks/update", {"taskId": task, "_meta": TASKS_META, "inputResponses": {
        key: {"action": "accept", "content": {"response": "allow-once"}}}}, headers)


def _acknowledged(event: dict[str, Any]) -> bool:
    return event.get("method") == "notifications/subscriptions/acknowledged"


def test_a_listen_on_the_task_gets_its_progress_and_its_end(tmp_path: Path,
                                                            gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "ask"), tokens={"alice-token": "alice", "bob-token": "bob"})
    alice, bob = {"Authorization": "Bearer alice-token"}, {"Authorization": "Bearer bob-token"}
    task, key = _paused(run, alice, "push it")
    bobs, bobs_key = _paused(run, bob, "bob's turn")
    response, conn = _listen(run, [task], alice)
    others, other_conn = _listen(run, [task, bobs], bob)  # bob names alice's task id too
    try:
        (ack,) = _events(response, _acknowledged)
        assert ack["params"]["notifications"] == {"taskIds": [task]}
        assert _events(others, _acknowledged)[0]["params"]["notifications"] == {"taskIds": [task, bobs]}
        _allow(run, alice, task, key)
        pushed = _events(response, lambda e: e.get("params", {}).get("status") == "completed")
        tasks = [e["params"] for e in pushed if e.get("method") == "notifications/tasks"]
        assert tasks and all(t["taskId"] == task for t in tasks)
        assert tasks[0]["status"] == "working" and tasks[0]["statusMessage"] == "The answer was sent to the agent."
        assert any(t["statusMessage"].startswith(("Echo:", "Plan:", "Tool:")) for t in tasks)  # progress text
        assert tasks[-1]["result"]["structuredContent"]["text"] == "Echo: push it\nFile: written."
        assert not matches(_documented()[1], pushed[-1]), matches(_documented()[1], pushed[-1])
        body = tasks[-1]["result"]
        assert json.loads(body["content"][0]["text"]) == body["structuredContent"]
        # alice's task pushed everything before bob's turn resumed: bob's stream shows his task only
        _allow(run, bob, bobs, bobs_key)
        heard = _events(others, lambda e: e.get("params", {}).get("status") == "completed")
        assert {e["params"]["taskId"] for e in heard if e.get("method") == "notifications/tasks"} == {bobs}
    finally:
        conn.close()
        other_conn.close()
