"""Client features against our own server over stdio: MRTR rounds with every input kind,
the round limit, the tasks extension (poll, input_required via tasks/update, cancel), progress,
pagination, completion — and the gateway served over our Streamable HTTP transport."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.client import Client, ClientError
from mcp_agent_kit.gateway import Gateway, parse_config
from mcp_agent_kit.wire.jsonrpc import RpcError

PY = sys.executable

PEER = textwrap.dedent(
    """
    import time
    from mcp_agent_kit import Server, Context

    server = Server("features", page_size=2)

    @server.tool
    def ask_all(ctx: Context) -> str:
        name = ctx.elicit("name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        said = ctx.sample("capital of France?")
        roots = ctx.list_roots()
        return f"{name['content']['name']}|{said['content']['text']}|{roots[0]['uri']}"

    @server.tool
    def nag(ctx: Context, rounds: int) -> str:
        for i in range(rounds):
            ctx.elicit(f"round {i}?", key=f"r{i}")
        return "done"

    @server.tool(long_running=True)
    def job(ctx: Context, n: int) -> str:
        for step in range(3):
            ctx.progress(step + 1, 3)
        answer = ctx.elicit("go on?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"job {n} {answer['action']}"

    @server.tool(long_running=True)
    def forever(ctx: Context) -> str:
        ctx.elicit("never answered in time?")
        time.sleep(30)
        return "late"

    for i in range(5):
        server.add_tool(lambda: "x", name=f"filler_{i}")

    @server.prompt
    def greet(who: str) -> str:
        return f"hello {who}"

    @server.completion(prompt="greet")
    def complete_who(argument, value, context):
        return [w for w in ["alice", "albert", "bob"] if w.startswith(value)]

    if __name__ == "__main__":
        server.run()
    """
)


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("features") / "features_peer.py"
    path.write_text(PEER)
    return str(path)


def _answers() -> dict[str, Any]:
    return {
        "elicitation": lambda p: {"action": "accept", "content": {"name": "ada", "ok": True}},
        "sampling": lambda p: {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"},
        "roots": lambda p: {"roots": [{"uri": "file:///srv/project", "name": "w"}]},
    }


def test_mrtr_rounds_answer_every_input_kind(peer: str) -> None:
    with Client.stdio(PY, [peer], **_answers()) as client:
        result = client.call_tool("ask_all", {})
        assert result["content"][0]["text"] == "ada|Paris|file:///srv/project"


def test_round_limit(peer: str) -> None:
    with Client.stdio(PY, [peer], max_rounds=2, **_answers()) as client:
        assert client.call_tool("nag", {"rounds": 2})["content"][0]["text"] == "done"
        with pytest.raises(ClientError, match="input_required rounds"):
            client.call_tool("nag", {"rounds": 3})


def test_missing_callback_declares_no_capability(peer: str) -> None:
    with Client.stdio(PY, [peer]) as client, pytest.raises(RpcError) as info:
        client.call_tool("ask_all", {})  # nothing declared, so the server may not ask
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}


def test_tasks_poll_answer_and_finish(peer: str) -> None:
    asked: list[dict[str, Any]] = []
    answers = _answers()
    elicit = answers["elicitation"]
    answers["elicitation"] = lambda p: (asked.append(p), elicit(p))[1]
    with Client.stdio(PY, [peer], tasks=True, **answers) as client:
        assert "io.modelcontextprotocol/tasks" in client.verdict.capabilities.get("extensions", {})  # type: ignore[union-attr]
        result = client.call_tool("job", {"n": 7})
        assert result["content"][0]["text"] == "job 7 accept"
        assert [a["message"] for a in asked] == ["go on?"]


def test_task_cancel(peer: str) -> None:
    with Client.stdio(PY, [peer], tasks=True, **_answers()) as client:
        task = client.request("tools/call", {"name": "forever", "arguments": {}})
        assert task["resultType"] == "task"
        client.cancel_task(task["taskId"])
        for _ in range(100):  # cancellation is cooperative: poll until the task is terminal
            status = client.request("tasks/get", {"taskId": task["taskId"]})
            if status["status"] in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.05)
        assert status["status"] == "cancelled"


def test_pagination_and_completion(peer: str) -> None:
    with Client.stdio(PY, [peer]) as client:
        names = [tool["name"] for tool in client.list_tools()]
        assert len(names) == 9 and len(set(names)) == 9  # five pages of two, followed to the end
        completion = client.complete({"type": "ref/prompt", "name": "greet"}, {"name": "who", "value": "al"})
        assert completion["values"] == ["alice", "albert"]
        prompt = client.get_prompt("greet", {"who": "bo"})
        assert prompt["messages"][0]["content"]["text"] == "hello bo"


def test_gateway_over_our_http_transport(peer: str, tmp_path: Path) -> None:
    from mcp_agent_kit.transports.http import make_server

    config = parse_config({"mcpServers": {"f": {"command": PY, "args": [peer]}, "g": {"command": PY, "args": [peer]}}})
    gateway = Gateway(config)
    gateway.start()
    httpd = make_server(gateway.server.dispatcher, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        with Client.http(f"http://127.0.0.1:{httpd.server_address[1]}/mcp") as client:
            names = {tool["name"] for tool in client.list_tools()}
            assert {"f.nag", "g.nag", "f.filler_0", "g.filler_0"} <= names
            assert client.call_tool("f.nag", {"rounds": 0})["content"][0]["text"] == "done"
            assert [p["name"] for p in client.list_prompts()] == ["f.greet", "g.greet"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        gateway.close()
