"""ACP checkpoints and forks, MCP servers handed to ACP sessions, idempotent retries and the raw kagent-shaped flow.

The peer is examples/acp_echo_agent.py, a real ACP v1 process that answers "what did I say before?"
from its own session history, "turns?" with the prompts the session saw, and "mcp servers?" with the
McpServer entries it was handed. The official mcp==2.3.0 client drives the gateway where named.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.conftest import TASKS_META, GatewayRun
from tests.agents.test_agents_acp import AGENT, _backend, _config, wait_stopped
from tests.agents.test_agents_curl import poll, start_task
from tests.agents.test_agents_sdk import Client, Tasks

BEFORE = "Before, you said: "


async def _checkpoint_flow(url: str) -> dict[str, Any]:
    async with Client(url) as client:
        first = await client.call_tool("invoke_agent", {"agent": AGENT, "message": "apple"})
        session = first.structured_content["session_id"]
        checkpoint = await client.call_tool("create_session_checkpoint", {
            "session_id": session, "expected_head_task_id": first.structured_content["task_id"],
            "request_id": "cp-1"})
        later = await client.call_tool("invoke_agent", {"session_id": session, "message": "banana"})
        made = checkpoint.structured_content["checkpoint"]["id"]
        forks = [await client.call_tool("fork_session", {"checkpoint_id": made, "request_id": f"f-{n}"})
                 for n in (1, 2)]
        seen = [await client.call_tool("invoke_agent", {"session_id": f.structured_content["session"]["id"],
                                                        "message": "what did I say before?"}) for f in forks]
        original = await client.call_tool("invoke_agent", {"session_id": session, "message": "what did I say before?"})
        return {"first": first, "later": later, "checkpoint": checkpoint, "forks": forks, "seen": seen,
                "original": original}


def test_a_fork_sees_the_history_through_the_checkpoint_and_not_after(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "all"))
    got = asyncio.run(_checkpoint_flow(run.url))
    assert not got["checkpoint"].is_error, got["checkpoint"]
    assert got["later"].structured_content["state"] == "TASK_STATE_COMPLETED"
    fork_ids = {f.structured_content["session"]["id"] for f in got["forks"]}
    assert len(fork_ids) == 2 and got["first"].structured_content["session_id"] not in fork_ids
    # each fork of the one checkpoint starts from "apple"; "banana" came after the checkpoint
    assert [s.structured_content["text"] for s in got["seen"]] == [BEFORE + "apple"] * 2
    assert got["original"].structured_content["text"] == BEFORE + "banana"


def _checkpoint(run: GatewayRun, message: str) -> tuple[str, str]:
    first = run.call("invoke_agent", {"agent": AGENT, "message": message})["structuredContent"]
    made = run.call("create_session_checkpoint", {"session_id": first["session_id"],
                                                  "expected_head_task_id": first["task_id"]})
    assert not made["isError"], made
    run.call("invoke_agent", {"session_id": first["session_id"], "message": "after the checkpoint"})
    return first["session_id"], made["structuredContent"]["checkpoint"]["id"]


def _fork(run: GatewayRun, checkpoint: str) -> str:
    forked = run.call("fork_session", {"checkpoint_id": checkpoint})
    assert not forked["isError"], forked
    session: str = forked["structuredContent"]["session"]["id"]
    return session


def _recall(run: GatewayRun, session: str) -> str:
    reply = run.call("invoke_agent", {"session_id": session, "message": "what did I say before?"})
    assert not reply["isError"], reply
    text: str = reply["structuredContent"]["text"]
    return text


def test_forks_survive_an_idle_respawn_and_a_gateway_restart(tmp_path: Path,
                                                             gateway_of: Callable[..., GatewayRun]) -> None:
    store = str(tmp_path / "kept.sqlite")
    config = _config(tmp_path, "all")
    config["agents"]["dev/echo"]["acp"]["idle"] = 1
    run = gateway_of(config, store)
    _, checkpoint = _checkpoint(run, "cherry")
    backend = _backend(run)
    assert backend.agent is not None
    wait_stopped(backend)
    after_idle = _fork(run, checkpoint)  # the process is started again; the snapshot is loaded and forked
    assert _recall(run, after_idle) == BEFORE + "cherry"
    run.close()
    again = gateway_of(config, store)
    assert _recall(again, after_idle) == BEFORE + "what did I say before?"  # session/load of the forked session
    after_restart = _fork(again, checkpoint)
    assert _recall(again, after_restart) == BEFORE + "cherry"


def test_an_agent_without_fork_says_why_it_cannot_checkpoint(tmp_path: Path,
                                                            gateway_of: Callable[..., GatewayRun]) -> None:
    config = _config(tmp_path, "all")
    config["agents"]["dev/echo"]["acp"]["env"]["ACP_ECHO_AGENT_NO_FORK"] = "1"
    run = gateway_of(config)
    first = run.call("invoke_agent", {"agent": AGENT, "message": "hi"})["structuredContent"]
    refused = run.call("create_session_checkpoint", {"session_id": first["session_id"],
                                                     "expected_head_task_id": first["task_id"]})
    assert refused["isError"]
    assert "does not advertise session/fork" in refused["content"][0]["text"]
    assert run.call("list_session_checkpoints", {"session_id": first["session_id"]})[
        "structuredContent"]["checkpoints"] == []


SERVERS = {"files": {"command": "/usr/bin/mcp-files", "args": ["--root", "/srv"], "env": {"LOG": "debug"}},
           "search": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Team": "blue"}}}
WIRE = [{"name": "files", "command": "/usr/bin/mcp-files", "args": ["--root", "/srv"],
         "env": [{"name": "LOG", "value": "debug"}]},
        {"type": "http", "name": "search", "url": "http://127.0.0.1:9/mcp",
         "headers": [{"name": "X-Team", "value": "blue"}]}]


def _handed(run: GatewayRun, headers: dict[str, str], arguments: dict[str, Any]) -> Any:
    reply = run.rpc("tools/call", {"name": "invoke_agent", "arguments": {**arguments, "message": "mcp servers?"}},
                    headers)["result"]
    assert not reply["isError"], reply
    text: str = reply["structuredContent"]["text"]
    assert text.startswith("MCP servers: ") and "alice-token" not in text
    return json.loads(text.removeprefix("MCP servers: ")), reply["structuredContent"]


def test_mcp_servers_are_handed_to_new_loaded_and_forked_sessions(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    config = _config(tmp_path, "all")
    config["agents"]["dev/echo"]["acp"].update(mcpServers=SERVERS)
    config["agents"]["dev/echo"]["acp"]["env"]["ACP_ECHO_AGENT_MCP_HTTP"] = "1"
    store = str(tmp_path / "kept.sqlite")
    run = gateway_of(config, store, tokens={"alice-token": "alice"})
    alice = {"Authorization": "Bearer alice-token"}
    servers, first = _handed(run, alice, {"agent": AGENT})
    assert servers == WIRE  # session/new, with no trace of the caller's bearer token
    made = run.rpc("tools/call", {"name": "create_session_checkpoint", "arguments": {
        "session_id": first["session_id"], "expected_head_task_id": first["task_id"]}}, alice)["result"]
    fork = run.rpc("tools/call", {"name": "fork_session", "arguments": {
        "checkpoint_id": made["structuredContent"]["checkpoint"]["id"]}}, alice)["result"]["structuredContent"]
    assert _handed(run, alice, {"session_id": fork["session"]["id"]})[0] == WIRE  # session/fork
    run.close()
    again = gateway_of(config, store, tokens={"alice-token": "alice"})
    assert _handed(again, alice, {"session_id": first["session_id"]})[0] == WIRE  # session/load


def test_an_http_server_the_agent_cannot_take_is_a_ready_error_naming_it(
        tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    config = _config(tmp_path, "all")
    config["agents"]["dev/echo"]["acp"].update(mcpServers=SERVERS)  # the agent does not advertise http
    run = gateway_of(config)
    refused = run.call("invoke_agent", {"agent": AGENT, "message": "hi"})
    assert refused["isError"]
    message = refused["content"][0]["text"]
    assert "'search'" in message and "mcpCapabilities.http" in message
    (entry,) = run.call("list_agents", {})["structuredContent"]["agents"]
    assert entry["ready"] is False and "'search'" in entry["reason"]


def test_a_retried_message_id_runs_the_turn_once(tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(tmp_path, "all"))
    first = run.call("invoke_agent", {"agent": AGENT, "message": "once", "message_id": "m-1"})["structuredContent"]
    retry = run.call("invoke_agent", {"agent": AGENT, "message": "once", "message_id": "m-1"})["structuredContent"]
    assert retry == first
    counted = run.call("invoke_agent", {"session_id": first["session_id"], "message": "turns?"})
    assert counted["structuredContent"]["text"] == "Turns so far: 1"  # the agent saw the prompt once
    assert [s["id"] for s in run.call("list_sessions", {})["structuredContent"]["sessions"]] == [first["session_id"]]


async def _task_answered(url: str) -> Any:
    async with Client(url, extensions=[Tasks("accept")]) as client:
        return await client.call_tool("invoke_agent", {"agent": AGENT, "message": "sdk says hi"})


def test_the_raw_kagent_shaped_flow_against_an_acp_agent(tmp_path: Path,
                                                         gateway_of: Callable[..., GatewayRun]) -> None:
    """Every request as kagent's curl examples send it: no version header, no session, capabilities in _meta."""
    run = gateway_of(_config(tmp_path, "ask"))
    tools = {t["name"] for t in run.rpc("tools/list", {})["result"]["tools"]}
    assert {"list_agents", "invoke_agent", "create_session_checkpoint", "fork_session"} <= tools
    assert run.call("list_agents", {})["structuredContent"]["agents"][0]["ready"] is True
    task = start_task(run, {"agent": AGENT, "message": "ship it", "message_id": "raw-1"})
    paused = poll(run, task, until=("input_required",))
    (key, request), = paused["inputRequests"].items()
    assert request["params"]["requestedSchema"]["properties"]["response"]["enum"][0] == "allow-once"
    run.rpc("tasks/update", {"taskId": task, "_meta": TASKS_META,
                             "inputResponses": {key: {"action": "accept", "content": {"response": "allow-always"}}}})
    done = poll(run, task, until=("completed", "failed"))["result"]["structuredContent"]
    assert done["text"] == "Echo: ship it\nFile: written." and done["state"] == "TASK_STATE_COMPLETED"
    again = run.call("invoke_agent", {"agent": AGENT, "message": "ship it", "message_id": "raw-1"}, _meta=TASKS_META)
    assert again["taskId"] == task and again["result"]["structuredContent"] == done  # the retry: the same turn
    recalled = run.call("invoke_agent", {"session_id": done["session_id"], "message": "what did I say before?"})
    assert recalled["structuredContent"]["text"] == BEFORE + "ship it"
    made = run.call("create_session_checkpoint", {"session_id": done["session_id"],
                                                  "expected_head_task_id": recalled["structuredContent"]["task_id"],
                                                  "request_id": "raw-cp"})["structuredContent"]["checkpoint"]
    fork = run.call("fork_session", {"checkpoint_id": made["id"], "request_id": "raw-fork"})["structuredContent"]
    assert _recall(run, fork["session"]["id"]) == BEFORE + "what did I say before?"
    # the official client, in the same gateway: a task it answers through tasks/update
    assert asyncio.run(_task_answered(run.url)).structured_content["text"] == "Echo: sdk says hi\nFile: written."


def _doc_section() -> list[Any]:
    from tests.agents.test_agents_docs import DOC
    from tests.test_docs import blocks

    section = DOC.read_text(encoding="utf-8").split("## ACP checkpoints, forks and MCP servers", 1)[1]
    return [json.loads(b.body) for b in blocks(section.split("\n## ", 1)[0]) if b.lang == "json"]


def test_the_documented_session_fork_is_what_the_acp_agent_takes(tmp_path: Path) -> None:
    from mcp_agent_kit.acp.client.client import AcpAgent
    from tests.agents.test_agents_acp import ECHO
    from tests.agents.test_agents_docs import matches

    request, reply, _, _ = _doc_section()
    with AcpAgent.spawn(sys.executable, [str(ECHO)],
                        env={"ACP_ECHO_AGENT_DIR": str(tmp_path / "acp")}) as agent:
        agent.initialize()
        assert agent.session_capability("fork")
        source = agent.new_session(str(tmp_path))
        params = {**request["params"], "sessionId": source.id, "cwd": str(tmp_path)}
        result = agent.call(request["method"], params)
    assert not matches(reply["result"], result), matches(reply["result"], result)
    assert result["sessionId"] != source.id


def test_the_documented_mcp_servers_are_the_wire(tmp_path: Path, gateway_of: Callable[..., GatewayRun]) -> None:
    from mcp_agent_kit.gateway.agents_config import parse_agents

    _, _, documented, wire = _doc_section()
    assert list(parse_agents(documented)["dev/echo"].mcp_servers) == wire
    config = _config(tmp_path, "all")
    config["agents"]["dev/echo"]["acp"]["mcpServers"] = documented["agents"]["dev/echo"]["acp"]["mcpServers"]
    config["agents"]["dev/echo"]["acp"]["env"]["ACP_ECHO_AGENT_MCP_HTTP"] = "1"
    run = gateway_of(config)
    said = run.call("invoke_agent", {"agent": AGENT, "message": "mcp servers?"})["structuredContent"]["text"]
    assert json.loads(said.removeprefix("MCP servers: ")) == wire
