"""Board replicas on a real PostgreSQL (issue #28, item 4): several board processes share one board.

Two in-process replicas on one store, one data directory and one repository: a task created on replica one runs
there exactly once, is followed on replica two (its "task" listener and the MCP task_events long-poll see replica
one's transcript appends, in order) and answered there (the answer reaches the agent waiting on replica one; a
wrong answer is refused as the runner refuses it; a question is never answered twice); its diff and accept work
on replica two. Then `kill -9` of a scheduling replica that is a real `mcp-agent-kit board --store postgresql://`
process: the in-process replica takes the scheduler's lease over within the lease, puts the dead replica's
unchanged task back in the queue (its transcript names the replica that stopped, the dead replica's agent is
stopped) and runs the queue; no task runs twice at once, counted by the transcript's turn_start events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_agent_kit.board.board import Board
from mcp_agent_kit.board.config import parse_config
from mcp_agent_kit.board.errors import BoardError, TaskInvalid
from mcp_agent_kit.board.mcp_tools import TaskTools
from mcp_agent_kit.store import open_store
from mcp_agent_kit.store.base import Store
from mcp_agent_kit.store.leases import SoleLease
from mcp_agent_kit.store.memory import MemoryStore
from tests.board.boards import WAIT_S, echo_config, settled, task_when
from tests.board.conftest import run_git
from tests.net import free_port, until, wait_listening

LEASE_S = 2.0  # the kill test's lease: the survivor takes over within about this


def kinds(board: Board, task_id: str) -> list[dict[str, Any]]:
    return list(board.task_events(task_id)["events"])


def turn_starts(board: Board, task_id: str) -> list[str]:
    """The replica of each turn the task's transcript shows started (one per run)."""
    return [str(event.get("replica")) for event in kinds(board, task_id) if event["kind"] == "turn_start"]


@pytest.fixture
def stores(pg_url: str) -> Iterator[list[Store]]:
    opened = [open_store(pg_url), open_store(pg_url)]
    yield opened
    for store in opened:
        store.close()


def test_a_task_runs_once_on_one_replica_and_is_watched_and_answered_on_the_other(
        tmp_path: Path, repo: Path, stores: list[Store]) -> None:
    config = parse_config(echo_config(tmp_path / "sessions", approve="ask"))
    one = Board(config, repo, store=stores[0], data_dir=tmp_path / "data", replica="one")
    two = Board(config, repo, store=stores[1], data_dir=tmp_path / "data", replica="two")  # the same data dir
    tools = TaskTools(two)
    try:
        with pytest.raises(BoardError, match="another board runs on the data directory"):
            Board(config, repo, data_dir=tmp_path / "data")  # a single-process (sqlite) board beside replicas
        one.start()
        two.start()
        assert one.leader.held() and not two.leader.held()  # exactly one schedules
        heard: list[int] = []
        two.add_listener("task", lambda change: heard.append(change["seq"]) if change["task"]["id"] == "t1" else None)
        one.create_task("hello replicas", task_id="t1")
        polled = poll(tools, two, [], "question")  # the MCP long-poll on replica two, until the question shows
        assert settled(two, "t1", "needs_input")["question"]["options"]
        assert one.runner.run_of("t1") is not None and two.runner.run_of("t1") is None

        with pytest.raises(TaskInvalid, match="not one of the question's options"):
            two.answer_task("t1", "maybe")  # checked where the agent waits, refused here
        answered = two.answer_task("t1", "allow-once")
        assert answered["state"] in ("running", "review") and answered["question"] is None
        for again in (two, one):  # the question is gone: a second answer is refused on every replica
            with pytest.raises(BoardError):
                again.answer_task("t1", "allow-once")
        polled = poll(tools, two, polled, "turn_end")
        done = settled(two, "t1", "review")  # the state event follows the move: wait for it too
        task_when(two, "t1", lambda task: any(e.get("action") == "finish" for e in kinds(two, "t1")))
        events = kinds(two, "t1")
        appended = [event["seq"] for event in events if event["kind"] != "state"]  # by replica one's runner
        task_when(two, "t1", lambda task: set(appended) <= set(heard))
        diff = two.task_diff("t1")
        accepted = two.accept_task("t1")
    finally:
        tools.close()
        two.close()
        one.close()
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert polled == events[:len(polled)]  # the long-poll saw replica one's transcript, in order
    assert set(appended) <= set(heard)  # replica two's "task" listener heard of each of replica one's appends
    assert turn_starts(two, "t1") == ["one"]  # it ran once, on replica one
    assert [e["outcome"] for e in events if e["kind"] == "answer"] == ["selected"]
    assert [e["action"] for e in events if e["kind"] == "state"] == ["start", "ask", "answer", "finish"]
    assert done["result"] and [f["path"] for f in diff["files"]] == ["echo.txt"]
    assert accepted["state"] == "done"
    assert run_git(repo, "show", f"{done['branch']}:echo.txt") == "hello replicas"


def poll(tools: TaskTools, board: Board, polled: list[dict[str, Any]], until_kind: str) -> list[dict[str, Any]]:
    """Long-poll task t1's events on `board` (the MCP tool, as a client would) until one of `until_kind` came;
    a poll woken by a change without a new event comes back empty and polls again (bounded)."""
    polled = list(polled)
    for _ in range(200):
        if any(event["kind"] == until_kind for event in polled):
            return polled
        page = tools.task_events(board, {"task_id": "t1", "after": polled[-1]["seq"] if polled else 0, "wait": 30})
        polled += page["events"]
    raise AssertionError(f"the long-poll never showed a {until_kind} event: {polled}")


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_the_scheduler_lease_is_held_by_one_taken_when_it_lapses_and_handed_on_when_released() -> None:
    store, clock, changes = MemoryStore(), Clock(), []
    one = SoleLease(store, "board_scheduler", "scheduler", "one", 30.0, clock=clock,
                    on_change=lambda held: changes.append(("one", held)))
    two = SoleLease(store, "board_scheduler", "scheduler", "two", 30.0, clock=clock,
                    on_change=lambda held: changes.append(("two", held)))
    assert one.keep() and not two.keep() and one.keep()  # renewed while held; the other waits
    clock.now += 31.0  # one stalled past its lease
    assert two.keep() and not one.keep()  # two took it over; one's renewal finds it lost
    assert changes == [("one", True), ("two", True), ("one", False)]
    two.close()  # released: one takes it at once, no lease later
    assert one.keep() and one.held() and not two.held()
    one.close()
    store.close()


def test_a_sqlite_store_keeps_the_data_directory_to_one_process(tmp_path: Path, repo: Path) -> None:
    config = parse_config(echo_config(tmp_path / "sessions"))
    stores = [open_store(f"sqlite:///{tmp_path / 'board.db'}") for _ in range(2)]
    try:
        with Board(config, repo, store=stores[0], data_dir=tmp_path / "data") as board:
            assert not board.replicated
            with pytest.raises(BoardError, match="another board runs on the data directory"):
                Board(config, repo, store=stores[1], data_dir=tmp_path / "data")
    finally:
        for store in stores:
            store.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def test_kill_9_of_the_scheduling_replica_hands_the_queue_over_and_no_task_runs_twice(
        tmp_path: Path, repo: Path, pg_url: str) -> None:
    document = echo_config(tmp_path / "sessions", approve="ask", max_concurrent=1)
    (tmp_path / "board.json").write_text(json.dumps(document))
    port = free_port()
    data = tmp_path / "data"
    command = [sys.executable, "-m", "mcp_agent_kit", "board", str(tmp_path / "board.json"), "--repo", str(repo),
               "--data-dir", str(data), "--store", pg_url, "--replica", "a", "--store-lease", str(LEASE_S),
               "--http", f"127.0.0.1:{port}", "--no-a2a"]
    with open(tmp_path / "a.log", "wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    store = open_store(pg_url)
    b = Board(parse_config(document), repo, store=store, data_dir=data, replica="b", lease_s=LEASE_S)
    try:
        wait_listening(port, proc, timeout=WAIT_S)  # replica a serves once it has started (and took the lease)
        b.start()
        assert not b.leader.held()
        b.create_task("first", task_id="t1")
        b.create_task("second", task_id="t2")
        settled(b, "t1", "needs_input")  # replica a runs it; its agent waits for an answer
        note = json.loads((data / "agents" / "t1.json").read_text())
        assert note["replica"] == "a" and _alive(note["pid"])
        assert b.get_task("t2")["state"] == "queued"  # max_concurrent 1: it waits for t1
        proc.kill()
        proc.wait(WAIT_S)

        until(b.leader.held, "replica b to take the scheduler's lease over", seconds=3 * LEASE_S + WAIT_S / 3)
        task_when(b, "t1", lambda task: task["state"] == "needs_input" and len(turn_starts(b, "t1")) == 2)
        until(lambda: not _alive(note["pid"]), "the dead replica's agent to be stopped", seconds=WAIT_S)
        b.answer_task("t1", "allow-once")
        settled(b, "t1", "review")
        settled(b, "t2", "needs_input")
        b.answer_task("t2", "allow-once")
        settled(b, "t2", "review")
        for task_id in ("t1", "t2"):  # the state event follows the move: wait for it too
            task_when(b, task_id, lambda task: any(e.get("action") == "finish" for e in kinds(b, task["id"])))
        first, second = kinds(b, "t1"), kinds(b, "t2")
        ran = turn_starts(b, "t1"), turn_starts(b, "t2")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT_S)
        b.close()
        store.close()
    assert ran == (["a", "b"], ["b"])  # each run's turn_start: t1 once on a, then (requeued) once on b; t2 once
    assert [e["action"] for e in first if e["kind"] == "state"] == [
        "start", "ask", "requeue", "start", "ask", "answer", "finish"]
    said = [e["text"] for e in first if e["kind"] == "error"]
    assert said == ["the replica a running this task stopped: the task is back in the queue (its workspace had no "
                    "changes)"]
    assert [e["action"] for e in second if e["kind"] == "state"] == ["start", "ask", "answer", "finish"]
    assert not os.path.exists(data / "agents" / "t1.json")
