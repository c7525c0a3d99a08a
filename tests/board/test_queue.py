"""board.queue: the scheduler's pure decision — priority then creation order, the board's and each agent's
limits, readiness, blockers, in-place exclusivity, and a `waiting` text for every task that does not start;
plus a randomized check (fixed seed) of the invariants over many boards."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from mcp_agent_kit.board.queue import RANK, AgentSlots, BoardLimits, plan
from mcp_agent_kit.board.states import ACTIVE, STATES

ECHO = {"echo": AgentSlots()}


def task(task_id: str, state: str = "queued", *, priority: str = "normal", agent: str = "echo",
         blocked_by: tuple[str, ...] = (), workspace: str | None = None) -> dict[str, Any]:
    return {"id": task_id, "state": state, "priority": priority, "agent": agent, "blockedBy": list(blocked_by),
            "workspace": workspace}


def test_priority_first_then_creation_order_within_the_board_limit() -> None:
    tasks = [task("low1", priority="low"), task("n1"), task("u1", priority="urgent"), task("h1", priority="high"),
             task("n2"), task("u2", priority="urgent")]
    decided = plan(tasks, BoardLimits(max_concurrent=3, agents=ECHO))
    assert decided.start == ("u1", "u2", "h1")
    assert decided.waiting["u1"] is None
    assert decided.waiting["n1"] == decided.waiting["n2"] == decided.waiting["low1"] == (
        "capacity: the board runs 3 of its 3 tasks at once")
    unlimited = plan(tasks, BoardLimits(agents=ECHO))
    assert unlimited.start == ("u1", "u2", "h1", "n1", "n2", "low1")


def test_running_and_paused_tasks_hold_their_slots() -> None:
    tasks = [task("r", "running"), task("p", "needs_input"), task("v", "review"), task("q")]
    assert plan(tasks, BoardLimits(max_concurrent=2, agents=ECHO)).start == ()
    assert plan(tasks, BoardLimits(max_concurrent=3, agents=ECHO)).start == ("q",)


def test_a_busy_agent_queues_and_other_agents_go_on() -> None:
    agents = {"echo": AgentSlots(max_concurrent=1), "qwen": AgentSlots()}
    tasks = [task("e0", "running"), task("e1", priority="urgent"), task("q1", agent="qwen", priority="low")]
    decided = plan(tasks, BoardLimits(max_concurrent=5, agents=agents))
    assert decided.start == ("q1",)
    assert decided.waiting["e1"] == "capacity: agent echo runs 1 of its 1 tasks at once"


def test_agents_not_ready_or_unknown_wait_saying_why() -> None:
    agents = {"echo": AgentSlots(ready=False, why="claude-agent-acp is not on PATH"), "qwen": AgentSlots()}
    tasks = [task("e"), task("x", agent="codex"), task("q", agent="qwen")]
    decided = plan(tasks, BoardLimits(agents=agents))
    assert decided.start == ("q",)
    assert decided.waiting["e"] == "agent not ready: echo (claude-agent-acp is not on PATH)"
    assert decided.waiting["x"] == "agent not ready: 'codex' is not an agent of this board"
    assert plan([task("e")], BoardLimits(agents={"echo": AgentSlots(ready=False)})).waiting["e"] == (
        "agent not ready: echo")


def test_a_task_starts_only_when_every_blocker_is_done() -> None:
    tasks = [task("a", "done"), task("b", "review"), task("c", blocked_by=("a", "b")), task("d", blocked_by=("a",))]
    decided = plan(tasks, BoardLimits(agents=ECHO))
    assert decided.start == ("d",)
    assert decided.waiting["c"] == "blocked by task b (review): starts when it is done"
    two = plan([task("a"), task("b", "running"), task("c", blocked_by=("a", "b"))], BoardLimits(agents=ECHO))
    assert two.waiting["c"] == "blocked by tasks a (queued), b (running): starts when they are done"


@pytest.mark.parametrize(("state", "text"), [
    ("failed", "blocked by task a, which failed: prompt it again, or cancel this task"),
    ("cancelled", "blocked by task a, which was cancelled: prompt it again, or cancel this task"),
    ("discarded", "blocked by task a, which was discarded: this task can never start; cancel it"),
])
def test_a_blocker_that_may_never_finish_says_so(state: str, text: str) -> None:
    tasks = [task("z", "running"), task("a", state), task("b", blocked_by=("z", "a"))]
    assert plan(tasks, BoardLimits(agents=ECHO)).waiting["b"] == text


def test_a_blocker_missing_from_the_board_is_named() -> None:
    waiting = plan([task("b", blocked_by=("gone",))], BoardLimits(agents=ECHO)).waiting["b"]
    assert waiting == "blocked by task gone, which is not on this board: cancel this task"


def test_held_tasks_wait_held_and_never_start() -> None:
    decided = plan([task("h", "held", priority="urgent"), task("q")], BoardLimits(agents=ECHO))
    assert decided.start == ("q",) and decided.waiting["h"] == "held: release it to queue it"


def test_in_place_runs_one_task_at_a_time_until_it_is_accepted_or_discarded() -> None:
    limits = BoardLimits(agents=ECHO, in_place=True)
    assert plan([task("a"), task("b")], limits).start == ("a",)
    assert plan([task("a"), task("b")], limits).waiting["b"] == (
        "in-place: task a holds the repository's checkout (one task at a time; accept or discard it first)")
    holding = [task("r", "review", workspace="/repo"), task("q")]
    assert plan(holding, limits).start == ()
    assert str(plan(holding, limits).waiting["q"]).startswith("in-place: task r holds")
    assert plan([task("r", "done", workspace="/repo"), task("q")], limits).start == ("q",)
    # a task that has just started holds it before its workspace is recorded
    assert plan([task("s", "running"), task("q")], limits).start == ()
    # a follow-up of the holder itself starts in its own checkout
    assert plan([task("r", "queued", workspace="/repo"), task("q")], limits).start == ("r",)
    # worktree mode: workspaces never exclude each other
    assert plan(holding, BoardLimits(agents=ECHO)).start == ("q",)


def test_the_first_reason_that_applies_is_the_one_told() -> None:
    agents = {"echo": AgentSlots(max_concurrent=0, ready=False)}
    tasks = [task("a"), task("b", blocked_by=("a",))]
    decided = plan(tasks, BoardLimits(max_concurrent=0, agents=agents, in_place=True))
    assert decided.waiting == {"a": "agent not ready: echo", "b": "blocked by task a (queued): starts when it is done"}
    both_full = plan([task("a")], BoardLimits(max_concurrent=0, agents={"echo": AgentSlots(max_concurrent=0)}))
    assert both_full.waiting["a"] == "capacity: agent echo runs 0 of its 0 tasks at once"


def test_limits_refuse_negative_numbers() -> None:
    with pytest.raises(ValueError, match="board's max_concurrent"):
        BoardLimits(max_concurrent=-1)
    with pytest.raises(ValueError, match="agent's max_concurrent"):
        AgentSlots(max_concurrent=-1)


def test_only_held_and_queued_tasks_get_a_waiting_entry() -> None:
    tasks = [task(state, state) for state in STATES]
    assert set(plan(tasks, BoardLimits(agents=ECHO)).waiting) == {"held", "queued"}


# ---- randomized: the invariants over many boards (fixed seed: the same boards every run) -------------------
KEYWORDS = ("held", "blocked", "agent not ready", "in-place", "capacity")


def random_board(rng: random.Random) -> tuple[list[dict[str, Any]], BoardLimits]:
    agents = {name: AgentSlots(max_concurrent=rng.choice([None, 0, 1, 2, 3]), ready=rng.random() > 0.15)
              for name in ("a", "b", "c")}
    tasks: list[dict[str, Any]] = []
    for i in range(rng.randint(0, 25)):
        state = rng.choice(["queued"] * 6 + list(STATES))
        earlier = [t["id"] for t in tasks]
        blockers = rng.sample(earlier, k=min(len(earlier), rng.choice([0, 0, 0, 1, 2])))
        tasks.append(task(f"t{i}", state, priority=rng.choice(list(RANK)), agent=rng.choice(["a", "b", "c", "x"]),
                          blocked_by=tuple(blockers), workspace=rng.choice([None, None, "/w"])))
    return tasks, BoardLimits(max_concurrent=rng.choice([None, 0, 1, 2, 4, 8]), agents=agents,
                              in_place=rng.random() < 0.2)


def check_invariants(tasks: list[dict[str, Any]], limits: BoardLimits) -> None:
    decided = plan(tasks, limits)
    by_id = {t["id"]: t for t in tasks}
    index = {t["id"]: i for i, t in enumerate(tasks)}
    started = set(decided.start)
    assert len(started) == len(decided.start)
    before = [t for t in tasks if t["state"] in ACTIVE]
    after = before + [by_id[i] for i in decided.start]
    # never more than the limits running (starts never push past one; limits already passed stay passed)
    if limits.max_concurrent is not None and decided.start:
        assert len(after) <= limits.max_concurrent
    per_agent = Counter(t["agent"] for t in after)
    for name in {by_id[i]["agent"] for i in decided.start}:
        most = limits.agents[name].max_concurrent
        assert most is None or per_agent[name] <= most
    for task_id in decided.start:  # a start is queued, unblocked, on a ready agent
        started_task = by_id[task_id]
        assert started_task["state"] == "queued" and limits.agents[started_task["agent"]].ready
        assert all(by_id[b]["state"] == "done" for b in started_task["blockedBy"])
    if limits.in_place:
        assert len(decided.start) <= 1
    # every held or queued task not started says why, with its reason's keyword first
    for t in tasks:
        if t["state"] in ("held", "queued") and t["id"] not in started:
            assert (decided.waiting[t["id"]] or "").startswith(KEYWORDS), decided.waiting[t["id"]]
        elif t["id"] in started:
            assert decided.waiting[t["id"]] is None

    def key(t: Mapping[str, Any]) -> tuple[int, int]:
        return RANK[t["priority"]], index[t["id"]]
    # never a later (lower priority, or same and newer) start while an earlier one waits for the same capacity
    for waiting_id, why in decided.waiting.items():
        if why is None or by_id[waiting_id]["state"] != "queued":
            continue
        later = [by_id[i] for i in decided.start if key(by_id[i]) > key(by_id[waiting_id])]
        if why.startswith("capacity: the board"):
            assert not later
        elif why.startswith("capacity: agent"):
            assert all(t["agent"] != by_id[waiting_id]["agent"] for t in later)
        elif why.startswith("in-place"):  # only the task already holding the checkout may go on in it
            assert all(t["workspace"] and t["state"] == "queued" for t in later)
        # a task waiting only for capacity could not have started: that capacity is used up
        if why.startswith("capacity: the board"):
            assert limits.max_concurrent is not None and len(after) >= limits.max_concurrent
    # pure: the same input gives the same decision
    assert plan(tasks, limits) == decided


def test_randomized_boards_keep_every_invariant() -> None:
    rng = random.Random(20260126)
    for _ in range(3000):
        check_invariants(*random_board(rng))
