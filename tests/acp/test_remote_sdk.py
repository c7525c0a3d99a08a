"""The kit's ACP client over ACP's network transport, against the official SDK's server (tests/acp/sdk_remote.py).

Both profiles (WebSocket and Streamable HTTP) run the same turn: initialize, session/new, a prompt streaming
every update kind, a permission question our policy answers, fs writes through our client (inside the
session's cwd, and one refused outside it), a cancelled prompt; cookies are kept and sent back. Over
WebSocket a dropped connection is reopened and the session restored with session/load (the SDK 0.12.1's
HTTP server forgets a session on a new connection, so the HTTP profile cannot load one there).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import AcpAgent
from mcp_agent_kit.acp.client.permissions import AllowAll
from mcp_agent_kit.acp.client.remote import RemoteError
from tests.net import until

from .sdk_remote import CookieCheck, remote_urls, sdk_server


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, CookieCheck]]:
    with sdk_server() as running:
        yield running


@pytest.fixture
def connect(server: tuple[str, CookieCheck]) -> Iterator[Any]:
    agents: list[AcpAgent] = []

    def make(profile: str, **kwargs: Any) -> AcpAgent:
        agent = AcpAgent.connect(remote_urls(server[0])[profile], **kwargs)
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.close()


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_a_turn_with_permission_and_files_in_both_profiles(connect: Any, server: tuple[str, CookieCheck],
                                                           profile: str, tmp_path: Path) -> None:
    agent = connect(profile, policy=AllowAll(), headers={"X-Trace": "t1"})
    info = agent.initialize()
    assert info.agent_info is not None and info.agent_info["name"] == "sdk-scripted"
    assert agent.link is not None and agent.link.connection_id
    session = agent.new_session(str(tmp_path))
    kinds = [event.kind for event in session.prompt("updates")]
    assert kinds[0] == "user_message_chunk" and kinds[-1] == "agent_message_chunk" and "plan" in kinds
    assert session.result is not None and session.result.text == "done"
    assert session.run("permission edit").text == "outcome=selected option=opt-0-allow_once"
    assert session.run(f"write {tmp_path / 'notes.txt'} hello").text == "written"
    assert (tmp_path / "notes.txt").read_text() == "hello"
    refused = session.run(f"write {tmp_path.parent / 'escaped.txt'} nope").text
    assert refused.startswith("error=") and not (tmp_path.parent / "escaped.txt").exists()
    for event in session.prompt("slow"):
        if isinstance(event, ev.AgentMessageChunk):
            session.cancel()
    assert session.result is not None and session.result.stop_reason == "cancelled"
    assert session.run("hello").text == "echo: hello"
    if profile == "http":  # every request after the first answer carries the cookie it set
        cookies = [cookie for kind, _, cookie in server[1].seen if kind == "http"]
        assert "affinity=node-1" in cookies[-1]


def test_a_dropped_websocket_is_reopened_and_the_session_loaded(connect: Any, server: tuple[str, CookieCheck],
                                                               tmp_path: Path) -> None:
    agent = connect("ws")
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    assert session.run("hello").text == "echo: hello"
    before = len(server[1].seen)
    assert agent.link is not None
    agent.link.client.abort()  # type: ignore[attr-defined]
    until(lambda: not agent.running, "the client to notice the drop")
    assert session.run("again").text == "echo: again"
    assert session.respawned == "loaded" and session.replayed  # the history came back with session/load
    [(kind, _, cookie)] = server[1].seen[before:]  # the second handshake returned the cookie of the first
    assert kind == "websocket" and cookie == "affinity=node-1"


def test_errors_are_one_line(server: tuple[str, CookieCheck]) -> None:
    base = server[0]
    with pytest.raises(RemoteError, match="not an ACP endpoint URL"):
        AcpAgent.connect("ftp://127.0.0.1/acp")
    with AcpAgent.connect("http://127.0.0.1:1/acp") as agent, pytest.raises(RemoteError, match="cannot reach"):
        agent.initialize()
    with pytest.raises(RemoteError, match="cannot connect"):
        AcpAgent.connect("ws://127.0.0.1:1/acp")
    assert base
