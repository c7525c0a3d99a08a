"""The official ACP Python SDK's network clients (agent-client-protocol 0.12.1, `acp.ws` and `acp.http`: peers we
did not write) drive examples/acp_echo_agent.py through the agent host, in both profiles: initialize, a session,
a prompt whose permission question the SDK client answers, and the echo file written through the SDK client's
fs handler; the agent process ends when the client closes the connection. Every await is bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

import acp
import httpx
import pytest
from acp import schema
from acp.http import create_http_stream
from acp.ws import create_websocket_stream

from mcp_agent_kit.hosts.app import AgentHost
from tests.hosts.hostkit import echo_config, gone, only_connection, running_host
from tests.net import until

WAIT = 20.0
T = TypeVar("T")


async def bounded(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT)


class Answering(acp.Client):
    """Allows once, records the updates and the files the agent writes through it."""

    def __init__(self) -> None:
        self.questions: list[str] = []
        self.writes: dict[str, str] = {}
        self.updates: list[Any] = []

    async def request_permission(self, options: list[schema.PermissionOption], session_id: str,
                                 tool_call: schema.ToolCallUpdate, **kwargs: Any) -> schema.RequestPermissionResponse:
        self.questions.append(str(tool_call.title))
        allow = next(option for option in options if option.kind == "allow_once")
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected",
                                                                              option_id=allow.option_id))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def write_text_file(self, content: str, path: str, session_id: str,
                              **kwargs: Any) -> schema.WriteTextFileResponse:
        self.writes[path] = content
        return schema.WriteTextFileResponse()


async def drive(url: str, profile: str, host: AgentHost, work: Path) -> int:
    """One session through the host; the agent's pid."""
    client = Answering()
    http_client = httpx.AsyncClient(timeout=None)  # the SDK's default asks for HTTP/2 (the h2 package)
    transport = (await bounded(create_websocket_stream(url)) if profile == "ws"
                 else create_http_stream(url, client=http_client))
    conn = acp.connect_to_agent(client, transport)
    try:
        capabilities = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(write_text_file=True))
        init = await bounded(conn.initialize(protocol_version=1, client_capabilities=capabilities))
        assert init.agent_info is not None and init.agent_info.name == "acp-echo-agent"
        session = await bounded(conn.new_session(cwd=str(work), mcp_servers=[]))
        reply = await bounded(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hello host")]))
        assert reply.stop_reason == "end_turn"
        assert client.questions == ["Write echo.txt"]
        assert client.writes == {str(work / "echo.txt"): "hello host\n"}
        said = "".join(u.content.text for u in client.updates if isinstance(u, schema.AgentMessageChunk))
        assert "Echo: hello host" in said and "File: written." in said, said
        listed = only_connection(host)
        assert listed["profile"] == {"ws": "websocket", "http": "http"}[profile]
        assert listed["agent"] == "echo" and listed["running"] and listed["rss_bytes"] > 0
        if profile == "http":
            assert listed["sessions"] == [session.session_id]
        pid: int = listed["pid"]
        return pid
    finally:
        await bounded(conn.close())
        await bounded(transport.close())
        await http_client.aclose()


@pytest.mark.parametrize(("profile", "path"), [("ws", "/acp"), ("http", "/agents/echo/acp")])
def test_the_sdk_client_drives_the_echo_agent_through_the_host(tmp_path: Path, profile: str, path: str) -> None:
    with running_host(echo_config(tmp_path)) as (host, where):
        scheme = "ws" if profile == "ws" else "http"
        pid = asyncio.run(drive(f"{scheme}://{where}{path}", profile, host, tmp_path))
        until(lambda: host.registry.count() == 0, "the closed connection to leave the host")
        until(lambda: gone(pid), "the agent process to end with its connection")
