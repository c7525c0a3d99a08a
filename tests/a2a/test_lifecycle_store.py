"""The transition table and the stores, checked directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_agent_kit.a2a import lifecycle
from mcp_agent_kit.a2a.listing import list_tasks
from mcp_agent_kit.a2a.protocol import now_iso, parse_iso
from mcp_agent_kit.a2a.store import MemoryTaskStore, TaskStore
from mcp_agent_kit.a2a.task_file import open_task_file
from mcp_agent_kit.store import StoreError

STATES = sorted(lifecycle.STATES)


def test_terminal_states_have_no_exit() -> None:
    for state in lifecycle.TERMINAL:
        assert lifecycle.TRANSITIONS[state] == frozenset()
    for state in set(lifecycle.STATES) - lifecycle.TERMINAL:
        assert lifecycle.TRANSITIONS[state] >= lifecycle.TERMINAL, state
    assert "TASK_STATE_SUBMITTED" not in set().union(*lifecycle.TRANSITIONS.values())


@given(st.lists(st.sampled_from([*STATES, "TASK_STATE_UNSPECIFIED", "completed"]), max_size=12))
def test_random_walks_never_leave_a_terminal_state(steps: list[str]) -> None:
    state = "TASK_STATE_SUBMITTED"
    for target in steps:
        if lifecycle.can_move(state, target):
            state = lifecycle.advance(state, target)
        else:
            with pytest.raises(lifecycle.IllegalTransition):
                lifecycle.advance(state, target)
        assert state in lifecycle.STATES


def test_timestamps_are_utc_with_z() -> None:
    stamp = now_iso(0.5)
    assert stamp == "1970-01-01T00:00:00.500Z"
    assert parse_iso(stamp) == 0.5
    with pytest.raises(ValueError):
        parse_iso("2026-01-01T00:00:00")


def _task(n: int, state: str = "TASK_STATE_COMPLETED", owner: str = "", context: str = "c") -> dict[str, Any]:
    return {
        "id": f"t{n:03d}",
        "contextId": context,
        "status": {"state": state, "timestamp": now_iso(1000 + n)},
        "history": [],
        "_owner": owner,
    }


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    if request.param == "memory":
        return MemoryTaskStore()
    return open_task_file(str(tmp_path / "s.db"), "replica", 30.0)


def test_insert_never_overwrites(store: TaskStore) -> None:
    store.insert(_task(1, owner="alice"))
    with pytest.raises(StoreError):
        store.insert(_task(1, owner="bob"))
    got = store.get("t001")
    assert got is not None and got["_owner"] == "alice"


def test_listing_filters_and_pages(store: TaskStore) -> None:
    for n in range(7):
        store.insert(_task(n, "TASK_STATE_COMPLETED" if n % 2 else "TASK_STATE_FAILED", context="a" if n < 5 else "b"))
    store.insert(_task(99, owner="someone-else"))
    seen: list[str] = []
    token = ""
    while True:
        page = list_tasks(store, "", {"pageSize": 3, "pageToken": token} if token else {"pageSize": 3})
        assert page["totalSize"] == 7 and page["pageSize"] == 3
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert seen == [f"t{n:03d}" for n in reversed(range(7))]
    assert [t["id"] for t in list_tasks(store, "", {"contextId": "b"})["tasks"]] == ["t006", "t005"]
    assert len(list_tasks(store, "", {"status": "TASK_STATE_FAILED"})["tasks"]) == 4
    after = list_tasks(store, "", {"statusTimestampAfter": now_iso(1004)})
    assert [t["id"] for t in after["tasks"]] == ["t006", "t005"]


def test_memory_store_bound_and_ttl() -> None:
    store = MemoryTaskStore(max_tasks=3, ttl=3600)
    for n in range(3):
        store.insert(_task(n, "TASK_STATE_WORKING"))
    with pytest.raises(StoreError, match="full"):
        store.insert(_task(9))
    done = store.get("t000")
    assert done is not None
    done["status"] = {"state": "TASK_STATE_COMPLETED", "timestamp": now_iso()}
    store.save(done)
    store.insert(_task(9))  # the finished task makes room
    assert store.get("t000") is None and store.get("t009") is not None
    now = [1000.0]
    short = MemoryTaskStore(ttl=60.0, clock=lambda: now[0])
    short.insert(_task(1))
    now[0] += 60.5
    short.insert(_task(2))
    assert short.get("t001") is None


def test_a_subscriber_that_falls_behind_is_dropped_and_memory_stays_bounded() -> None:
    import queue

    from mcp_agent_kit.a2a import engine as engine_module
    from mcp_agent_kit.a2a.engine import MAX_BEHIND, TaskEngine
    from mcp_agent_kit.a2a.toolagent import ToolAgent
    from tests.a2a import agents

    engine = TaskEngine(ToolAgent(agents.server))
    stalled: queue.SimpleQueue[dict[str, object]] = queue.SimpleQueue()
    keeping_up: queue.SimpleQueue[dict[str, object]] = queue.SimpleQueue()
    engine._subs["t1"] = [stalled, keeping_up]
    received = 0
    for n in range(5 * MAX_BEHIND):
        engine._publish("t1", {"n": n})
        assert stalled.qsize() <= MAX_BEHIND + 1
        while not keeping_up.empty():
            keeping_up.get()
            received += 1
    assert received == 5 * MAX_BEHIND and engine._subs["t1"] == [keeping_up]
    events = [stalled.get() for _ in range(stalled.qsize())]
    assert len(events) == MAX_BEHIND + 1 and events[-1] is engine_module._END  # its stream then ends


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_finished_tasks_make_room_and_only_unfinished_ones_refuse(kind: str, tmp_path: Path) -> None:
    """The caps are the repository's, the same on every backend (counted by the store)."""
    from mcp_agent_kit.store import open_store

    url = "memory:" if kind == "memory" else f"sqlite:///{tmp_path / 'caps.db'}"
    store = TaskStore(open_store(url), max_tasks=6, max_per_owner=3)
    for n in range(10):  # alice's finished tasks: her own oldest makes room each time
        store.insert(_task(n, owner="alice"))
    assert [store.get(f"t{n:03d}") is not None for n in range(10)] == [False] * 7 + [True] * 3
    for n in range(10, 13):
        store.insert(_task(n, state="TASK_STATE_WORKING", owner="bob"))
    with pytest.raises(StoreError, match="unfinished"):
        store.insert(_task(13, state="TASK_STATE_WORKING", owner="bob"))  # bob's own cap, all running
    store.insert(_task(14, owner="carol"))  # the store is full: alice's oldest finished task goes
    assert store.get("t007") is None and store.get("t014") is not None
    if kind == "sqlite":  # the counts are the file's: they survive a restart
        store.close()
        again = TaskStore(open_store(url), max_tasks=6, max_per_owner=3)
        with pytest.raises(StoreError, match="unfinished"):
            again.insert(_task(15, state="TASK_STATE_WORKING", owner="bob"))
        again.close()
    else:
        store.close()
