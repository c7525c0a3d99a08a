"""One acp.agent `Agent` serving two clients at once: each connection is `agent.serve(reader, writer)` on its
own thread over a socketpair, each client is the ACP Python SDK's client (agent-client-protocol 0.12.1,
an oracle we did not write) in one event loop. Both initialize with different capabilities, open a
session and prompt concurrently; each sees only its own updates; both connections number their
requests from 0, and each permission question reaches the client of its turn and its answer that
turn; a cancel on one leaves the other's turn running; one turn per session even across connections;
a session loaded on the second connection sends that connection's turn there only; closing one
connection leaves the other serving. Every await is bounded.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

import acp
import pytest
from acp import schema

from mcp_agent_kit.acp.agent import Agent, Turn, updates

from .test_agent import RawClient

WAIT = 20.0
T = TypeVar("T")


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT)


def make_agent() -> Agent:
    agent = Agent("multi-agent", "1.0")
    agent.load_session()
    agent.close_session()

    @agent.prompt
    def on_prompt(turn: Turn) -> str | None:
        turn.say(f"heard {turn.text}")
        if turn.text == "caps?":
            turn.say(f"; write={turn.can('fs', 'writeTextFile')}")
        elif turn.text.startswith("ask"):
            answer = turn.ask_permission(turn.tool_call(f"edit for {turn.text}", kind="edit"))
            if answer.cancelled:
                return "cancelled"
            turn.say(f"; {answer.option_id}")
        return None

    return agent


class Client(acp.Client):
    """Records its updates; holds each permission question until the test answers it."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.questions: asyncio.Queue[tuple[str, str, asyncio.Future[str]]] = asyncio.Queue()

    async def request_permission(self, options: list[schema.PermissionOption], session_id: str,
                                 tool_call: schema.ToolCallUpdate, **kwargs: Any) -> schema.RequestPermissionResponse:
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        await self.questions.put((session_id, str(tool_call.title), answer))
        chosen = await answer
        if chosen == "cancelled":
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def question(self) -> tuple[str, str, asyncio.Future[str]]:
        return await bounded(self.questions.get())

    def text(self, session_id: str | None = None) -> str:
        """The agent message text received (in one session), then forgotten."""
        taken = [u for s, u in self.updates if session_id in (None, s)]
        self.updates = [(s, u) for s, u in self.updates if session_id not in (None, s)]
        return "".join(u.content.text for u in taken if isinstance(u, schema.AgentMessageChunk))

    def sessions(self) -> set[str]:
        return {session_id for session_id, _ in self.updates}


class Served:
    """One connection: `agent.serve` on a thread over a socketpair, and the SDK client on the other end."""

    def __init__(self, agent: Agent) -> None:
        self.client = Client()
        self.ours, theirs = socket.socketpair()
        self.codes: list[int] = []
        self.thread = threading.Thread(target=self._serve, args=(agent, theirs), daemon=True)
        self.thread.start()
        self.conn: Any = None
        self.writer: asyncio.StreamWriter | None = None
        self.sid = ""

    def _serve(self, agent: Agent, sock: socket.socket) -> None:
        with sock, sock.makefile("rb") as reader, sock.makefile("wb") as writer:
            self.codes.append(agent.serve(reader, writer, shutdown_timeout=WAIT))

    async def open(self, write: bool) -> None:
        reader, self.writer = await asyncio.open_connection(sock=self.ours)
        self.conn = acp.connect_to_agent(self.client, self.writer, reader)
        capabilities = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=False,
                                                                                  write_text_file=write))
        init = await bounded(self.conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                                  client_capabilities=capabilities))
        assert init.agent_capabilities is not None and init.agent_capabilities.load_session is True
        self.sid = (await bounded(self.conn.new_session(cwd="/work", mcp_servers=[]))).session_id

    def prompt(self, text: str, session_id: str | None = None) -> asyncio.Task[Any]:
        return asyncio.ensure_future(bounded(self.conn.prompt(session_id=session_id or self.sid,
                                                              prompt=[acp.text_block(text)])))

    async def close(self) -> None:
        await bounded(self.conn.close())  # the SDK leaves the stream open: the client closes its end
        assert self.writer is not None
        self.writer.close()
        await bounded(self.writer.wait_closed())
        await asyncio.to_thread(self.thread.join, WAIT)
        assert not self.thread.is_alive() and self.codes == [0]


async def two_clients(agent: Agent) -> None:
    a, b = Served(agent), Served(agent)
    await asyncio.gather(a.open(write=True), b.open(write=False))
    assert a.sid != b.sid

    # each turn sees its own connection's capabilities
    done = await bounded(asyncio.gather(a.prompt("caps?"), b.prompt("caps?")))
    assert [r.stop_reason for r in done] == ["end_turn", "end_turn"]
    assert a.client.text() == "heard caps?; write=True" and b.client.text() == "heard caps?; write=False"

    # both turns wait on a permission question at once (request id 0 on both connections):
    # each question reaches its own client, each answer its own turn, whatever the order
    turn_a, turn_b = a.prompt("ask A"), b.prompt("ask B")
    (sid_qa, title_a, answer_a), (sid_qb, title_b, answer_b) = await a.client.question(), await b.client.question()
    assert (sid_qa, title_a, sid_qb, title_b) == (a.sid, "edit for ask A", b.sid, "edit for ask B")
    answer_b.set_result("allow")
    assert (await turn_b).stop_reason == "end_turn"
    assert not turn_a.done()
    answer_a.set_result("reject")
    assert (await turn_a).stop_reason == "end_turn"
    assert a.client.text() == "heard ask A; reject" and b.client.text() == "heard ask B; allow"

    # a cancel on one connection leaves the other's turn running
    turn_a, turn_b = a.prompt("ask again A"), b.prompt("ask again B")
    (_, _, answer_a), (_, _, answer_b) = await a.client.question(), await b.client.question()
    await a.conn.cancel(session_id=a.sid)
    assert (await turn_a).stop_reason == "cancelled"
    answer_a.set_result("cancelled")
    await b.conn.cancel(session_id=a.sid)  # not b's turn: ignored
    assert not turn_b.done()
    answer_b.set_result("allow")
    assert (await turn_b).stop_reason == "end_turn"
    assert b.client.text() == "heard ask again B; allow" and a.client.text() == "heard ask again A"

    # a session is open on the connections that opened it: b cannot prompt a's until it loads it
    with pytest.raises(acp.RequestError) as refused:
        await b.prompt("hi", a.sid)
    assert refused.value.code == -32002
    await bounded(b.conn.load_session(cwd="/work", session_id=a.sid, mcp_servers=[]))
    assert "heard ask A; reject" in b.client.text(a.sid)  # the history, replayed to b only
    turn_b = b.prompt("ask from B", a.sid)
    sid_q, title, answer_b = await b.client.question()
    assert (sid_q, title) == (a.sid, "edit for ask from B")
    with pytest.raises(acp.RequestError) as busy:  # one turn per session, whichever connection
        await a.prompt("hi")
    assert busy.value.code == -32600 and "already running" in str(busy.value)
    await a.conn.cancel(session_id=a.sid)  # a's cancel does not reach b's turn in the shared session
    answer_b.set_result("allow")
    assert (await turn_b).stop_reason == "end_turn"
    assert b.client.text(a.sid) == "heard ask from B; allow"
    assert (await a.prompt("ping")).stop_reason == "end_turn"  # a's stream is ordered: b's turn would be here
    assert a.client.text() == "heard ping"

    # closing one connection leaves the other serving, also its turn running at that moment
    turn_b = b.prompt("ask last")
    _, _, answer_b = await b.client.question()
    await a.close()
    answer_b.set_result("allow")
    assert (await turn_b).stop_reason == "end_turn"
    assert (await b.prompt("still here?")).stop_reason == "end_turn"
    assert b.client.text() == "heard ask last; allowheard still here?"
    assert a.client.sessions() | b.client.sessions() <= {a.sid, b.sid} and not a.client.updates
    await b.close()


def test_one_agent_serves_two_clients_at_once() -> None:
    asyncio.run(two_clients(make_agent()))


def opened(client: RawClient, seen: list[Any]) -> str:
    """Initialize and open a session; what the agent sent meanwhile goes to `seen`."""
    assert "result" in client.call("initialize", {"protocolVersion": 1})
    return str(client.call("session/new", {"cwd": "/project", "mcpServers": []}, seen)["result"]["sessionId"])


def test_updates_outside_a_turn_go_to_the_connections_the_session_is_open_on() -> None:
    """From a handler: to the connection it serves; from any other thread: to every connection the
    session is open on (raw JSON-RPC clients; each connection's messages arrive in order)."""
    agent = Agent("t", "1")
    agent.load_session()
    agent.prompt(lambda turn: None)
    agent.new_session(lambda session: agent.send_update(session, updates.available_commands([])))
    a, b = RawClient(agent), RawClient(agent)
    try:
        seen_a: list[Any] = []
        seen_b: list[Any] = []
        sid_a, sid_b = opened(a, seen_a), opened(b, seen_b)
        commands = {"sessionUpdate": "available_commands_update", "availableCommands": []}
        assert [m["params"] for m in seen_a] == [{"sessionId": sid_a, "update": commands}]
        assert [m["params"] for m in seen_b] == [{"sessionId": sid_b, "update": commands}]
        assert "result" in b.call("session/load", {"sessionId": sid_a, "cwd": "/project", "mcpServers": []})

        shared, own = agent.store.get(sid_a), agent.store.get(sid_b)
        assert shared is not None and own is not None
        agent.send_session_info(shared)  # open on both
        agent.send_session_info(own)  # open on b only
        prompt = {"prompt": [updates.text("hi")]}
        seen_a, seen_b = [], []
        assert a.call("session/prompt", {"sessionId": sid_a, **prompt}, seen_a)["result"] == {"stopReason": "end_turn"}
        assert b.call("session/prompt", {"sessionId": sid_b, **prompt}, seen_b)["result"] == {"stopReason": "end_turn"}
        assert [m["params"]["sessionId"] for m in seen_a] == [sid_a]
        assert [m["params"]["sessionId"] for m in seen_b] == [sid_a, sid_b]
    finally:
        a.close()
        b.close()
