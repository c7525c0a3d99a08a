"""A session file of the older one-process schema (gateway/agent_sessions.py, removed) opens through
today's store and keeps everything: sessions, turns, their event logs, checkpoints, idempotency keys,
the secret sealing task ids. fixtures/agent_sessions_v0.db was written by that code itself (the
script that made it is in the history: `git log -- tests/gateway/fixtures/make_agent_sessions_v0.py`):
alice's session "session-1" (create_key "k1", refs ["t0"]), two turns with events (m1 completed,
m2 left working by a gateway that died), a checkpoint under request_id "r1", bob's "session-2".
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mcp_agent_kit.__main__ import main as kit
from mcp_agent_kit.gateway.agent_store import RESTARTED, AgentSessions, open_sessions, sessions_url
from mcp_agent_kit.gateway.agent_store_v0 import migrate
from mcp_agent_kit.store import open_store

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "agent_sessions_v0.db"
SECRET_V0 = "cc8966e648e8d6285ee54a9dbe0ef6540f36d02f581381f2a92c5768cced0bd0"


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    copy = tmp_path / "agents.json.sessions.sqlite"
    shutil.copyfile(FIXTURE, copy)
    return copy


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def check_everything_is_there(sessions: AgentSessions) -> None:
    assert sessions.secret == bytes.fromhex(SECRET_V0)  # task ids handed out before still open
    session = sessions.session("session-1", "alice")
    assert session is not None and session["agent"] == "kagent/echo" and session["seq"] == 2
    assert sessions.session("session-1", "bob") is None and sessions.session_any("session-2") is not None
    assert sessions.take_refs("session-1") == ["t0"]
    assert [s["id"] for s in sessions.sessions("alice", "", 10)] == ["session-1"]
    assert [s["id"] for s in sessions.sessions("bob", "", 10)] == ["session-2"]
    first, second = sessions.turns("session-1")
    assert (first["seq"], first["message_id"], first["status"], first["text"], first["agent_task_id"]) == (
        1, "m1", "completed", "Echo: hello", "agent-task-1")
    assert (second["seq"], second["status"], second["state"], second["text"]) == (
        2, "failed", "TASK_STATE_FAILED", RESTARTED)  # working when its gateway died, as the old store said
    assert sessions.head("session-1") == second and sessions.turn_by_message("session-1", "m1") == first
    assert sessions.turn(first["id"], "alice") == first and sessions.turn(first["id"], "bob") is None
    assert sessions.turn_events(first["id"]) == [(1, {"status": "Plan: [>] echo"}), (2, {"text": "Echo:"}),
                                                 (3, {"text": " hello"})]
    assert sessions.turn_events(second["id"], 1) == [(2, {"text": " again"})]
    assert sessions.append_event(second["id"], {"text": "!"}) == 3  # the log goes on gap-free
    (point,) = sessions.checkpoints("session-1", "alice", "", 10)
    assert (point["head_task_id"], point["history_sequence"], json.loads(point["refs"]), point["request_id"],
            point["snapshot"]) == ("agent-task-1", 1, ["agent-task-1"], "r1", "snapshot-1")
    assert sessions.checkpoint(point["id"], "alice") == {k: v for k, v in point.items() if k != "pos"}
    # the idempotency keys came along: a retried message_id / request_id finds what it made
    again, created = sessions.create_session("alice", "kagent/echo", lambda: "new", "k1")
    assert not created and again["id"] == "session-1"
    head = sessions.head("session-1") or {}
    retried, created = sessions.add_checkpoint("session-1", "alice", head, [], "r1", lambda: "other")
    assert not created and retried["id"] == point["id"]
    # new records list after the moved ones
    sessions.create_session("alice", "kagent/echo", lambda: "session-3", None)
    assert [s["id"] for s in sessions.sessions("alice", "", 10)] == ["session-1", "session-3"]


def test_an_old_session_file_is_migrated_on_open_and_keeps_everything(old_file: Path) -> None:
    assert {"sessions", "turns", "checkpoints", "turn_events", "meta"} <= tables(old_file)
    sessions = open_sessions(sessions_url(str(old_file)), sole=True)
    try:
        check_everything_is_there(sessions)
    finally:
        sessions.close()
    assert not {"sessions", "turns", "checkpoints", "turn_events", "meta"} & tables(old_file)
    assert {"records", "events"} <= tables(old_file)


def test_opening_it_twice_migrates_once(old_file: Path) -> None:
    sessions = open_sessions(sessions_url(str(old_file)))
    try:
        events = sessions.turn_events(sessions.turns("session-1")[0]["id"])
    finally:
        sessions.close()
    store = open_store(sessions_url(str(old_file)))
    try:
        assert migrate(store) == 0  # nothing of the old schema is left to move
        again = AgentSessions(store, None, "r2", own_store=False)
        try:
            assert again.turn_events(again.turns("session-1")[0]["id"]) == events  # no event twice
            assert [s["id"] for s in again.sessions("alice", "", 10)] == ["session-1"]
            assert again.secret == bytes.fromhex(SECRET_V0)
        finally:
            again.close()
    finally:
        store.close()


def test_the_gateway_command_opens_an_old_file_given_with_sessions(old_file: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """--sessions FILE is sqlite:///FILE: an old file is migrated; one that cannot be opened is one stderr line."""
    from mcp_agent_kit.gateway.agents_config import parse_agents
    from mcp_agent_kit.gateway.cli import _agent_service, gateway_parser

    config = tmp_path / "agents.json"
    config.write_text('{"agents": {"kagent/echo": {"a2a": "http://127.0.0.1:9"}}}')
    agents = parse_agents(json.loads(config.read_text()))
    service = _agent_service(agents, gateway_parser().parse_args([str(config), "--sessions", str(old_file)]), None,
                             None)
    try:
        assert service.store.secret == bytes.fromhex(SECRET_V0) and service.store.session_any("session-1")
    finally:
        service.close()
        service.store.close()
    default = _agent_service(agents, gateway_parser().parse_args([str(config)]), None, None)  # CONFIG.sessions.sqlite
    try:
        assert default.store.store.url == sessions_url(f"{config}.sessions.sqlite")
    finally:
        default.close()
        default.store.close()
    assert kit(["gateway", str(config), "--sessions", str(tmp_path / "no" / "such" / "dir.sqlite")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--sessions" in err[0], err
