"""Agent sessions on any store (gateway --store URL, --sessions FILE): the same answers everywhere, across replicas.

The contract test runs one sequence of calls on AgentSessions over memory, sqlite and PostgreSQL
and compares every answer (ids and listing positions aside) with a run on a fresh memory store.
The replica tests put two AgentSessions (two replica ids, one secret) on
one store: idempotent creation, turn numbering, lapsed turn leases; and two real gateways in front
of the a2a-sdk fixture agent, one session driven through both with the official mcp client.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tests.agents.conftest as agents_conftest
from mcp_agent_kit.__main__ import main as kit
from mcp_agent_kit.gateway.agent_store import LAPSED, AgentSessions, StoreFull, open_sessions
from mcp_agent_kit.store import open_store
from mcp_agent_kit.store.memory import MemoryStore
from tests.agents.conftest import GatewayRun
from tests.pinned import require

mcp = require("mcp", "mcp==2.3.0 (the interop peer)")
from mcp import Client  # noqa: E402

SECRET = secrets.token_bytes(32)
AGENT = {"namespace": "kagent", "name": "my-first-agent"}


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory:"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_server").new_database())


def exercise(store: Any) -> list[Any]:
    """One run of every method; the answers with ids, positions and clocks taken out."""
    out: list[Any] = []
    ids = iter(f"s{n}" for n in range(100))
    session, created = store.create_session("alice", "a/b", lambda: next(ids), "k1", refs=["t0"])
    out.append((created, {k: session[k] for k in ("principal", "agent", "create_key", "seq", "refs")}))
    again, created = store.create_session("alice", "a/b", lambda: next(ids), "k1")
    out.append((created, again["id"] == session["id"]))
    out.append(store.session(session["id"], "bob"))
    out.append(store.session(session["id"], "alice")["agent"])
    out.append(store.session(42, "alice"))
    out.append(store.take_refs(session["id"]))
    out.append(store.take_refs(session["id"]))
    turns = [store.add_turn(session["id"], "alice", f"m{n}") for n in range(3)]
    out.append([(t["seq"], t["status"], t["state"], t["question"]) for t in turns])
    store.update_turn(turns[0]["id"], status="completed", state="TASK_STATE_COMPLETED", text="4", message="4")
    store.update_turn(turns[1]["id"], status="input_required", question={"type": "ask"})
    store.update_turn(turns[2]["id"], agent_task_id="agent-task-3")
    out.append([(t["seq"], t["status"], t["text"], t["question"], t["agent_task_id"])
                for t in store.turns(session["id"])])
    out.append(store.head(session["id"])["seq"])
    out.append(store.turn(turns[0]["id"], "alice")["text"])
    out.append(store.turn(turns[0]["id"], "bob"))
    out.append(store.turn_by_message(session["id"], "m1")["seq"])
    out.append(store.turn_by_message(session["id"], "nope"))
    # a turn's stream: gap-free numbers per turn, replayed from any number
    out.append([store.append_event(turns[0]["id"], {"text": piece}) for piece in ("Echo:", " a", " b")])
    out.append(store.append_event(turns[1]["id"], {"status": "Plan: [>] echo"}))
    out.append(store.turn_events(turns[0]["id"]))
    out.append(store.turn_events(turns[0]["id"], 1))
    out.append(store.turn_events(turns[0]["id"], 1, 1))
    out.append((store.turn_events(turns[1]["id"]), store.turn_events(turns[2]["id"])))
    for _ in range(4):
        store.create_session("alice", "a/b", lambda: next(ids), None)
    first = store.sessions("alice", "", 3)
    rest = store.sessions("alice", first[-1]["pos"], 10)
    out.append((len(first), len(rest), len({s["id"] for s in first + rest})))
    out.append(store.sessions("bob", "", 10))
    head = store.head(session["id"])
    point, created = store.add_checkpoint(session["id"], "alice", head, ["x"], "r1", lambda: "snap")
    out.append((created, point["history_sequence"], point["head_task_id"], point["refs"], point["snapshot"]))
    again_point, created = store.add_checkpoint(session["id"], "alice", head, ["x"], "r1", lambda: "other")
    out.append((created, again_point["id"] == point["id"]))
    store.add_checkpoint(session["id"], "alice", head, [], None)
    listed = store.checkpoints(session["id"], "alice", "", 1)
    out.append((len(listed), len(store.checkpoints(session["id"], "alice", listed[0]["pos"], 10))))
    out.append(store.checkpoint(point["id"], "bob"))
    keep = store.sessions("alice", "", 10)[-1]["id"]
    streamed, _ = store.create_session("alice", "a/b", lambda: next(ids), None)
    finished = store.add_turn(streamed["id"], "alice", "m")
    store.append_event(finished["id"], {"text": "gone with its session"})
    store.update_turn(finished["id"], status="completed", state="TASK_STATE_COMPLETED")
    out.append(len(store.sweep("9999", keep=[keep])))  # all but the kept one and the one with a working turn
    out.append(store.turn_events(finished["id"]))  # swept with its session (nothing is left)
    out.append(store.session(session["id"], "alice") is not None)
    out.append(store.create_session("alice", "a/b", lambda: next(ids), "k1")[1])  # k1's session stayed
    return out


def test_every_store_answers_alike(store_url: str) -> None:
    alone = open_sessions()
    try:
        expected = exercise(alone)
    finally:
        alone.close()
    shared = AgentSessions(open_store(store_url), SECRET, "replica-1")
    try:
        assert exercise(shared) == expected
        assert shared.secret == SECRET
    finally:
        shared.close()


def test_retention_sweeps_unused_sessions_and_their_keys_and_checkpoints_keep_snapshots() -> None:
    store = MemoryStore()
    shared = AgentSessions(store, SECRET, "r1", own_store=False)
    try:
        idle, _ = shared.create_session("alice", "a/b", lambda: "idle", "k-idle")
        busy, _ = shared.create_session("alice", "a/b", lambda: "busy", None)
        kept, _ = shared.create_session("alice", "a/b", lambda: "kept", None)
        turn = shared.add_turn(idle["id"], "alice", "m1")
        shared.update_turn(turn["id"], status="completed", state="TASK_STATE_COMPLETED")
        point, _ = shared.add_checkpoint(idle["id"], "alice", shared.head(idle["id"]) or {}, [], "r1", lambda: "snap")
        assert point["snapshot"] == "snap"
        shared.add_turn(busy["id"], "alice", "m2")  # still working: never swept
        assert shared.sweep("9999", keep={kept["id"]}) == [idle["id"]]
        assert shared.session(idle["id"], "alice") is None and shared.turns(idle["id"]) == []
        assert shared.checkpoint(point["id"], "alice") is None
        again, created = shared.create_session("alice", "a/b", lambda: "new", "k-idle")  # its key went too
        assert created and again["id"] == "new"
        assert shared.sweep("0000") == []  # nothing is that old
    finally:
        shared.close()


def test_limits_hold_across_replicas() -> None:
    store = MemoryStore()
    one = AgentSessions(store, SECRET, "r1", max_sessions=2, max_turns=2, own_store=False)
    two = AgentSessions(store, SECRET, "r2", max_sessions=2, max_turns=2, own_store=False)
    try:
        session, _ = one.create_session("alice", "a/b", lambda: "s1", None)
        two.create_session("alice", "a/b", lambda: "s2", None)
        with pytest.raises(StoreFull, match="sessions"):
            one.create_session("alice", "a/b", lambda: "s3", None)
        seqs: list[int] = []
        errors: list[str] = []

        def add(store: AgentSessions, n: int) -> None:
            try:
                seqs.append(store.add_turn(session["id"], "alice", f"m{n}")["seq"])
            except StoreFull as exc:
                errors.append(str(exc))
        threads = [threading.Thread(target=add, args=(s, n)) for n, s in enumerate((one, two, one, two))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        assert sorted(seqs) == [1, 2] and len(errors) == 2  # numbered by compare-and-set, never twice
    finally:
        one.close()
        two.close()


def test_a_turn_whose_replica_died_is_failed_by_another() -> None:
    store = MemoryStore()
    dead = AgentSessions(store, SECRET, "dead", lease_s=1.0, own_store=False)
    alive = AgentSessions(store, SECRET, "alive", lease_s=1.0, own_store=False)
    try:
        session, _ = dead.create_session("alice", "a/b", lambda: "s1", None)
        running = alive.add_turn(session["id"], "alice", "kept")  # alive renews this one
        orphan = dead.add_turn(session["id"], "alice", "lost")
        dead.close()  # no more renewals: as after kill -9
        deadline = time.monotonic() + 5
        while alive.turn(orphan["id"], "alice")["status"] != "failed":  # type: ignore[index]
            assert time.monotonic() < deadline, "the orphaned turn was never failed"
            time.sleep(0.05)
        assert alive.turn(orphan["id"], "alice")["text"] == LAPSED  # type: ignore[index]
        assert alive.turn(running["id"], "alice")["status"] == "working"  # type: ignore[index]
    finally:
        alive.close()


async def _across(first: str, second: str) -> list[Any]:
    async with Client(first) as one, Client(second) as two:
        started = await one.call_tool("invoke_agent", {"agent": AGENT, "message": "What is 2+2?", "message_id": "k1"})
        session = started.structured_content["session_id"]
        retried = await two.call_tool("invoke_agent", {"agent": AGENT, "message": "What is 2+2?", "message_id": "k1"})
        further = await two.call_tool("invoke_agent", {"session_id": session, "message": "Multiply that by 10."})
        listed = await one.call_tool("list_sessions", {})
        checkpoint = await one.call_tool("create_session_checkpoint", {
            "session_id": session, "expected_head_task_id": further.structured_content["task_id"],
            "request_id": "c1"})
        fork = await two.call_tool("fork_session", {
            "checkpoint_id": checkpoint.structured_content["checkpoint"]["id"], "request_id": "f1"})
        forked = await one.call_tool("invoke_agent", {
            "session_id": fork.structured_content["session"]["id"], "message": "Multiply that by 2."})
        return [started, retried, further, listed, forked]


def test_two_gateways_on_one_store_serve_one_session(agent_url: str, gateway_of: Callable[..., GatewayRun],
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    replicas = iter(("gateway-1", "gateway-2"))
    monkeypatch.setattr(agents_conftest, "sessions_at",
                        lambda path: AgentSessions(open_store(url), SECRET, next(replicas)))
    config = {"agents": {"kagent/my-first-agent": {"a2a": agent_url}}}
    one, two = gateway_of(config), gateway_of(config)
    started, retried, further, listed, forked = asyncio.run(asyncio.wait_for(_across(one.url, two.url), 60))
    assert started.structured_content["text"] == "4"
    assert retried.structured_content == started.structured_content  # the retry on gateway 2 ran nothing
    assert further.structured_content["text"] == "40"
    assert [s["id"] for s in listed.structured_content["sessions"]] == [started.structured_content["session_id"]]
    assert forked.structured_content["text"] == "80"


def test_the_gateway_command_needs_the_secret_for_a_shared_store(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_AGENT_KIT_SECRET", raising=False)
    config = tmp_path / "agents.json"
    config.write_text('{"agents": {"kagent/a": {"a2a": "http://127.0.0.1:9"}}}')
    assert kit(["gateway", str(config), "--store", f"sqlite:///{tmp_path / 's.db'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--secret-file" in err[0]
    (tmp_path / "secret").write_text("x" * 40)
    assert kit(["gateway", str(config), "--store", f"sqlite:///{tmp_path / 's.db'}", "--secret-file",
                         str(tmp_path / "secret"), "--sessions", str(tmp_path / "f.sqlite")]) == 2
    assert "not both" in capsys.readouterr().err
