"""The ACP Python SDK's client side (agent-client-protocol 0.12.1, an oracle we did not write) drives
examples/acp_echo_agent.py as a subprocess: initialize, session/new, prompts with streamed updates,
permission answered with each option kind, the fs write seen on the client side, config options,
cancel (during a permission question and during a wait), then a NEW process that lists the session
and loads it (history replayed as user/agent message chunks), answers from that history and closes it.
Every await is bounded, so a hang fails instead of blocking the suite.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import acp
import pytest
from acp import schema

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "acp_echo_agent.py"
WAIT = 20.0
T = TypeVar("T")


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT)


class RecordingClient(acp.Client):
    """Answers permission questions by option kind from a script; records updates and writes."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.writes: dict[str, str] = {}
        self.questions: list[schema.RequestPermissionRequest] = []
        self.answers: list[str] = []  # option kinds to choose, in order; "cancel": send session/cancel
        self.conn: Any = None
        self.waiting = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def request_permission(self, options: list[schema.PermissionOption], session_id: str,
                                 tool_call: schema.ToolCallUpdate, **kwargs: Any) -> schema.RequestPermissionResponse:
        self.questions.append(schema.RequestPermissionRequest(options=options, session_id=session_id,
                                                              tool_call=tool_call))
        kind = self.answers.pop(0)
        if kind == "cancel":  # what a client does: cancel the turn, answer the pending question cancelled
            await self.conn.cancel(session_id=session_id)
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        chosen = next(option for option in options if option.kind == kind)  # by kind, never by position
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if isinstance(update, schema.AgentMessageChunk) and update.content.text.startswith("Waiting"):
            self.waiting.set()

    async def write_text_file(self, content: str, path: str, session_id: str,
                              **kwargs: Any) -> schema.WriteTextFileResponse:
        self.writes[path] = content
        return schema.WriteTextFileResponse()

    def take(self) -> list[Any]:
        """The updates received since the last take."""
        taken, self.updates = [u for _, u in self.updates], []
        return taken


def agent_text(updates: list[Any]) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk))


def kinds(updates: list[Any]) -> list[str]:
    return [u.session_update for u in updates]


def tool_statuses(updates: list[Any]) -> list[str | None]:
    return [u.status for u in updates if isinstance(u, schema.ToolCallStart | schema.ToolCallProgress)]


async def start(client: RecordingClient, sessions: Path, work: Path) -> Any:
    return acp.spawn_agent_process(client, sys.executable, str(EXAMPLE), env={"ACP_ECHO_AGENT_DIR": str(sessions)},
                                   cwd=str(work))


async def initialize(conn: Any, write: bool = True) -> schema.InitializeResponse:
    capabilities = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=False,
                                                                              write_text_file=write))
    return await bounded(conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities,
                                         client_info=schema.Implementation(name="sdk-test", version="0")))


async def prompt(conn: Any, session_id: str, text: str) -> str:
    response = await bounded(conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]))
    return str(response.stop_reason)


async def first_process(sessions: Path, work: Path) -> tuple[str, list[Any]]:
    client = RecordingClient()
    echo_path = str(work / "echo.txt")
    async with await start(client, sessions, work) as (conn, _process):
        init = await initialize(conn)
        assert init.protocol_version == 1
        assert init.agent_info is not None and init.agent_info.name == "acp-echo-agent"
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session is True
        assert caps.session_capabilities is not None
        assert caps.session_capabilities.list is not None and caps.session_capabilities.close is not None

        new = await bounded(conn.new_session(cwd=str(work), mcp_servers=[]))
        sid = new.session_id
        assert [o.id for o in new.config_options or []] == ["case"]
        replay: list[Any] = []  # what session/load must give back: prompts and agent chunks, in order

        client.answers = ["allow_once"]
        assert await prompt(conn, sid, "hello echo world") == "end_turn"
        turn = client.take()
        assert agent_text(turn) == "Echo: hello echo world\nFile: written."
        assert {"plan", "tool_call", "tool_call_update", "agent_message_chunk"} <= set(kinds(turn))
        assert tool_statuses(turn) == ["pending", "in_progress", "completed"]
        assert client.writes == {echo_path: "hello echo world\n"}  # written through the client, not on disk
        assert not (work / "echo.txt").exists()
        question = client.questions[-1]
        assert {o.kind for o in question.options} == {"allow_once", "reject_once", "allow_always"}
        assert question.tool_call.title == "Write echo.txt"
        replay += [("user", "hello echo world"), ("agent", agent_text(turn))]

        client.answers = ["reject_once"]
        assert await prompt(conn, sid, "second try") == "end_turn"
        turn = client.take()
        assert agent_text(turn).endswith("File: refused.")
        assert tool_statuses(turn) == ["pending", "failed"]
        assert echo_path in client.writes and client.writes[echo_path] == "hello echo world\n"
        replay += [("user", "second try"), ("agent", agent_text(turn))]

        asked = len(client.questions)
        assert await prompt(conn, sid, "what did I say before?") == "end_turn"
        turn = client.take()
        assert agent_text(turn) == "Before, you said: second try"
        assert len(client.questions) == asked  # no tool call, no question
        replay += [("user", "what did I say before?"), ("agent", agent_text(turn))]

        client.answers = ["allow_always"]
        assert await prompt(conn, sid, "third") == "end_turn"
        replay += [("user", "third"), ("agent", agent_text(client.take()))]
        assert await prompt(conn, sid, "fourth") == "end_turn"  # allow_always: not asked again
        replay += [("user", "fourth"), ("agent", agent_text(client.take()))]
        assert len(client.questions) == asked + 1
        assert client.writes[echo_path] == "fourth\n"

        await bounded(conn.set_config_option(config_id="case", session_id=sid, value="upper"))
        assert await prompt(conn, sid, "quiet words") == "end_turn"
        turn = client.take()
        assert agent_text(turn).startswith("Echo: QUIET WORDS")
        replay += [("user", "quiet words"), ("agent", agent_text(turn))]

        # cancel while the permission question is pending: the turn ends "cancelled", no write
        other = (await bounded(conn.new_session(cwd=str(work), mcp_servers=[]))).session_id
        writes = dict(client.writes)
        client.answers = ["cancel"]
        assert await prompt(conn, other, "please cancel") == "cancelled"
        assert client.writes == writes
        assert "failed" in tool_statuses(client.take())

        # cancel while the agent waits: a session/cancel notification ends the running prompt
        running = asyncio.ensure_future(conn.prompt(session_id=other, prompt=[acp.text_block("/wait")]))
        await bounded(client.waiting.wait())
        await conn.cancel(session_id=other)
        assert (await bounded(running)).stop_reason == "cancelled"
        client.take()
        return sid, replay


async def second_process(sessions: Path, work: Path, sid: str, replay: list[Any]) -> None:
    client = RecordingClient()
    async with await start(client, sessions, work) as (conn, _process):
        await initialize(conn)
        listed = await bounded(conn.list_sessions(cwd=str(work)))
        by_id = {s.session_id: s for s in listed.sessions}
        assert sid in by_id and by_id[sid].title == "hello echo world" and by_id[sid].cwd == str(work)

        await bounded(conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[]))
        replayed = client.take()  # all of it arrived before the load answer
        assert set(kinds(replayed)) == {"user_message_chunk", "agent_message_chunk"}
        messages: list[tuple[str, str, str | None]] = []  # chunks joined per message id
        for update in replayed:
            role = "user" if isinstance(update, schema.UserMessageChunk) else "agent"
            if messages and messages[-1][0] == role and messages[-1][2] == update.message_id:
                messages[-1] = (role, messages[-1][1] + update.content.text, update.message_id)
            else:
                messages.append((role, update.content.text, update.message_id))
        assert [(role, text) for role, text, _ in messages] == replay

        assert await prompt(conn, sid, "What did I say before?") == "end_turn"
        assert agent_text(client.take()) == "Before, you said: quiet words"

        with pytest.raises(acp.RequestError) as missing:
            await bounded(conn.load_session(cwd=str(work), session_id="no-such-session", mcp_servers=[]))
        assert missing.value.code == -32002
        await bounded(conn.close_session(session_id=sid))


def test_the_sdk_client_drives_the_echo_agent_through_a_full_session_and_a_load(tmp_path: Path) -> None:
    sessions, work = tmp_path / "sessions", tmp_path / "work"
    work.mkdir()

    async def scenario() -> None:
        sid, replay = await first_process(sessions, work)
        assert (sessions / f"{sid}.json").is_file()
        await second_process(sessions, work, sid, replay)

    asyncio.run(scenario())


def test_without_fs_write_capability_the_echo_agent_does_not_write(tmp_path: Path) -> None:
    async def scenario() -> None:
        client = RecordingClient()
        async with await start(client, tmp_path / "sessions", tmp_path) as (conn, _process):
            await initialize(conn, write=False)
            sid = (await bounded(conn.new_session(cwd=str(tmp_path), mcp_servers=[]))).session_id
            client.answers = ["allow_once"]
            assert await prompt(conn, sid, "no fs") == "end_turn"
            turn = client.take()
            assert client.writes == {}
            assert agent_text(turn).endswith("File: not written.")
            assert tool_statuses(turn) == ["pending", "failed"]

    asyncio.run(scenario())
