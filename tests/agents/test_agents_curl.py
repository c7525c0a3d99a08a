"""Agents as tools over raw HTTP shaped exactly like kagent's curl examples, against the a2a-sdk agent."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.agents.conftest import TASKS_META, GatewayRun

AGENT = {"namespace": "kagent", "name": "my-first-agent"}


def _config(url: str, **extra: Any) -> dict[str, Any]:
    return {"agents": {"kagent/my-first-agent": {"a2a": url, **extra}}}


def poll(run: GatewayRun, task_id: str, *, until: tuple[str, ...], seconds: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        reply = run.rpc("tasks/get", {"taskId": task_id, "_meta": TASKS_META})
        task: dict[str, Any] = reply["result"]
        if task["status"] in until:
            return task
        assert time.monotonic() < deadline, f"task stayed {task['status']}: {task}"
        time.sleep(0.05)


def start_task(run: GatewayRun, arguments: dict[str, Any]) -> str:
    """invoke_agent as a task. Under load the agent may already be asking by the time the reply is written, so
    the first status is working or input_required; what the task goes on to do is checked by `poll`."""
    created = run.call("invoke_agent", arguments, _meta=TASKS_META)
    assert created["resultType"] == "task" and created["status"] in ("working", "input_required"), created
    assert created["pollIntervalMs"] == 1000 and created["ttlMs"] is None
    task_id: str = created["taskId"]
    assert task_id.startswith("v1.")
    return task_id


def test_list_invoke_continue_and_retry(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    listed = run.call("list_agents", {})
    entry = listed["structuredContent"]["agents"][0]
    assert entry["namespace"] == "kagent" and entry["name"] == "my-first-agent" and entry["ready"] is True
    assert entry["skills"][0]["id"] == "arithmetic" and (entry["running"], entry["queued"]) == (0, 0)
    first = run.call("invoke_agent", {"agent": AGENT, "message": "What is 2+2? Answer with just the number.",
                                      "message_id": "m-1"})
    body = first["structuredContent"]
    assert body["state"] == "TASK_STATE_COMPLETED" and body["text"] == "4" and not first["isError"]
    assert body["context_id"] == body["session_id"]
    assert first["content"][0]["text"] == __import__("json").dumps(body)  # structured result mirrored as text
    again = run.call("invoke_agent", {"agent": AGENT, "message": "What is 2+2? Answer with just the number.",
                                      "message_id": "m-1"})
    assert again["structuredContent"] == body  # the retry returns the same turn, nothing runs twice
    second = run.call("invoke_agent", {"session_id": body["session_id"], "message": "Multiply that by 10."})
    later = second["structuredContent"]
    assert later["text"] == "40" and later["session_id"] == body["session_id"] and later["task_id"] != body["task_id"]
    sessions = run.call("list_sessions", {})["structuredContent"]["sessions"]
    assert [s["id"] for s in sessions] == [body["session_id"]]


def test_service_errors_are_tool_errors(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    both = run.call("invoke_agent", {"agent": AGENT, "session_id": "x", "message": "hi"})
    assert both["isError"] and "exactly one of agent" in both["content"][0]["text"]
    unknown = run.call("invoke_agent", {"session_id": "nope", "message": "hi"})
    assert unknown["isError"] and "unknown session" in unknown["content"][0]["text"]
    nobody = run.call("invoke_agent", {"agent": {"namespace": "x", "name": "y"}, "message": "hi"})
    assert nobody["isError"] and "unknown agent x/y" in nobody["content"][0]["text"]
    assert "properties" in run.rpc("tools/list", {})["result"]["tools"][0]["inputSchema"]


def test_question_answered_by_tasks_update(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    task_id = start_task(run, {"agent": AGENT, "message": "Which database should we use?"})
    paused = poll(run, task_id, until=("input_required",))
    assert paused["statusMessage"] == "Which database should we use?"
    (key, request), = paused["inputRequests"].items()
    schema = request["params"]["requestedSchema"]
    assert request["method"] == "elicitation/create" and request["params"]["mode"] == "form"
    assert schema["properties"]["response"]["enum"] == ["PostgreSQL", "MySQL"] and schema["required"] == ["response"]
    wrong = run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {"nope": {"action": "accept"}},
                                     "_meta": TASKS_META})
    assert wrong["error"]["code"] == -32602 and key in wrong["error"]["message"]
    assert poll(run, task_id, until=("input_required",))["status"] == "input_required"
    empty = run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept", "content": {}}},
                                     "_meta": TASKS_META})
    assert empty["error"]["code"] == -32602
    ok = run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"response": "PostgreSQL"}}, "extra": {}}, "_meta": TASKS_META})
    assert ok["result"]["resultType"] == "complete"
    twice = run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"response": "MySQL"}}}, "_meta": TASKS_META})
    assert twice["result"]["resultType"] == "complete"  # answered already: not sent to the agent again
    done = poll(run, task_id, until=("completed", "failed"))
    assert done["status"] == "completed"
    assert done["statusMessage"] == "You chose PostgreSQL as the database to use."
    assert done["result"]["structuredContent"]["state"] == "TASK_STATE_COMPLETED"


def test_tool_approval_and_decline(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    for action, content, expected in (("accept", {"approve_1": True}, "Deployed to prod."),
                                      ("decline", {}, "Deployment skipped: the tool was not approved.")):
        task_id = start_task(run, {"agent": AGENT, "message": "deploy it"})
        (key, request), = poll(run, task_id, until=("input_required",))["inputRequests"].items()
        assert request["params"]["requestedSchema"]["properties"]["approve_1"]["type"] == "boolean"
        run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": action, "content": content}},
                                 "_meta": TASKS_META})
        assert poll(run, task_id, until=("completed",))["result"]["structuredContent"]["text"] == expected
    task_id = start_task(run, {"agent": AGENT, "message": "Which database?"})
    (key, _), = poll(run, task_id, until=("input_required",))["inputRequests"].items()
    run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "decline"}}, "_meta": TASKS_META})
    assert poll(run, task_id, until=("completed",))["statusMessage"] == "Understood: no database was chosen."


def test_cancel_and_the_capability_rules(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    task_id = start_task(run, {"agent": AGENT, "message": "wait for me"})
    working = poll(run, task_id, until=("working",))
    assert not working["statusMessage"].startswith("{")  # readable progress, never a raw record
    undeclared = run.rpc("tasks/get", {"taskId": task_id})
    assert undeclared["error"]["code"] == -32021
    assert undeclared["error"]["data"]["requiredCapabilities"] == TASKS_META[
        "io.modelcontextprotocol/clientCapabilities"]
    forged = run.rpc("tasks/get", {"taskId": task_id[:-2] + "AA", "_meta": TASKS_META})
    assert forged["error"]["code"] == -32602
    assert run.rpc("tasks/cancel", {"taskId": task_id, "_meta": TASKS_META})["result"]["resultType"] == "complete"
    assert poll(run, task_id, until=("cancelled",))["status"] == "cancelled"


def test_checkpoint_and_fork_sees_the_history(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    first = run.call("invoke_agent", {"agent": AGENT, "message": "What is 3+4?"})["structuredContent"]
    session, head = first["session_id"], first["task_id"]
    made = run.call("create_session_checkpoint", {"session_id": session, "expected_head_task_id": head,
                                                  "request_id": "cp-1"})["structuredContent"]["checkpoint"]
    assert made["head_task_id"] == head and made["state"] == "CHECKPOINT_STATE_READY" and made["history_sequence"] == 1
    same = run.call("create_session_checkpoint", {"session_id": session, "expected_head_task_id": head,
                                                  "request_id": "cp-1"})["structuredContent"]["checkpoint"]
    assert same["id"] == made["id"]
    run.call("invoke_agent", {"session_id": session, "message": "Multiply that by 100."})
    stale = run.call("create_session_checkpoint", {"session_id": session, "expected_head_task_id": head})
    assert stale["isError"] and "advanced" in stale["content"][0]["text"]
    listed = run.call("list_session_checkpoints", {"session_id": session})["structuredContent"]["checkpoints"]
    assert [c["id"] for c in listed] == [made["id"]]
    fork = run.call("fork_session", {"checkpoint_id": made["id"], "request_id": "f-1"})["structuredContent"]["session"]
    assert fork["id"] != session and fork["agent"] == "kagent/my-first-agent"
    assert run.call("fork_session", {"checkpoint_id": made["id"], "request_id": "f-1"})[
        "structuredContent"]["session"]["id"] == fork["id"]
    forked = run.call("invoke_agent", {"session_id": fork["id"], "message": "Multiply that by 10."})
    assert forked["structuredContent"]["text"] == "70"  # 3+4 through the checkpoint, not the 700 after it


def test_a_blocking_question_asks_for_the_tasks_extension(agent_url: str,
                                                          gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    reply = run.rpc("tools/call", {"name": "invoke_agent", "arguments": {"agent": AGENT, "message": "database?"}})
    error = reply["error"]
    assert error["code"] == -32021 and "Which database should we use?" in error["message"]
    task_id = error["data"]["taskId"]
    (key, _), = poll(run, task_id, until=("input_required",))["inputRequests"].items()
    run.rpc("tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"response": "MySQL"}}}, "_meta": TASKS_META})
    assert "MySQL" in poll(run, task_id, until=("completed",))["statusMessage"]


def test_turns_beyond_max_concurrent_wait_in_order(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url, max_concurrent=1))
    first = start_task(run, {"agent": AGENT, "message": "wait"})
    poll(run, first, until=("working",))
    second = start_task(run, {"agent": AGENT, "message": "What is 1+1?"})
    assert poll(run, second, until=("working",))["statusMessage"] == "queued (position 1)"
    counts = run.call("list_agents", {})["structuredContent"]["agents"][0]
    assert (counts["running"], counts["queued"]) == (1, 1)
    run.rpc("tasks/cancel", {"taskId": first, "_meta": TASKS_META})
    assert poll(run, second, until=("completed",))["result"]["structuredContent"]["text"] == "2"


def test_a_down_agent_is_not_ready_and_the_rest_keep_working(agent_url: str,
                                                             gateway_of: Callable[..., GatewayRun]) -> None:
    from tests.net import free_port

    config = {"agents": {"kagent/my-first-agent": {"a2a": agent_url},
                         "dev/down": {"a2a": f"http://127.0.0.1:{free_port()}"},
                         "dev/claude": {"acp": {"command": "claude-agent-acp", "cwd": "/srv/repo",
                                                "approve": "reads"}}},
              "mcp": True}
    run = gateway_of(config)
    agents = {a["name"]: a for a in run.call("list_agents", {})["structuredContent"]["agents"]}
    assert agents["down"]["ready"] is False and "unreachable" in agents["down"]["reason"]
    assert agents["claude"]["ready"] is False and "not found" in agents["claude"]["reason"]
    assert agents["my-first-agent"]["ready"] is True
    only_dev = run.call("list_agents", {"namespace": "dev", "page_size": 1})["structuredContent"]
    assert [a["name"] for a in only_dev["agents"]] == ["claude"] and only_dev["next_page_token"]
    rest = run.call("list_agents", {"namespace": "dev", "page_token": only_dev["next_page_token"]})
    assert [a["name"] for a in rest["structuredContent"]["agents"]] == ["down"]
    failed = run.call("invoke_agent", {"agent": {"namespace": "dev", "name": "down"}, "message": "hi"})
    assert failed["isError"] and failed["structuredContent"]["state"] == "TASK_STATE_FAILED"
    assert run.call("invoke_agent", {"agent": AGENT, "message": "2*21"})["structuredContent"]["text"] == "42"
    metrics = run.call("calculate_metrics", {"values": [1, 2, 3], "metric_type": "mean"})
    assert metrics["structuredContent"]["value"] == 2.0


def test_a_restart_keeps_sessions_and_fails_the_running_turn(agent_url: str, tmp_path: Any,
                                                             gateway_of: Callable[..., GatewayRun]) -> None:
    store = str(tmp_path / "durable.sqlite")
    run = gateway_of(_config(agent_url), store)
    done = run.call("invoke_agent", {"agent": AGENT, "message": "What is 5+5?"})["structuredContent"]
    running = start_task(run, {"session_id": done["session_id"], "message": "wait"})
    poll(run, running, until=("working",))
    asking = start_task(run, {"agent": AGENT, "message": "Which database?"})
    (key, _), = poll(run, asking, until=("input_required",))["inputRequests"].items()
    run.close()  # the gateway dies with one turn still working and one waiting for an answer
    again = gateway_of(_config(agent_url), store)
    assert again.rpc("tasks/get", {"taskId": asking, "_meta": TASKS_META})["result"]["status"] == "input_required"
    again.rpc("tasks/update", {"taskId": asking, "inputResponses": {
        key: {"action": "accept", "content": {"response": "MySQL"}}}, "_meta": TASKS_META})
    assert "MySQL" in poll(again, asking, until=("completed",))["statusMessage"]  # the agent still held the question
    failed = again.rpc("tasks/get", {"taskId": running, "_meta": TASKS_META})["result"]
    assert failed["status"] == "failed" and "restarted" in failed["statusMessage"]
    sessions = again.call("list_sessions", {})["structuredContent"]["sessions"]
    assert done["session_id"] in [s["id"] for s in sessions] and len(sessions) == 2
    later = again.call("invoke_agent", {"session_id": done["session_id"], "message": "Multiply that by 3."})
    assert later["structuredContent"]["text"] == "30"  # the agent kept the context; the gateway kept the session


def test_sessions_and_tasks_belong_to_their_principal(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url), tokens={"alice-token": "alice", "bob-token": "bob"})
    alice, bob = {"Authorization": "Bearer alice-token"}, {"Authorization": "Bearer bob-token"}

    def call(headers: dict[str, str], name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
        result: dict[str, Any] = run.rpc("tools/call", {"name": name, "arguments": arguments, **kw}, headers)["result"]
        return result

    mine = call(alice, "invoke_agent", {"agent": AGENT, "message": "1+2"})["structuredContent"]
    assert call(bob, "list_sessions", {})["structuredContent"]["sessions"] == []
    assert call(bob, "invoke_agent", {"session_id": mine["session_id"], "message": "Multiply that by 2."})["isError"]
    task_id = call(alice, "invoke_agent", {"session_id": mine["session_id"], "message": "wait"},
                   _meta=TASKS_META)["taskId"]
    stolen = run.rpc("tasks/cancel", {"taskId": task_id, "_meta": TASKS_META}, bob)
    assert stolen["error"]["code"] == -32602
    cancelled = run.rpc("tasks/cancel", {"taskId": task_id, "_meta": TASKS_META}, alice)
    assert cancelled["result"]["resultType"] == "complete", cancelled


def test_a_trusted_proxy_header_names_the_caller(agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url), principal_header="X-Forwarded-User")
    status, _, _ = run.http.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "list_sessions", "arguments": {}}})
    assert status == 401
    carol = {"X-Forwarded-User": "carol"}
    run.rpc("tools/call", {"name": "invoke_agent", "arguments": {"agent": AGENT, "message": "1+1"}}, carol)
    seen = run.rpc("tools/call", {"name": "list_sessions", "arguments": {}}, {"X-Forwarded-User": "dave"})
    assert seen["result"]["structuredContent"]["sessions"] == []
    own = run.rpc("tools/call", {"name": "list_sessions", "arguments": {}}, carol)
    assert len(own["result"]["structuredContent"]["sessions"]) == 1


def test_a_caller_that_declared_elicitation_answers_in_an_input_required_round(
        agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url))
    meta = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    params = {"name": "invoke_agent", "arguments": {"agent": AGENT, "message": "Which database?"}, "_meta": meta}
    first = run.rpc("tools/call", params)["result"]
    assert first["resultType"] == "input_required"
    (key, request), = first["inputRequests"].items()
    assert request["params"]["requestedSchema"]["properties"]["response"]["enum"] == ["PostgreSQL", "MySQL"]
    retry = {**params, "requestState": first["requestState"],
             "inputResponses": {key: {"action": "accept", "content": {"response": "MySQL"}}}}
    done = run.rpc("tools/call", retry)["result"]
    assert done["structuredContent"]["text"] == "You chose MySQL as the database to use."


def test_a_queued_turn_cancelled_before_it_starts_frees_nothing_it_did_not_hold(
        agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    run = gateway_of(_config(agent_url, max_concurrent=1))
    first = start_task(run, {"agent": AGENT, "message": "wait"})
    poll(run, first, until=("working",))
    queued = [start_task(run, {"agent": AGENT, "message": f"What is {n}+{n}?"}) for n in (1, 2)]
    assert poll(run, queued[1], until=("working",))["statusMessage"] == "queued (position 2)"
    run.rpc("tasks/cancel", {"taskId": queued[0], "_meta": TASKS_META})
    assert poll(run, queued[0], until=("cancelled",))["statusMessage"] == "cancelled before it started"
    assert poll(run, queued[1], until=("working",))["statusMessage"] == "queued (position 1)"
    counts = run.call("list_agents", {})["structuredContent"]["agents"][0]
    assert (counts["running"], counts["queued"]) == (1, 1)  # the first still runs; one still waits
    run.rpc("tasks/cancel", {"taskId": first, "_meta": TASKS_META})
    assert poll(run, queued[1], until=("completed",))["result"]["structuredContent"]["text"] == "4"
    counts = run.call("list_agents", {})["structuredContent"]["agents"][0]
    assert (counts["running"], counts["queued"]) == (0, 0)


def test_an_agent_that_goes_down_fails_its_turn_and_shows_not_ready(gateway_of: Callable[..., GatewayRun]) -> None:
    import subprocess
    import sys

    from tests.agents.conftest import FIXTURE_AGENT
    from tests.net import free_port, wait_listening

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(FIXTURE_AGENT), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, proc)
        run = gateway_of(_config(f"http://127.0.0.1:{port}"))
        session = run.call("invoke_agent", {"agent": AGENT, "message": "1+1"})["structuredContent"]["session_id"]
        task_id = start_task(run, {"session_id": session, "message": "wait"})
        poll(run, task_id, until=("working",))
    finally:
        proc.kill()
        proc.wait(10)
    failed = poll(run, task_id, until=("failed",))
    assert "my-first-agent" in failed["statusMessage"] and failed["result"]["isError"]
    again = run.call("invoke_agent", {"session_id": session, "message": "Multiply that by 2."})
    assert again["isError"] and "unreachable" in again["structuredContent"]["text"]
    agent = run.call("list_agents", {})["structuredContent"]["agents"][0]
    assert agent["ready"] is False and "unreachable" in agent["reason"]


def test_an_agent_that_answers_garbage_fails_the_turn_and_the_gateway_lives_on(
        agent_url: str, gateway_of: Callable[..., GatewayRun]) -> None:
    import http.server
    import json
    import threading

    class Garbage(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _send(self, kind: str, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            host, port = self.server.server_address[:2]
            card = {"name": "g", "supportedInterfaces": [
                {"url": f"http://{host}:{port}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}
            self._send("application/json", json.dumps(card).encode())

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._send("text/event-stream", b'data: {"result": {"statusUpdate": "not an object"}}\n\ndata: {nope\n\n')

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        run = gateway_of({"agents": {"kagent/my-first-agent": {"a2a": agent_url},
                                     "bad/garbage": {"a2a": f"http://127.0.0.1:{server.server_address[1]}"}}})
        bad = run.call("invoke_agent", {"agent": {"namespace": "bad", "name": "garbage"}, "message": "hi"})
        assert bad["isError"] and "not JSON" in bad["structuredContent"]["text"]
        assert run.call("invoke_agent", {"agent": AGENT, "message": "2+3"})["structuredContent"]["text"] == "5"
    finally:
        server.shutdown()
        server.server_close()
