"""MRTR requestState is bound to who asked and for what: a state replayed by another principal,
for other arguments, another tool or another method is -32602 (digest §4.2: bind it to the principal
and the originating request; tampered state -> -32602). In-process and over HTTP with two tokens."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_agent_kit import Context, Server
from mcp_agent_kit.core.dispatcher import Connection
from tests.http.conftest import MODERN
from tests.stdio_peer import modern

CAPS = {"elicitation": {}}
ANSWER = {"elicitation_1": {"action": "accept", "content": {"ok": True}}}


def make_server() -> Server:
    server = Server("state-binding", "1.0")

    @server.tool
    def transfer(amount: int, ctx: Context) -> str:
        """Move money once the client confirms."""
        answer = ctx.elicit(f"Transfer {amount}?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"moved {amount} for {ctx.principal}: {answer['content']['ok']}"

    @server.tool
    def other(amount: int, ctx: Context) -> str:
        """Same shape, other tool."""
        answer = ctx.elicit("Other?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"other {amount}: {answer['content']['ok']}"

    @server.tool(name="note")
    def note_tool(text: str, ctx: Context) -> str:
        """A tool and a prompt of one name and one argument: only the method tells them apart."""
        answer = ctx.elicit("Note?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"tool {text}: {answer['content']['ok']}"

    @server.prompt(name="note")
    def note_prompt(text: str, ctx: Context) -> str:
        """The prompt of the same name."""
        answer = ctx.elicit("Note?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
        return f"prompt {text}: {answer['content']['ok']}"

    return server


def first_round(server: Server, conn: Connection, amount: int = 10) -> str:
    reply: Any = server.handle(modern(1, "tools/call", CAPS, name="transfer", arguments={"amount": amount}), conn)
    result = reply["result"]
    assert result["resultType"] == "input_required", result
    state: str = result["requestState"]
    return state


def retry(server: Server, conn: Connection, state: str, name: str = "transfer", amount: int = 10) -> Any:
    message = modern(2, "tools/call", CAPS, name=name, arguments={"amount": amount},
                     inputResponses=ANSWER, requestState=state)
    return server.handle(message, conn)


def test_the_same_principal_and_arguments_finish_the_call() -> None:
    server = make_server()
    state = first_round(server, Connection(principal="alice"))
    reply = retry(server, Connection(principal="alice"), state)  # a new connection of the same principal
    assert reply["result"]["content"][0]["text"] == "moved 10 for alice: True"


@pytest.mark.parametrize("thief", ["bob", None])
def test_another_principal_cannot_replay_the_state(thief: str | None) -> None:
    server = make_server()
    state = first_round(server, Connection(principal="alice"))
    reply = retry(server, Connection(principal=thief), state)
    assert "result" not in reply, reply
    assert reply["error"]["code"] == -32602 and "different request" in reply["error"]["message"]


def test_a_state_from_no_principal_is_not_accepted_for_one() -> None:
    server = make_server()
    state = first_round(server, Connection())
    assert retry(server, Connection(principal="alice"), state)["error"]["code"] == -32602


@pytest.mark.parametrize("amount", [11, 0, -10])
def test_other_arguments_cannot_reuse_the_state(amount: int) -> None:
    server = make_server()
    conn = Connection(principal="alice")
    state = first_round(server, conn, amount=10)
    reply = retry(server, conn, state, amount=amount)
    assert "result" not in reply, reply
    assert reply["error"]["code"] == -32602


def test_another_tool_or_method_cannot_reuse_the_state() -> None:
    server = make_server()
    conn = Connection(principal="alice")
    state = first_round(server, conn)
    assert retry(server, conn, state, name="other")["error"]["code"] == -32602
    note: Any = server.handle(modern(3, "tools/call", CAPS, name="note", arguments={"text": "hi"}), conn)
    note_state = note["result"]["requestState"]
    for method in ("prompts/get", "tools/call"):
        replay: Any = server.handle(modern(4, method, CAPS, name="note", arguments={"text": "hi"},
                                           inputResponses=ANSWER, requestState=note_state), conn)
        if method == "prompts/get":
            assert replay["error"]["code"] == -32602, replay
        else:
            assert replay["result"]["content"][0]["text"] == "tool hi: True", replay


def test_a_tampered_state_is_refused() -> None:
    server = make_server()
    conn = Connection(principal="alice")
    state = first_round(server, conn)
    body, tag = state.split(".")
    for forged in (body + "." + tag[:-2] + ("AA" if tag[-2:] != "AA" else "BB"), "x" + state, body, ""):
        assert retry(server, conn, forged)["error"]["code"] == -32602, forged


def test_over_http_a_state_is_bound_to_the_bearer_token(serve: Any) -> None:
    running = serve(make_server().dispatcher, tokens={"alice-token": "alice", "bob-token": "bob"})

    def call(token: str, amount: int, **extra: Any) -> tuple[int, Any]:
        return running.modern("tools/call", {"name": "transfer", "arguments": {"amount": amount}, **extra},
                              headers={"Authorization": f"Bearer {token}", "MCP-Protocol-Version": MODERN},
                              meta={"io.modelcontextprotocol/clientCapabilities": CAPS})

    status, body = call("alice-token", 10)
    assert status == 200 and body["result"]["resultType"] == "input_required", body
    state = body["result"]["requestState"]
    status, body = call("bob-token", 10, inputResponses=ANSWER, requestState=state)
    assert body["error"]["code"] == -32602, (status, body)
    status, body = call("alice-token", 99, inputResponses=ANSWER, requestState=state)
    assert body["error"]["code"] == -32602, (status, body)
    status, body = call("alice-token", 10, inputResponses=ANSWER, requestState=state)
    assert status == 200 and body["result"]["content"][0]["text"] == "moved 10 for alice: True", body
