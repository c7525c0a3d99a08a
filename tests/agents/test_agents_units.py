"""Units of the agents feature: the agents config, questions as forms and answers back, sealed task ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway.agent_backend import Question
from mcp_agent_kit.gateway.agent_questions import HITL, AnswerError, answer, elicitation
from mcp_agent_kit.gateway.agent_turns import open_id, seal_id
from mcp_agent_kit.gateway.agents_config import parse_agents
from mcp_agent_kit.gateway.config import ConfigError, parse_config


def test_agent_keys_and_kinds() -> None:
    specs = parse_agents({"agents": {
        "solo": {"a2a": "http://127.0.0.1:9/card.json"},
        "dev/claude": {"acp": {"command": "claude-agent-acp", "args": ["--x"], "env": {"A": "1"}, "cwd": "/srv/repo",
                               "approve": "reads", "max_concurrent": 2, "idle": 30}},
    }})
    assert specs["default/solo"].url == "http://127.0.0.1:9/card.json" and specs["default/solo"].kind == "a2a"
    claude = specs["dev/claude"]
    assert (claude.command, claude.args, claude.env, claude.cwd, claude.approve, claude.max_concurrent, claude.idle) \
        == ("claude-agent-acp", ("--x",), {"A": "1"}, "/srv/repo", "reads", 2, 30.0)
    assert parse_config({"agents": {"a": {"a2a": "http://x"}}}) == {}  # agents alone need no mcpServers
    handed = parse_agents({"agents": {"a": {"acp": {"command": "c", "mcpServers": {
        "fs": {"command": "/bin/fs", "env": {"K": "v"}}, "web": {"url": "https://h/mcp", "type": "sse"}}}}}})
    assert handed["default/a"].mcp_servers == (
        {"name": "fs", "command": "/bin/fs", "args": [], "env": [{"name": "K", "value": "v"}]},
        {"type": "sse", "name": "web", "url": "https://h/mcp", "headers": []})


@pytest.mark.parametrize(("entry", "says"), [
    ({"a/b/c": {"a2a": "http://x"}}, "namespace/name"),
    ({"a": {"a2a": "ftp://x"}}, "http(s)"),
    ({"a": {"a2a": "http://x", "acp": {"command": "c"}}}, "exactly one"),
    ({"a": {"acp": {"command": "c", "approve": "maybe"}}}, "approve"),
    ({"a": {"acp": {"command": "c", "cwd": "rel"}}}, "absolute"),
    ({"a": {"acp": {"command": "c", "bogus": 1}}}, "unknown acp keys"),
    ({"a": {"a2a": "http://x", "max_concurrent": 0}}, "max_concurrent"),
    ({"a": {"acp": {}}}, "command"),
    ({"a": {"acp": {"command": "c", "mcpServers": []}}}, "acp mcpServers must be an object"),
    ({"a": {"acp": {"command": "c", "mcpServers": {"x": {"args": []}}}}}, "mcpServers 'x': needs a \"command\""),
    ({"a": {"acp": {"command": "c", "mcpServers": {"x": {"url": "ws://h"}}}}}, "mcpServers 'x': url must be"),
    ({"a": {"acp": {"command": "c", "mcpServers": {"x": {"url": "http://h", "type": "ws"}}}}}, "'x': type must"),
    ({"a": {"acp": {"command": "c", "mcpServers": {"x": {"command": "s", "cwd": "/"}}}}}, "'x': unknown keys"),
    ({"a": {"acp": {"command": "c", "mcpServers": {"x": {"command": "s", "env": {"A": 1}}}}}}, "'x' env must"),
    ({"a": {"acp": {"command": "c", "mcpServers": {"x": {"url": "http://h", "headers": []}}}}}, "'x' headers must"),
])
def test_bad_agent_entries_name_the_problem(entry: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_agents({"agents": entry})


ASK = Question("m1", "Pick", {"hitl": {"type": "ask_user_request", "id": "q9", "questions": [
    {"question": "DB?", "choices": ["a", "b"], "multiple": False},
    {"question": "Regions?", "choices": ["eu", "us"], "multiple": True}]}})
APPROVE = Question("m2", "Approve", {"hitl": {"type": "tool_approval_request", "tools": [
    {"id": "t1", "name": "rm"}, {"id": "t2", "name": "ls"}]}})


def test_hitl_forms() -> None:
    props = elicitation(ASK)["params"]["requestedSchema"]["properties"]
    assert props["response_1"] == {"type": "string", "enum": ["a", "b"], "description": "DB?"}
    assert props["response_2"] == {"type": "array", "items": {"type": "string", "enum": ["eu", "us"]},
                                   "description": "Regions?"}
    approvals = elicitation(APPROVE)["params"]["requestedSchema"]
    assert approvals["required"] == ["approve_1", "approve_2"]
    options = Question("p", "Allow?", {"options": [{"optionId": "allow"}, {"optionId": "reject"}]})
    assert elicitation(options)["params"]["requestedSchema"]["properties"]["response"]["enum"] == ["allow", "reject"]


def test_answers_in_the_agents_terms() -> None:
    text, meta = answer(ASK, {"action": "accept", "content": {"response_1": "a", "response_2": ["eu", "us"]}})
    assert meta == {HITL: {"type": "ask_user_response", "id": "q9", "answers": [{"answer": ["a"]},
                                                                                 {"answer": ["eu", "us"]}]}}
    assert text == "a\neu, us"
    _, declined = answer(APPROVE, {"action": "decline"})
    assert declined == {HITL: {"type": "tool_approval_response", "approvals": [
        {"id": "t1", "approved": False}, {"id": "t2", "approved": False}]}}
    with pytest.raises(AnswerError, match="every approval"):
        answer(APPROVE, {"action": "accept", "content": {"approve_1": True}})
    with pytest.raises(AnswerError, match="every question"):
        answer(ASK, {"action": "accept", "content": {"response_1": "a"}})
    with pytest.raises(AnswerError):
        answer(ASK, {"action": "maybe"})
    assert answer(Question("k", "Name?"), {"action": "cancel"}) == ("The user cancelled the request.", None)


def test_sealed_ids_bind_the_principal() -> None:
    secret = b"s" * 32
    sealed = seal_id(secret, "turn-1", "alice")
    assert open_id(secret, sealed, "alice") == "turn-1"
    assert open_id(secret, sealed, "bob") is None
    assert open_id(b"x" * 32, sealed, "alice") is None
    for bad in ("v1.", "v2.a.b", "v1.!!.??", sealed + "x", 7, None):
        assert open_id(secret, bad, "alice") is None


def test_cli_refuses_a_bad_agents_section_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"agents": {"a/b/c": {"a2a": "http://x"}}}))
    done = subprocess.run([sys.executable, "-m", "mcp_agent_kit", "gateway", str(config)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "namespace/name" in done.stderr and "Traceback" not in done.stderr


def test_the_store_keeps_its_limits() -> None:
    from mcp_agent_kit.gateway.agent_store import AgentSessions, StoreFull
    from mcp_agent_kit.store.memory import MemoryStore

    store = AgentSessions(MemoryStore(), None, "r1", max_sessions=1, max_turns=1)
    session, created = store.create_session("alice", "a/b", lambda: "s1", None)
    assert created
    with pytest.raises(StoreFull, match="sessions"):
        store.create_session("alice", "a/b", lambda: "s2", None)
    assert store.create_session("bob", "a/b", lambda: "s3", None)[1]  # another caller is not affected
    store.add_turn(session["id"], "alice", "m1")
    with pytest.raises(StoreFull, match="turns"):
        store.add_turn(session["id"], "alice", "m2")
    assert [t["message_id"] for t in store.turns(session["id"])] == ["m1"]  # the refused turn left nothing
    assert store.session(session["id"], "alice")["seq"] == 1  # type: ignore[index]
