"""Our ACP client against scripted agents built on the official SDK (agent-client-protocol 0.12.1)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.acp.client import events as ev
from mcp_agent_kit.acp.client.client import ClientOptions
from mcp_agent_kit.acp.client.errors import AcpError, AgentCrashed, NotSupported
from mcp_agent_kit.acp.client.permissions import AllowAll, AllowReads, Ask, DenyAll, PermissionRequest

from .conftest import SDK_AGENT


def test_initialize_and_every_update_kind_arrive_as_typed_events(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    info = agent.initialize()
    assert info.protocol_version == 1 and info.auth_methods == [] and info.agent_info["name"] == "sdk-scripted"
    session = agent.new_session(str(tmp_path))
    assert session.modes["currentModeId"] == "ask"
    kinds = [(type(event).__name__, event.kind) for event in session.prompt("updates")]
    assert kinds == [
        ("UserMessageChunk", "user_message_chunk"), ("AgentThoughtChunk", "agent_thought_chunk"), ("Plan", "plan"),
        ("ToolCall", "tool_call"), ("ToolCallUpdate", "tool_call_update"),
        ("AvailableCommands", "available_commands_update"), ("ModeChanged", "current_mode_update"),
        ("ConfigOptions", "config_option_update"), ("SessionInfo", "session_info_update"), ("Usage", "usage_update"),
        ("AgentMessageChunk", "agent_message_chunk")]
    result = session.result
    assert result is not None and result.stop_reason == "end_turn" and result.text == "done"
    assert result.tool_calls == [{"toolCallId": "t1", "title": "Read a file", "kind": "read", "status": "completed"}]
    assert session.plan[0]["content"] == "step one" and session.commands[0]["name"] == "web"
    assert session.modes["currentModeId"] == "code" and session.title == "A title"
    assert session.config_options[0]["currentValue"] == "fast"
    assert session.usage is not None and (session.usage.used, session.usage.size) == (10, 1000)
    assert session.usage.cost == {"amount": 0.5, "currency": "USD"}
    assert session.tool_calls["t1"]["locations"] == [{"path": "/x", "line": 3}]


POLICY_CASES = [  # (policy, tool kind, the kinds the agent offers ('' = all four), the option expected)
    (AllowAll(), "edit", "", "opt-0-allow_once"),
    (DenyAll(), "edit", "", "opt-2-reject_once"),
    (AllowReads(), "read", "", "opt-0-allow_once"),
    (AllowReads(), "search", "", "opt-0-allow_once"),
    (AllowReads(), "execute", "", "opt-2-reject_once"),
    (AllowAll(), "edit", "allow_always,reject_always", "opt-0-allow_always"),
    (DenyAll(), "edit", "allow_always,reject_always", "opt-1-reject_always"),
    (AllowAll(), "edit", "reject_always,allow_once", "opt-1-allow_once"),  # by kind, never by position
    (DenyAll(), "edit", "allow_once", None),  # no reject option: cancelled
]


def test_permission_policies_choose_each_option_kind_by_kind(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    for policy, kind, offered, expected in POLICY_CASES:
        agent.policy = policy
        result = session.run(f"permission {kind} {offered}".strip())
        outcome = "selected" if expected else "cancelled"
        assert result.text == f"outcome={outcome} option={expected}", (policy, kind, offered)
        assert result.permissions == [{"toolCallId": "p1", "outcome": outcome, "optionId": expected}]


def test_an_ask_callback_sees_the_merged_tool_call(spawn: Any, tmp_path: Path) -> None:
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> Any:
        asked.append(request)
        return request.option("reject_always")

    agent = spawn(SDK_AGENT, policy=Ask(ask))
    agent.initialize()
    text = agent.new_session(str(tmp_path)).run("permission delete").text
    assert text == "outcome=selected option=opt-3-reject_always"
    assert asked[0].title == "Do a delete thing" and asked[0].tool_kind == "delete"  # from the earlier tool_call
    assert [o.kind for o in asked[0].options] == ["allow_once", "allow_always", "reject_once", "reject_always"]


def test_fs_read_and_write_inside_cwd_and_refused_outside(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    target = tmp_path / "sub" / "new.txt"
    result = session.run(f"write {target} hello there")
    assert result.text == "written" and target.read_text() == "hello there"
    assert result.files_written == [str(target)]
    assert session.run(f"read {target}").text == "content=hello there"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    assert session.run(f"write {outside} x").text.startswith("error=-32602 refused")
    assert not outside.exists()
    (tmp_path / "link").symlink_to(tmp_path.parent)
    assert session.run(f"write {tmp_path / 'link' / 'escape.txt'} x").text.startswith("error=-32602")
    assert session.run(f"read {tmp_path / 'missing.txt'}").text.startswith("error=-32002")
    assert session.run("read relative.txt").text.startswith("error=-32602")


def test_fs_is_not_served_when_not_advertised(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT, options=ClientOptions(read_files=False, write_files=False))
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    assert session.run(f"write {tmp_path / 'a.txt'} x").text.startswith("error=-32601")
    assert not (tmp_path / "a.txt").exists()


def test_terminal_runs_in_cwd_with_an_output_limit(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    text = session.run("terminal python3 -c print('a'*100+'END')").text
    assert text.startswith("exit=0 truncated=True output=") and text.endswith("aaaaEND\n")
    assert len(text.split("output=", 1)[1]) == 64  # the agent's outputByteLimit, cut from the start
    # the output is cut to its last 64 bytes too: a long tmp_path (pytest-xdist's) is truncated the same way
    where = os.path.realpath(tmp_path) + "\n"
    cut = len(where.encode()) > 64
    expected = f"exit=0 truncated={cut} output={where.encode()[-64:].decode(errors='ignore') if cut else where}"
    assert session.run("terminal pwd").text == expected


def test_cancel_answers_cancelled(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    for event in session.prompt("slow"):
        if isinstance(event, ev.AgentMessageChunk):
            session.cancel()
    assert session.result is not None and session.result.stop_reason == "cancelled" and session.result.note is None
    assert session.run("hello").text == "echo: hello"  # the session lives on


def test_unknown_methods_get_32601_and_refusal_is_a_stop_reason(spawn: Any, tmp_path: Path) -> None:
    seen: list[str] = []
    agent = spawn(SDK_AGENT, on_notification=lambda method, params: seen.append(method))
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    assert session.run("unknown").text == "error=-32601"
    assert seen == ["_x/ignored"]
    assert session.run("refuse").stop_reason == "refusal"


def test_out_of_order_tool_call_updates_keep_the_latest_status(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    result = agent.new_session(str(tmp_path)).run("outoforder")
    assert result.tool_calls == [{"toolCallId": "o1", "title": "Late start", "kind": "edit", "status": "completed"}]


def test_lines_over_64_kib(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    assert len(agent.new_session(str(tmp_path)).run("big 300000").text) == 300000


def test_a_crash_mid_turn_is_a_clear_error_then_the_agent_is_respawned_and_the_session_loaded(
        spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    assert session.run("first").text == "echo: first"
    first_pid = agent.process.pid
    with pytest.raises(AgentCrashed, match=r"exited with code 3.*fatal error mid-turn"):
        session.run("crash")
    result = session.run("again")
    assert result.text == "echo: again" and agent.process.pid != first_pid
    assert session.respawned == "loaded"
    replayed = [(type(e).__name__, e.text) for e in session.replayed if isinstance(e, ev.Chunk)]
    assert replayed[:2] == [("UserMessageChunk", "first"), ("AgentMessageChunk", "echo: first")]


def test_respawn_falls_back_to_session_new_when_load_fails(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    old_id = session.id
    with pytest.raises(AgentCrashed):
        session.run("crash")
    (tmp_path / ".sdk-agent-sessions.json").unlink()  # the agent forgot everything
    assert session.run("again").text == "echo: again"
    assert session.respawned == "new" and session.id != old_id


def test_load_list_and_capability_gates(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    session.run("remember me")
    listed = agent.list_sessions()
    assert [s["sessionId"] for s in listed["sessions"]] == [session.id]
    other = spawn(SDK_AGENT)
    other.initialize()
    loaded = other.load_session(session.id, str(tmp_path))
    assert [e.text for e in loaded.replayed if isinstance(e, ev.Chunk)] == ["remember me", "echo: remember me"]
    with pytest.raises(NotSupported, match="resume"):
        other.resume_session(session.id, str(tmp_path))
    with pytest.raises(NotSupported, match="additionalDirectories"):
        other.new_session(str(tmp_path), additional_directories=[str(tmp_path.parent)])
    loaded.set_config_option("mode", "code")  # no configOptions: falls back to set_mode
    assert loaded.modes["currentModeId"] == "code"
    assert loaded.run("hi").text == "echo: hi"


def test_config_options_are_set_with_set_config_option(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    session.run("updates")  # the agent announces its options with config_option_update
    options = session.set_config_option("model", "slow")
    assert options[0]["currentValue"] == "slow" and session.config_options == options


def test_authenticate_with_a_key_passed_through_env(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT, env={"SDK_AGENT_AUTH": "1"})
    info = agent.initialize()
    assert [m["id"] for m in info.auth_methods] == ["key"]
    with pytest.raises(AcpError) as caught:
        agent.new_session(str(tmp_path))
    assert caught.value.code == -32000
    with pytest.raises(AcpError, match="no auth method 'nope'"):
        agent.authenticate("nope")
    agent.authenticate("key")
    session = agent.new_session(str(tmp_path))
    with pytest.raises(AgentCrashed):
        session.run("crash")
    assert session.run("back").text == "echo: back"  # respawned, re-authenticated, loaded


def test_a_permission_question_pending_at_cancel_is_answered_cancelled(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT, policy=Ask(lambda request: threading.Event().wait(30) or None))
    agent.initialize()
    session = agent.new_session(str(tmp_path))
    for event in session.prompt("permission edit"):
        if isinstance(event, ev.ToolCall) and event.kind == "tool_call":
            session.cancel()
    assert session.result is not None and session.result.stop_reason == "cancelled"
    assert session.result.text == "outcome=cancelled option=None"  # what the agent received
    assert session.result.permissions == [{"toolCallId": "p1", "outcome": "cancelled", "optionId": None}]


def test_content_and_mcp_server_kinds_are_gated_on_capabilities(spawn: Any, tmp_path: Path) -> None:
    agent = spawn(SDK_AGENT)
    agent.initialize()  # the scripted agent advertises no promptCapabilities and no mcpCapabilities
    with pytest.raises(NotSupported, match=r"mcpCapabilities\.http"):
        agent.new_session(str(tmp_path), mcp_servers=[{"type": "http", "name": "x", "url": "http://h", "headers": []}])
    session = agent.new_session(str(tmp_path), mcp_servers=[
        {"name": "files", "command": "/bin/true", "args": [], "env": []}])  # stdio: always allowed
    with pytest.raises(NotSupported, match=r"promptCapabilities\.image"):
        session.run([{"type": "image", "data": "", "mimeType": "image/png"}])
    link = {"type": "resource_link", "uri": "file:///x", "name": "x"}
    assert session.run([{"type": "text", "text": "hi"}, link]).text == "echo: hi "
