"""The official mcp==2.3.0 client (and raw kagent-shaped HTTP) drives examples/acp_echo_agent.py through the gateway.

The echo agent is a real ACP v1 agent process: it remembers each session's history, asks
permission (allow_once / reject_once / allow_always) before writing echo.txt, and waits for a
`session/cancel` on `/wait`. The crash test kills its process mid-turn.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_agent_kit.gateway.acp_backend import AcpBackend
from tests.agents.conftest import ROOT, TASKS_META, GatewayRun
from tests.agents.test_agents_curl import poll, start_task
from tests.agents.test_agents_sdk import ClaimContext, Client, Tasks, types
from tests.sdk_tasks import AnyResult, CreatedTask, TaskParams, TasksCancel, TasksGet

ECHO = ROOT / "examples" / "acp_echo_agent.py"
AGENT = {"namespace": "dev", "name": "echo"}
OPTION_IDS = ["allow-once", "reject-once", "allow-always"]


def _config(tmp_path: Path, approve: str) -> dict[str, Any]:
    work = tmp_path / "repo"
    work.mkdir(exist_ok=True)
    return {"agents": {"dev/echo": {"acp": {
        "command": sys.executable, "args": [str(ECHO)], "env": {"ACP_ECHO_AGENT_DIR": str(tmp_path / "acp")},
        "cwd": str(work), "approve": approve}}}}


async def _blocking(url: str) -> dict[str, Any]:
    async with Client(url) as client:
        listed = await client.call_tool("list_agents", {})
        progress: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        first = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "hello world"},
                                       progress_callback=on_progress)
        second = await client.call_tool("invoke_agent", {"session_id": first.structured_content["session_id"],
                                                         "message": "what did I say before?"})
        return {"listed": listed, "first": first, "second": second, "progress": progress}


def test_the_sdk_client_lists_invokes_and_continues(tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "all"))
    got = asyncio.run(_blocking(run.url))
    (entry,) = got["listed"].structured_content["agents"]
    assert entry["ready"] is True and entry["name"] == "echo"
    assert got["first"].structured_content["state"] == "TASK_STATE_COMPLETED"
    assert got["first"].structured_content["text"] == "Echo: hello world\nFile: written."
    assert (tmp_path / "repo" / "echo.txt").read_text() == "hello world\n"
    assert got["second"].structured_content["text"] == "Before, you said: hello world"
    assert got["progress"] and any(p.startswith(("Echo:", "Plan:", "Tool:")) for p in got["progress"])


async def _task_flow(url: str, message: str, action: str) -> tuple[Any, Tasks]:
    tasks = Tasks(action)
    async with Client(url, extensions=[tasks]) as client:
        result = await client.call_tool("invoke_agent", {"agent": AGENT, "message": message})
    return result, tasks


def test_a_permission_question_is_answered_or_declined_by_tasks_update(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "ask"))
    allowed, tasks = asyncio.run(_task_flow(run.url, "ship it", "accept"))
    schema = tasks.asked[0]["params"]["requestedSchema"]
    assert schema["properties"]["response"]["enum"] == OPTION_IDS and schema["required"] == ["response"]
    assert "input_required" in tasks.seen
    assert allowed.structured_content["text"] == "Echo: ship it\nFile: written."
    declined, _ = asyncio.run(_task_flow(run.url, "not this", "decline"))
    assert declined.structured_content["text"] == "Echo: not this\nFile: refused."
    _, cancelling = asyncio.run(_task_flow(run.url, "never mind", "cancel"))
    assert cancelling.seen[-1] == "cancelled"  # answered `cancelled`: the agent ends the turn cancelled


def test_a_blocking_call_gets_the_question_and_a_cancel_stops_the_turn(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "ask"))
    reply = run.rpc("tools/call", {"name": "invoke_agent", "arguments": {"agent": AGENT, "message": "hi"}})
    assert reply["error"]["code"] == -32021, reply
    assert asyncio.run(_cancel(run.url)) == "cancelled"


async def _cancel(url: str) -> str:
    class Cancelling(Tasks):
        async def _resolve(self, task: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
            async def waiting() -> bool:  # the agent got to its wait (the cancel must reach a running prompt)
                got = (await ctx.session.send_request(TasksGet(params=TaskParams(task_id=task.task_id)),
                                                      AnyResult)).model_dump(by_alias=True)
                return "Waiting" in str(got.get("statusMessage"))

            deadline = time.monotonic() + 10
            while not await waiting():
                assert time.monotonic() < deadline, "the agent never started waiting"
                await asyncio.sleep(0.05)
            await ctx.session.send_request(TasksCancel(params=TaskParams(task_id=task.task_id)), AnyResult)
            return await super()._resolve(task, ctx)

    async with Client(url, extensions=[Cancelling()]) as client:
        result = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "/wait"})
    return str(result.content[0].text)


def wait_stopped(backend: AcpBackend) -> None:
    """Wait (bounded) until the backend's idle agent process was stopped."""
    deadline = time.monotonic() + 15
    while backend.agent is not None and backend.agent.running:
        assert time.monotonic() < deadline, "the idle agent was never stopped"
        time.sleep(0.1)


def _backend(run: GatewayRun) -> AcpBackend:
    assert run.gateway.agents is not None
    backend = run.gateway.agents.backends["dev/echo"]
    assert isinstance(backend, AcpBackend)
    return backend


def test_an_agent_that_dies_mid_turn_fails_it_and_the_next_turn_loads_the_session(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "all"))
    first = run.call("invoke_agent", {"agent": AGENT, "message": "remember me"})["structuredContent"]
    session = first["session_id"]
    backend = _backend(run)
    assert backend.agent is not None and backend.agent.process is not None
    pid = backend.agent.process.pid
    task = start_task(run, {"session_id": session, "message": "/wait"})
    poll_until = time.monotonic() + 10
    while "Waiting" not in run.rpc("tasks/get", {"taskId": task, "_meta": TASKS_META})["result"]["statusMessage"]:
        assert time.monotonic() < poll_until, "the agent never started waiting"
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    failed = poll(run, task, until=("failed", "completed", "cancelled"))
    assert failed["status"] == "failed", failed
    assert "died during the turn" in failed["result"]["structuredContent"]["text"]
    again = run.call("invoke_agent", {"session_id": session, "message": "what did I say before?"})
    assert not again["isError"], again
    # a fresh process, and the session was loaded there (a new session would have no history)
    assert backend.agent is not None and backend.agent.process is not None and backend.agent.process.pid != pid
    assert again["structuredContent"]["text"] in ("Before, you said: remember me", "Before, you said: /wait")


def test_an_idle_agent_is_stopped_and_the_next_turn_respawns_it_with_the_session(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    config = _config(tmp_path, "all")
    config["agents"]["dev/echo"]["acp"]["idle"] = 1
    run = gateway_of(config)
    first = run.call("invoke_agent", {"agent": AGENT, "message": "keep this"})["structuredContent"]
    backend = _backend(run)
    assert backend.agent is not None
    wait_stopped(backend)
    again = run.call("invoke_agent", {"session_id": first["session_id"], "message": "what did I say before?"})
    assert backend.agent.running
    assert again["structuredContent"]["text"] == "Before, you said: keep this"


def test_the_documented_permission_round_is_the_real_wire(tmp_path: Path,
                                                          gateway_of: Callable[..., GatewayRun]) -> None:
    from tests.agents.test_agents_docs import DOC, matches
    from tests.test_docs import blocks

    section = DOC.read_text(encoding="utf-8").split("## ACP coding agents", 1)[1].split("\n## ", 1)[0]
    config, paused_doc, update_doc, done_doc = (json.loads(b.body) for b in blocks(section) if b.lang == "json")
    entry = config["agents"]["dev/echo"]
    assert entry["acp"]["approve"] == "ask"
    run = gateway_of(_config(tmp_path, entry["acp"]["approve"]))
    task = start_task(run, {"agent": AGENT, "message": "ship it"})
    poll(run, task, until=("input_required",))
    paused = run.rpc("tasks/get", {"taskId": task, "_meta": TASKS_META})
    assert not matches(paused_doc, paused), matches(paused_doc, paused)
    update_doc["params"]["taskId"] = task
    assert "result" in run.rpc(update_doc["method"], update_doc["params"], id_=update_doc["id"])
    poll(run, task, until=("completed",))
    done = run.rpc("tasks/get", {"taskId": task, "_meta": TASKS_META}, id_=3)
    assert not matches(done_doc, done), matches(done_doc, done)
    body = done["result"]["result"]
    assert json.loads(body["content"][0]["text"]) == body["structuredContent"]


def test_a_gateway_restart_keeps_the_session_and_loads_it_in_a_new_agent_process(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    store = str(tmp_path / "kept.sqlite")
    first_run = gateway_of(_config(tmp_path, "all"), store)
    first = first_run.call("invoke_agent", {"agent": AGENT, "message": "before the restart"})["structuredContent"]
    first_run.close()  # stops the gateway and its agent process
    run = gateway_of(_config(tmp_path, "all"), store)
    again = run.call("invoke_agent", {"session_id": first["session_id"], "message": "what did I say before?"})
    assert again["structuredContent"]["text"] == "Before, you said: before the restart"


def test_an_agent_that_dies_while_asking_fails_the_paused_turn_and_a_late_answer_changes_nothing(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "ask"))
    task = start_task(run, {"agent": AGENT, "message": "ship it"})
    paused = poll(run, task, until=("input_required",))
    backend = _backend(run)
    assert backend.agent is not None and backend.agent.process is not None
    os.kill(backend.agent.process.pid, signal.SIGKILL)
    failed = poll(run, task, until=("failed", "completed"))  # the paused turn's run is still open: it says so
    assert failed["status"] == "failed" and "died during the turn" in failed["result"]["structuredContent"]["text"]
    key = next(iter(paused["inputRequests"]))
    run.rpc("tasks/update", {"taskId": task, "_meta": TASKS_META,
                             "inputResponses": {key: {"action": "accept", "content": {"response": "allow-once"}}}})
    assert run.rpc("tasks/get", {"taskId": task, "_meta": TASKS_META})["result"]["status"] == "failed"
    assert run.call("list_agents", {})["structuredContent"]["agents"][0]["running"] == 0  # its slot came back
