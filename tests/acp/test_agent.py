"""acp.agent against a raw client on os pipes: capabilities from registrations, bad input, handler crashes,
cancel (also of a pending permission question), client-side methods gated on the client's capabilities,
terminals released, stdout kept for protocol JSON. Every read is bounded."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.agent import Agent, updates
from mcp_agent_kit.acp.agent.session import AgentSession, JsonSessionStore, MemorySessionStore, Message
from mcp_agent_kit.acp.agent.turn import Turn

WAIT = 10.0
ROOT = Path(__file__).resolve().parents[2]


class RawClient:
    """The client end: raw lines to the agent, every line back parsed into a queue."""

    def __init__(self, agent: Agent) -> None:
        to_agent_r, to_agent_w = os.pipe()
        from_agent_r, from_agent_w = os.pipe()
        self.to_agent = os.fdopen(to_agent_w, "wb", buffering=0)
        self.lines: queue.Queue[Any] = queue.Queue()
        self.agent = agent
        agent.connect(os.fdopen(to_agent_r, "rb"), os.fdopen(from_agent_w, "wb"))
        threading.Thread(target=self._pump, args=(os.fdopen(from_agent_r, "rb"),), daemon=True).start()
        self.next_id = 100

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self.lines.put(json.loads(line))

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        self.to_agent.write(data)

    def receive(self) -> Any:
        return self.lines.get(timeout=WAIT)

    def request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def answer_of(self, request_id: int, seen: list[Any] | None = None) -> Any:
        """Read until the answer to our request `request_id`; everything before it goes to `seen`."""
        while True:
            message = self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message
            if seen is not None:
                seen.append(message)

    def call(self, method: str, params: Any = None, seen: list[Any] | None = None) -> Any:
        return self.answer_of(self.request(method, params), seen)

    def start(self, capabilities: dict[str, Any] | None = None) -> str:
        assert "result" in self.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
        result = self.call("session/new", {"cwd": "/project", "mcpServers": []})["result"]
        return str(result["sessionId"])

    def close(self) -> None:
        self.to_agent.close()


@pytest.fixture
def make() -> Iterator[Any]:
    clients: list[RawClient] = []

    def build(agent: Agent) -> RawClient:
        clients.append(RawClient(agent))
        return clients[-1]

    yield build
    for client in clients:
        client.close()


def echo_agent(**options: Any) -> Agent:
    agent = Agent("t", "1", **options)

    @agent.prompt
    def prompt(turn: Turn) -> None:
        turn.say(turn.text)

    return agent


def test_capabilities_follow_what_is_registered(make: Any) -> None:
    bare = make(echo_agent())
    init = bare.call("initialize", {"protocolVersion": 1})["result"]
    assert init == {"protocolVersion": 1, "agentCapabilities": {"loadSession": False, "promptCapabilities": {}},
                    "agentInfo": {"name": "t", "version": "1"}, "authMethods": []}
    for method in ("session/load", "session/list", "session/close", "session/set_config_option"):
        assert bare.call(method, {"sessionId": "x"})["error"]["code"] == -32601

    full = echo_agent(prompt_capabilities={"image": True})
    full.load_session()
    full.list_sessions()
    full.close_session()
    full.config_option("model", "Model", [("a", "A"), ("b", "B")], default="b", category="model")
    client = make(full)
    caps = client.call("initialize", {"protocolVersion": 1})["result"]["agentCapabilities"]
    assert caps == {"loadSession": True, "promptCapabilities": {"image": True},
                    "sessionCapabilities": {"list": {}, "close": {}}}
    new = client.call("session/new", {"cwd": "/w", "mcpServers": []})["result"]
    assert new["configOptions"] == [{"id": "model", "name": "Model", "type": "select", "currentValue": "b",
                                     "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}],
                                     "category": "model"}]
    changed = client.call("session/set_config_option", {"sessionId": new["sessionId"], "configId": "model",
                                                        "value": "a"})["result"]
    assert changed["configOptions"][0]["currentValue"] == "a"
    wrong = client.call("session/set_config_option", {"sessionId": new["sessionId"], "configId": "model",
                                                      "value": "zz"})
    assert wrong["error"]["code"] == -32602


def test_bad_input_gets_the_right_error_and_the_agent_keeps_serving(make: Any) -> None:
    client = make(echo_agent(max_line=4096))
    assert client.call("session/new", {"cwd": "/w", "mcpServers": []})["error"]["code"] == -32600  # before init
    assert client.call("initialize", {"protocolVersion": "1"})["error"]["code"] == -32602
    client.send_raw(b"this is not json\n")
    not_json = client.receive()
    assert not_json["id"] is None and not_json["error"]["code"] == -32700
    client.send_raw(b"[1, 2]\n")
    assert client.receive()["error"]["code"] == -32600
    client.send_raw(b'{"jsonrpc": "2.0", "id": 5, "method": "session/new", "params": [1]}\n')
    assert client.receive() == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32600, "message": 'Invalid Request: "params" must be an object'}}
    client.send_raw(b'{"jsonrpc": "2.0", "id": 6, "method": "' + b"x" * 8000 + b'"}\n')
    too_long = client.receive()
    assert too_long["id"] is None and too_long["error"]["code"] == -32600 and "limit" in too_long["error"]["message"]
    client.send({"jsonrpc": "2.0", "method": "unknown/notification"})  # ignored, never answered
    assert client.call("no/such_method")["error"]["code"] == -32601
    assert "result" in client.call("initialize", {"protocolVersion": 1})
    bad_params = [("session/new", {"cwd": "relative", "mcpServers": []}),
                  ("session/new", {"cwd": "/w", "mcpServers": {}}),
                  ("session/new", {"cwd": 7}),
                  ("session/prompt", {"sessionId": 3, "prompt": []})]
    for method, params in bad_params:
        assert client.call(method, params)["error"]["code"] == -32602, (method, params)
    sid = client.call("session/new", {"cwd": "/w", "mcpServers": []})["result"]["sessionId"]
    for prompt in ("hi", [{"type": "nope"}], [{"type": "image", "data": "", "mimeType": "image/png"}]):
        assert client.call("session/prompt", {"sessionId": sid, "prompt": prompt})["error"]["code"] == -32602
    unknown = client.call("session/prompt", {"sessionId": "nope", "prompt": []})
    assert unknown["error"]["code"] == -32002
    seen: list[Any] = []
    ok = client.call("session/prompt", {"sessionId": sid, "prompt": [updates.text("still here")]}, seen)
    assert ok["result"] == {"stopReason": "end_turn"}
    assert seen[-1]["params"]["update"]["content"] == {"type": "text", "text": "still here"}


def test_a_parse_error_carries_id_null(make: Any) -> None:
    client = make(echo_agent())
    client.send_raw(b"{oops\n")
    reply = client.receive()
    assert reply["id"] is None and reply["error"]["code"] == -32700 and reply["error"]["message"].startswith("Parse")


def test_a_crashing_handler_becomes_an_error_for_that_request_only(make: Any) -> None:
    agent = Agent("t", "1")
    calls: list[str] = []

    @agent.prompt
    def prompt(turn: Turn) -> str | None:
        calls.append(turn.text)
        if turn.text == "crash":
            raise ValueError("no good")
        return "refusal" if turn.text == "refuse" else ("bogus" if turn.text == "bogus" else None)

    client = make(agent)
    sid = client.start()

    def ask(text: str) -> Any:
        return client.call("session/prompt", {"sessionId": sid, "prompt": [updates.text(text)]})

    crashed = ask("crash")
    assert crashed["error"]["code"] == -32603 and "ValueError: no good" in crashed["error"]["message"]
    assert ask("refuse")["result"] == {"stopReason": "refusal"}
    assert ask("bogus")["error"]["code"] == -32603
    assert ask("fine")["result"] == {"stopReason": "end_turn"}  # the session is not stuck
    assert calls == ["crash", "refuse", "bogus", "fine"]


def permission_agent(seen: list[Any]) -> Agent:
    agent = Agent("t", "1", permission_timeout=30.0)

    @agent.prompt
    def prompt(turn: Turn) -> None:
        call = turn.tool_call("Delete everything", kind="delete")
        seen.append(turn.ask_permission(call))
        if turn.text == "wait":
            turn.cancelled.wait(WAIT)

    return agent


def test_cancel_resolves_a_pending_permission_and_ends_the_prompt_cancelled(make: Any) -> None:
    answers: list[Any] = []
    client = make(permission_agent(answers))
    sid = client.start()
    prompt_id = client.request("session/prompt", {"sessionId": sid, "prompt": [updates.text("go")]})
    assert client.receive()["params"]["update"]["sessionUpdate"] == "tool_call"
    question = client.receive()
    assert question["method"] == "session/request_permission"
    assert [o["kind"] for o in question["params"]["options"]] == ["allow_once", "reject_once"]
    assert question["params"]["toolCall"] == {"toolCallId": "call_1", "title": "Delete everything",
                                              "kind": "delete", "status": "pending"}
    client.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})  # never answered
    withdrawn = client.receive()
    assert withdrawn == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": question["id"]}}
    assert client.answer_of(prompt_id)["result"] == {"stopReason": "cancelled"}
    assert answers[0].cancelled and not answers[0].allowed
    client.send({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {"outcome": "cancelled"}}})  # late
    prompt_id = client.request("session/prompt", {"sessionId": sid, "prompt": [updates.text("go")]})
    client.receive()
    question = client.receive()
    client.send({"jsonrpc": "2.0", "id": question["id"],
                 "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
    assert client.answer_of(prompt_id)["result"] == {"stopReason": "end_turn"}
    assert answers[1].allowed and answers[1].kind == "allow_once"


class GatedStore(MemorySessionStore):
    """Looking a session up waits for the gate: the test opens it once the cancel behind the prompt
    was read, so the turn starts only after that."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def get(self, session_id: str) -> AgentSession | None:
        assert self.gate.wait(WAIT), "the test never opened the gate"
        return super().get(session_id)


def test_a_cancel_right_behind_the_prompt_reaches_it(make: Any) -> None:
    store = GatedStore()
    agent = Agent("t", "1", store=store)
    saw: list[bool] = []

    @agent.prompt
    def prompt(turn: Turn) -> str:
        saw.append(turn.cancelled.wait(WAIT))
        return "end_turn"  # whatever the handler says, a cancelled turn answers cancelled

    client = make(agent)
    sid = client.start()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                       "params": {"sessionId": sid, "prompt": []}})
    cancel = json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    # One write: the cancel is read right after the prompt, then a line that is not JSON, answered on
    # the reader thread in order: its answer means the cancel was handled before the turn started.
    client.send_raw(f"{body}\n{cancel}\nnot json\n".encode())
    assert client.receive()["error"]["code"] == -32700
    store.gate.set()
    assert client.answer_of(1)["result"] == {"stopReason": "cancelled"}
    assert saw == [True]


def test_client_methods_are_gated_on_the_client_capabilities(make: Any) -> None:
    agent = Agent("t", "1")

    @agent.prompt
    def prompt(turn: Turn) -> None:
        turn.write_file("/project/a.txt", "x")

    client = make(agent)
    sid = client.start({"fs": {"readTextFile": True}})
    reply = client.call("session/prompt", {"sessionId": sid, "prompt": []})
    assert reply["error"]["code"] == -32603 and "fs.writeTextFile" in reply["error"]["message"]
    assert client.lines.empty()  # nothing was sent to the client


def test_fs_and_terminals_go_through_the_client_and_terminals_are_released(make: Any) -> None:
    agent = Agent("t", "1")

    @agent.prompt
    def prompt(turn: Turn) -> None:
        text = turn.read_file("/project/in.txt", line=2, limit=1)
        turn.write_file("/project/out.txt", text.upper())
        terminal = turn.terminal("ls", ["-l"], cwd="/project", env={"A": "1"}, output_byte_limit=100)
        turn.say(terminal.output()["output"])  # never released by the handler: the framework does it

    client = make(agent)
    sid = client.start({"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True})
    prompt_id = client.request("session/prompt", {"sessionId": sid, "prompt": []})
    answers = {"fs/read_text_file": {"content": "abc"}, "fs/write_text_file": None,
               "terminal/create": {"terminalId": "t1"}, "terminal/output": {"output": "out", "truncated": False},
               "terminal/release": None}
    asked: list[tuple[str, Any]] = []
    while len(asked) < len(answers):
        message = client.receive()
        if message.get("method") == "session/update":
            continue
        asked.append((message["method"], message["params"]))
        client.send({"jsonrpc": "2.0", "id": message["id"], "result": answers[message["method"]]})
    assert client.answer_of(prompt_id)["result"] == {"stopReason": "end_turn"}
    assert asked == [
        ("fs/read_text_file", {"sessionId": sid, "path": "/project/in.txt", "line": 2, "limit": 1}),
        ("fs/write_text_file", {"sessionId": sid, "path": "/project/out.txt", "content": "ABC"}),
        ("terminal/create", {"sessionId": sid, "command": "ls", "args": ["-l"], "env": [{"name": "A", "value": "1"}],
                             "cwd": "/project", "outputByteLimit": 100}),
        ("terminal/output", {"sessionId": sid, "terminalId": "t1"}),
        ("terminal/release", {"sessionId": sid, "terminalId": "t1"}),
    ]


def test_load_replays_the_history_and_list_pages(make: Any, tmp_path: Path) -> None:
    store = JsonSessionStore(tmp_path)
    for n in range(60):
        store.put(AgentSession(f"s{n:02d}", "/w", updated_at=f"2026-01-01T00:00:{n:02d}.000Z"))
    store.put(AgentSession("s99", "/other", history=[Message("user", [updates.text("hi")], "m1"),
                                                 Message("agent", [updates.text("a"), updates.text("b")], "m2")]))
    agent = echo_agent(store=JsonSessionStore(tmp_path))  # a fresh store reading the same files
    agent.load_session()
    agent.list_sessions()
    agent.close_session()
    client = make(agent)
    client.call("initialize", {"protocolVersion": 1})
    first = client.call("session/list", {"cwd": "/w"})["result"]
    assert len(first["sessions"]) == 50 and first["sessions"][0]["sessionId"] == "s59"
    rest = client.call("session/list", {"cwd": "/w", "cursor": first["nextCursor"]})["result"]
    assert [s["sessionId"] for s in rest["sessions"]] == [f"s{n:02d}" for n in range(9, -1, -1)]
    assert "nextCursor" not in rest
    assert client.call("session/list", {"cursor": "x"})["error"]["code"] == -32602
    not_open = client.call("session/prompt", {"sessionId": "s99", "prompt": []})["error"]
    assert not_open["code"] == -32002 and "session/load first" in not_open["message"]
    seen: list[Any] = []
    loaded = client.call("session/load", {"sessionId": "s99", "cwd": "/other", "mcpServers": []}, seen)
    assert loaded == {"jsonrpc": "2.0", "id": client.next_id, "result": {}}
    assert [m["params"]["update"] for m in seen] == [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}, "messageId": "m1"},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}, "messageId": "m2"},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b"}, "messageId": "m2"}]
    assert client.call("session/prompt", {"sessionId": "s99", "prompt": []})["result"] == {"stopReason": "end_turn"}
    assert client.call("session/close", {"sessionId": "s99"})["result"] == {}
    assert client.call("session/prompt", {"sessionId": "s99", "prompt": []})["error"]["code"] == -32002
    for bad in ("../etc/passwd", "nope"):
        assert client.call("session/load", {"sessionId": bad, "cwd": "/w", "mcpServers": []})["error"]["code"] == -32002


def test_stdout_carries_only_protocol_json(tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "from mcp_agent_kit.acp.agent import Agent\n"
        "agent = Agent('noisy', '1')\n"
        "@agent.prompt\n"
        "def prompt(turn):\n"
        "    print('a stray print')\n"
        "    turn.say('ok')\n"
        "agent.run()\n", encoding="utf-8")
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
             {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as process:
        assert process.stdin is not None and process.stdout is not None
        for line in lines:
            process.stdin.write(json.dumps(line).encode() + b"\n")
        process.stdin.flush()
        sid = None
        while sid is None:
            reply = json.loads(process.stdout.readline())
            sid = reply.get("result", {}).get("sessionId") if reply.get("id") == 1 else None
        prompt = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": sid, "prompt": []}}
        out, err = process.communicate(json.dumps(prompt).encode() + b"\nnot json\n", timeout=WAIT)
    replies = [json.loads(line) for line in out.splitlines()]  # every line is JSON
    assert {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}} in replies
    assert b"a stray print" in err and process.returncode == 0


def test_requests_read_before_the_client_closed_its_end_are_still_answered() -> None:
    store = GatedStore()
    agent = echo_agent(store=store)  # the prompt's turn starts once the agent has read the end of input
    to_agent_r, to_agent_w = os.pipe()
    from_agent_r, from_agent_w = os.pipe()
    writer = os.fdopen(from_agent_w, "wb")
    codes: list[int] = []

    def serve() -> None:
        codes.append(agent.serve(os.fdopen(to_agent_r, "rb"), writer, shutdown_timeout=WAIT))
        writer.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    with os.fdopen(to_agent_w, "wb") as to_agent, os.fdopen(from_agent_r, "rb") as from_agent:
        to_agent.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
                       b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}\n')
        to_agent.flush()
        from_agent.readline()
        sid = json.loads(from_agent.readline())["result"]["sessionId"]
        to_agent.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                                   "params": {"sessionId": sid, "prompt": [updates.text("bye")]}}).encode() + b"\n")
        to_agent.close()  # end of input right behind the prompt
        assert agent.connection is not None and agent.connection.join(WAIT)  # the agent read it
        store.gate.set()
        server.join(WAIT)
        replies = [json.loads(line) for line in from_agent.read().splitlines()]
    assert codes == [0]
    assert replies[-1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}


def test_extension_methods_are_rows_of_the_table(make: Any) -> None:
    agent = echo_agent()

    @agent.method("_echo/ping")
    def ping(params: dict[str, Any]) -> dict[str, Any]:
        return {"pong": params.get("n")}

    @agent.method("_echo/set")
    def not_json(params: dict[str, Any]) -> Any:
        return {1, 2}

    with pytest.raises(ValueError, match="must start with '_'"):
        agent.method("echo/ping")
    client = make(agent)
    assert client.call("_echo/ping", {"n": 1})["error"]["code"] == -32600  # initialize first, like every method
    client.call("initialize", {"protocolVersion": 1})
    assert client.call("_echo/ping", {"n": 1})["result"] == {"pong": 1}
    assert client.call("_echo/other")["error"]["code"] == -32601
    unwritable = client.call("_echo/set")["error"]
    assert unwritable["code"] == -32603 and "not JSON" in unwritable["message"]
