"""Progress is linear in the reply: the echo agent streams a prompt of N words and of 4N words, one chunk a word,
through the gateway, and the bytes sent as MCP progress, pushed as `notifications/tasks` and written to the
session store grow at most 5x (issue #25: they grew 17x, since every chunk re-sent and re-wrote the text so far).

The sessions are measured on a sqlite and on a memory Store (the bodies and events they are given). The
turn's stream is then replayed from the store, from the start and from a sequence number, and gives back
the reply.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.gateway.agent_service import AgentService
from mcp_agent_kit.gateway.agent_store import AgentSessions
from mcp_agent_kit.gateway.agent_turns import LINE_MAX
from mcp_agent_kit.gateway.agents_config import parse_agents
from mcp_agent_kit.gateway.merged import Gateway
from mcp_agent_kit.store.base import Record
from mcp_agent_kit.store.memory import MemoryStore
from mcp_agent_kit.store.sqlite import SqliteStore
from mcp_agent_kit.transports.http import make_server
from tests.agents.test_agents_acp import AGENT, _config
from tests.http.conftest import Running
from tests.net import until

WORDS = 150


def _size(value: Any) -> int:
    return len(json.dumps(value).encode())


class Counting:
    """A Store (mixed in before its class) counting the bytes of every record body and event written to it."""

    written = 0

    def insert(self, record: Record, *, lease_s: float | None = None) -> bool:
        self.written += _size(record.body)
        return super().insert(record, lease_s=lease_s)  # type: ignore[misc]

    def update(self, record: Record, *, expect_version: int | None = None) -> Record | None:
        self.written += _size(record.body)
        return super().update(record, expect_version=expect_version)  # type: ignore[misc]

    def append(self, channel: str, event: dict[str, Any]) -> int:
        self.written += _size(event)
        return super().append(channel, event)  # type: ignore[misc]


class CountedStore(Counting, MemoryStore):
    pass


class CountedSqlite(Counting, SqliteStore):
    pass


@dataclass
class Measured:
    progress: list[str]  # the MCP progress messages, in order
    progress_bytes: int  # the notifications/progress events on the wire, whole
    pushed: list[dict[str, Any]]  # the tasks/get snapshots handed to notifications/tasks
    stored: int
    result: dict[str, Any]
    turn_id: str


class Run:
    """A gateway in front of the echo agent on the given session store, counting what it writes and sends."""

    def __init__(self, tmp_path: Path, kind: str) -> None:
        self.counted: Counting = CountedSqlite(f"sqlite:///{tmp_path / 'sessions.sqlite'}") if kind == "sqlite" \
            else CountedStore()
        self.store = AgentSessions(self.counted, b"s" * 32, "replica-1")  # type: ignore[arg-type]
        self.service = AgentService(parse_agents(_config(tmp_path, "all")), self.store)
        self.gateway = Gateway({}, agents=self.service)
        self.gateway.start(follow=False)
        self.pushed: list[dict[str, Any]] = []
        tools = self.gateway.agent_tools
        assert tools is not None and tools._notify is not None  # handed over by the tasks extension
        notify = tools._notify

        def counted_notify(task_id: str, principal: str | None, snapshot: dict[str, Any]) -> None:
            self.pushed.append(snapshot)
            notify(task_id, principal, snapshot)

        tools._notify = counted_notify
        self.server = make_server(self.gateway.server.dispatcher, "127.0.0.1", 0)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.http = Running(self.server)

    def reply(self, words: int) -> Measured:
        """invoke_agent (blocking, with a progressToken) echoing `words` words; what it cost."""
        self.pushed.clear()
        before = self.counted.written
        message = " ".join(f"word{n}" for n in range(words))
        _, _, payload = self.http.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "invoke_agent", "arguments": {"agent": AGENT, "message": message},
            "_meta": {"progressToken": "p"}}})
        events = [line[5:] for line in payload.decode().splitlines() if line.startswith("data:")]
        progress = [e for e in events if '"notifications/progress"' in e]
        (result,) = [json.loads(e)["result"] for e in events if '"result"' in e and '"id"' in e]
        session = result["structuredContent"]["session_id"]
        # the turn's last snapshot is pushed as it ends, on the agent's thread: it may land just after the reply
        until(lambda: self.pushed and self.pushed[-1]["status"] != "working", "the turn's final snapshot pushed")
        (turn,) = self.store.turns(session)
        return Measured([json.loads(e)["params"]["message"] for e in progress], sum(len(e) for e in progress),
                        list(self.pushed), self.counted.written - before, result, turn["id"])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.gateway.close()
        self.store.close()


@pytest.fixture(params=["sqlite", "memory"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Run]:
    made = Run(tmp_path, request.param)
    yield made
    made.close()


def test_four_times_the_words_cost_at_most_five_times_the_bytes(run: Run) -> None:
    short, long = run.reply(WORDS), run.reply(4 * WORDS)
    assert long.result["structuredContent"]["text"].count(" word") == 4 * WORDS
    for what in ("progress_bytes", "stored"):
        assert getattr(long, what) <= 5 * getattr(short, what), (what, getattr(short, what), getattr(long, what))
    pushed = [sum(_size(s) for s in m.pushed) for m in (short, long)]
    assert pushed[1] <= 5 * pushed[0], pushed
    # what changed travels, never the text so far: the pieces add up to the reply, each a word or a status line
    text = long.result["structuredContent"]["text"]
    assert "".join(p for p in long.progress if not p.startswith(("Plan:", "Tool:"))) == text
    assert max(len(p) for p in long.progress) < LINE_MAX
    assert all(len(s["statusMessage"]) <= LINE_MAX for s in long.pushed if s["status"] == "working")
    assert any(s["statusMessage"].startswith("\u2026") for s in long.pushed)  # the line so far, its end kept
    assert long.pushed[-1]["status"] == "completed" and long.pushed[-1]["statusMessage"] == text


def test_the_turn_replays_from_its_store_from_any_sequence_number(run: Run) -> None:
    done = run.reply(20)
    events = run.store.turn_events(done.turn_id)
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1))  # gap-free
    text = done.result["structuredContent"]["text"]
    assert "".join(e.get("text", "") for _, e in events) == text
    assert any(e.get("status", "").startswith("Plan:") for _, e in events)
    later = run.store.turn_events(done.turn_id, 10)
    assert later == events[10:]
    assert "".join(e.get("text", "") for _, e in later) == "".join(e.get("text", "") for _, e in events[10:])



def test_another_replica_shows_the_running_turn_from_its_stream() -> None:
    from mcp_agent_kit.gateway.agent_turns import WORKING_TEXT, LiveTurn

    store = MemoryStore()
    here, there = (AgentSessions(store, b"s" * 32, name, own_store=False) for name in ("r1", "r2"))
    try:
        session, _ = here.create_session("alice", "dev/echo", lambda: "s1", None)
        row = here.add_turn(session["id"], "alice", "m1")
        running = LiveTurn(here, row, lambda _: None)
        reader = LiveTurn(there, there.turn(row["id"], "alice") or {}, lambda _: None)
        reader.catch_up()
        assert reader.status_line("") == WORKING_TEXT
        running.streamed("Echo:")
        for n in range(100):
            running.streamed(f" word{n}")
        reader.catch_up()
        assert reader.status_line("") == running.status_line("")
        assert reader.status_line("").startswith("\u2026") and len(reader.status_line("")) == LINE_MAX
        running.progress("Plan: [x] Echo the prompt")
        running.streamed("\nFile")
        reader.catch_up()
        assert reader.status_line("") == "File" and reader.view.seq == 103
    finally:
        here.close()
        there.close()


if __name__ == "__main__":  # pragma: no cover - a manual measurement: python -m tests.agents.test_agents_progress
    import tempfile

    for kind in ("sqlite", "shared"):
        with tempfile.TemporaryDirectory() as tmp:
            measuring = Run(Path(tmp), kind)
            try:
                for n in (200, 800):
                    got = measuring.reply(n)
                    print(kind, n, "words:", len(got.progress), "progress", got.progress_bytes, "bytes;",
                          len(got.pushed), "pushes", sum(_size(s) for s in got.pushed), "bytes; store",
                          got.stored, "bytes", file=sys.stderr)
            finally:
                measuring.close()
