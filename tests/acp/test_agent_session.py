"""acp.agent.session and acp.agent.updates: the JSON session store survives bad files and hostile ids; builders
spell the v1 fields and refuse values outside the v1 enums."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_agent_kit.acp.agent import session as agent_session
from mcp_agent_kit.acp.agent import updates
from mcp_agent_kit.acp.agent.session import AgentSession, JsonSessionStore, Message


def test_sessions_round_trip_through_files_and_a_new_store_reads_them(tmp_path: Path) -> None:
    store = JsonSessionStore(tmp_path / "s")
    session = AgentSession("abc", "/w", ["/x"], "title", history=[Message("user", [updates.text("hi")], "m1")],
                      config={"case": "upper"}, state={"n": 1})
    store.put(session)
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o700
    again = JsonSessionStore(tmp_path / "s").get("abc")
    assert again is not None and again.to_json() == session.to_json()
    assert again.info() == {"sessionId": "abc", "cwd": "/w", "additionalDirectories": ["/x"], "title": "title",
                            "updatedAt": session.updated_at}
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["abc.json"]  # no temporary file left


def test_bad_files_and_hostile_ids_read_as_absent(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    (tmp_path / "other.json").write_text('{"sessionId": "someone-else", "cwd": "/w"}', encoding="utf-8")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text('{"sessionId": "link", "cwd": "/w"}', encoding="utf-8")
    os.symlink(outside, tmp_path / "link.json")
    store = JsonSessionStore(tmp_path)
    for session_id in ("broken", "list", "other", "link", "../x", "a/b", "", "x" * 200, "missing"):
        assert store.get(session_id) is None, session_id
    assert store.all() == []
    with pytest.raises(ValueError, match="cannot name a file"):
        store.put(AgentSession("../escape", "/w"))


def test_an_oversized_session_file_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    JsonSessionStore(tmp_path).put(AgentSession("big", "/w", state={"blob": "x" * 5000}))
    monkeypatch.setattr(agent_session, "RECORD_LIMIT", 1000)
    assert JsonSessionStore(tmp_path).get("big") is None
    JsonSessionStore(tmp_path).put(AgentSession("small", "/w"))
    with pytest.raises(ValueError, match="over the 1000-byte limit"):  # one that could not be read back
        JsonSessionStore(tmp_path).put(AgentSession("small", "/w", state={"blob": "x" * 5000}))
    kept = JsonSessionStore(tmp_path).get("small")
    assert kept is not None and kept.state == {}


def test_replay_turns_the_history_into_message_chunks() -> None:
    session = AgentSession("s", "/w", history=[Message("user", [updates.text("a")], "u"),
                                          Message("agent", [updates.text("b"), updates.text("c")], "g")])
    assert session.replay_updates() == [updates.user_message("a", "u"), updates.agent_message("b", "g"),
                                        updates.agent_message("c", "g")]
    assert session.text_history() == [("user", "a"), ("agent", "bc")]


def test_builders_spell_the_v1_fields_and_refuse_unknown_enum_values() -> None:
    assert updates.tool_call("c1", "Read x", kind="read", locations=[updates.location("/x", 3)]) == {
        "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read x", "kind": "read", "status": "pending",
        "locations": [{"path": "/x", "line": 3}]}
    assert updates.tool_call_update("c1", status="completed", raw_output={"ok": True}) == {
        "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "rawOutput": {"ok": True}}
    assert updates.plan([updates.plan_entry("step")]) == {
        "sessionUpdate": "plan", "entries": [{"content": "step", "priority": "medium", "status": "pending"}]}
    assert updates.thought("hm") == {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}
    assert updates.diff("/x", "new") == {"type": "diff", "path": "/x", "oldText": None, "newText": "new"}
    for bad in (lambda: updates.tool_call("c", "t", kind="explode"), lambda: updates.plan_entry("s", "urgent"),
                lambda: updates.permission_option("o", "O", "maybe"),
                lambda: updates.tool_call_update("c", status="x")):
        with pytest.raises(ValueError):
            bad()
