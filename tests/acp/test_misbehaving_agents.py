"""Our ACP client against raw-JSON agents that break the rules the way real agents do, and crash tests.

Each test bounds its waits (FAST timeouts); the spawn fixture checks that no process of the
agent's group is left once the agent is closed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import ClientOptions, Timeouts
from mcp_agent_kit.acp.client.errors import AgentCrashed, TurnTimeout
from mcp_agent_kit.acp.client.permissions import AllowAll

from .conftest import FAST, group_gone, raw_agent


def started(spawn: Any, mode: str, tmp_path: Path, **kwargs: Any) -> Any:
    agent = spawn(raw_agent(mode), **kwargs)
    agent.initialize()
    return agent.new_session(str(tmp_path))


def test_non_json_stdout_lines_are_skipped_and_logged(spawn: Any, tmp_path: Path) -> None:
    logged: list[str] = []
    session = started(spawn, "junk", tmp_path, log=logged.append)
    assert session.run("go").text == "after junk"
    assert any("Starting agent v1.2.3" in line for line in logged)
    assert any("progress: 50%" in line for line in logged)
    assert session.agent.connection.junk_lines == 2


def test_a_one_mib_line(spawn: Any, tmp_path: Path) -> None:
    assert len(started(spawn, "longline", tmp_path).run("go").text) == 1 << 20


def test_a_line_over_the_cap_is_dropped_and_reported(spawn: Any, tmp_path: Path) -> None:
    logged: list[str] = []
    session = started(spawn, "longline", tmp_path, log=logged.append, options=ClientOptions(max_line=256 * 1024))
    assert session.run("go").text == ""
    assert any("line limit" in line for line in logged)


def test_non_underscore_custom_methods_get_32601_and_the_turn_goes_on(spawn: Any, tmp_path: Path) -> None:
    seen: list[str] = []
    session = started(spawn, "custom", tmp_path, on_notification=lambda method, params: seen.append(method))
    assert session.run("go").text == "drain answered -32601"
    assert seen == ["qwen/notify/session/mode-update"]


def test_an_agent_request_reusing_our_live_id_is_routed_as_a_request(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "collide", tmp_path, policy=AllowAll())
    result = session.run("go")
    assert result.stop_reason == "end_turn"
    assert result.text == 'permission answer id=2 result={"outcome": {"outcome": "selected", "optionId": "yes"}}'


def test_an_update_before_the_session_new_reply_reaches_the_session(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "early", tmp_path)
    assert session.commands == [{"name": "init", "description": "set up"}]
    assert [type(e) for e in session.background] == [ev.AvailableCommands]
    assert session.models == {"currentModelId": "m", "availableModels": []}  # the legacy object is kept
    assert session.agent.info.auth_methods == []  # omitted by the agent


def cancel_after_first_chunk(session: Any, timeout: float | None = None) -> Any:
    for event in session.prompt("go", timeout=timeout):
        if isinstance(event, ev.AgentMessageChunk):
            session.cancel()
    return session.result


def test_a_cancel_answered_end_turn_is_reported_as_cancelled_with_a_note(spawn: Any, tmp_path: Path) -> None:
    result = cancel_after_first_chunk(started(spawn, "cancel_end_turn", tmp_path))
    assert result.stop_reason == "cancelled" and "end_turn" in result.note


def test_an_agent_that_ignores_cancel_is_stopped_within_the_grace(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "cancel_never", tmp_path)
    began = time.monotonic()
    result = cancel_after_first_chunk(session)
    assert result.stop_reason == "cancelled" and "ignored session/cancel" in result.note
    assert time.monotonic() - began < 20  # grace 2 s + stop 1+1 s, far under the turn timeout
    assert group_gone(session.agent)


def test_a_turn_past_its_deadline_is_cancelled_then_the_agent_stopped(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "cancel_never", tmp_path)
    with pytest.raises(TurnTimeout, match="ignored session/cancel"):
        session.run("go", timeout=1)


def test_an_agent_that_exits_at_start(spawn: Any) -> None:
    agent = spawn(raw_agent("exit_at_start"))
    with pytest.raises(AgentCrashed, match=r"exited with code 2.*HOME is not set up"):
        agent.initialize()


def test_an_agent_that_floods_stdout_with_junk(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "flood", tmp_path, options=ClientOptions(max_junk_lines=500))
    with pytest.raises(AgentCrashed, match="more than 500 lines that are not JSON-RPC"):
        session.run("go")


def test_an_agent_that_floods_updates_hits_the_turn_deadline(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "flood_updates", tmp_path,
                      timeouts=Timeouts(initialize=20, request=20, turn=30, cancel_grace=1, stop_grace=1))
    with pytest.raises(TurnTimeout):
        session.run("go", timeout=1)


def test_a_child_that_keeps_the_pipes_open_is_killed_with_the_group(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "orphan", tmp_path)
    began = time.monotonic()
    with pytest.raises(AgentCrashed, match="exited with code 4"):
        session.run("go")
    assert time.monotonic() - began < 15
    assert group_gone(session.agent)


def test_a_reexecuted_agent_is_driven_and_its_whole_group_stopped(spawn: Any, tmp_path: Path) -> None:
    session = started(spawn, "reexec", tmp_path, timeouts=FAST)
    assert session.run("go").stop_reason == "end_turn"
    session.agent.close()
    assert group_gone(session.agent)  # the waiting parent and the real agent both went


def test_an_agent_that_dies_at_start_while_its_child_holds_stdout(spawn: Any) -> None:
    agent = spawn(raw_agent("orphan_at_start"))
    with pytest.raises(AgentCrashed, match=r"exited with code 5.*sandbox failed"):
        agent.initialize()
    assert group_gone(agent)  # the child went with the group, before close()
