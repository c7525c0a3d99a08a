"""board.queue: the scheduler's decision — which queued tasks start now, and why each other one waits.

`plan(tasks, limits)` is a pure function over plain data: `tasks` are task objects (board.task_fields)
in creation order (as BoardTasks.list gives them), every task the board has or at least the live ones,
those holding the checkout, and their blockers; `limits` the board's and each agent's capacity, and
`place` (board.hosts: which agent host, or this machine, a task would run on now). It returns the ids to
start, in the order to start them, the host each one starts on (None: here), and for every `held` or
`queued` task not started the text of its `waiting` field (None for one that starts).

Rules, in order:
  - running and needs_input tasks hold a slot (a paused turn keeps its slot), of their agent and of the board
    (a task run here) or of their host;
  - queued tasks are considered by priority (urgent > high > normal > low), then creation order;
  - a task waits, for the first reason in CHECKS that applies: a blocker not `done` ("blocked"), its
    agent unknown or not ready ("agent not ready"), the repository's checkout held by another task in
    in-place mode ("in-place"), its agent's `max_concurrent` reached ("capacity"), no live host that has
    its agent and labels with room ("host": `place` says which), the board's reached for a task run here
    ("capacity"; a host's capacity bounds the tasks run on it);
  - otherwise it starts and takes its slots; held tasks wait "held".
A busy agent never refuses work: its tasks wait. Greedy in priority order, so a task never starts while
one before it in that order could have used the same slot. Every waiting text starts with its reason's
keyword (held, blocked, agent not ready, in-place, capacity, host), then says what and what to do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_agent_kit.board.states import ACTIVE, CANCELLED, DISCARDED, DONE, FAILED, FINAL, HELD, QUEUED
from mcp_agent_kit.board.task_fields import PRIORITIES

__all__ = ["RANK", "AgentSlots", "BoardLimits", "Place", "QueuePlan", "plan"]

RANK: Mapping[str, int] = {name: rank for rank, name in enumerate(PRIORITIES)}
HELD_TEXT = "held: release it to queue it"
# a blocker's state -> why the task it blocks may never start, and what to do
STUCK: Mapping[str, str] = {
    FAILED: "failed: prompt it again, or cancel this task",
    CANCELLED: "was cancelled: prompt it again, or cancel this task",
    DISCARDED: "was discarded: this task can never start; cancel it",
}
# (the task, the running tasks per host id) -> (the host to run it on, None: here; why it waits, None: it can start)
Place = Callable[[Mapping[str, Any], Mapping[str, int]], tuple[str | None, str | None]]


@dataclass(frozen=True)
class AgentSlots:
    """One agent as the scheduler sees it: its own limit (None: only the board's) and readiness."""

    max_concurrent: int | None = None
    ready: bool = True
    why: str = ""  # why it is not ready (not on PATH, failed to start, ...)

    def __post_init__(self) -> None:
        if self.max_concurrent is not None and self.max_concurrent < 0:
            raise ValueError("an agent's max_concurrent must be 0 or more")


@dataclass(frozen=True)
class BoardLimits:
    """The board's limit (None: none), its agents (an agent not named here is not ready), and whether
    tasks run in the repository's own checkout (in-place: one task holds it at a time); `place` chooses a
    task's agent host (None: every task runs here)."""

    max_concurrent: int | None = None
    agents: Mapping[str, AgentSlots] = field(default_factory=dict)
    in_place: bool = False
    place: Place | None = None

    def __post_init__(self) -> None:
        if self.max_concurrent is not None and self.max_concurrent < 0:
            raise ValueError("the board's max_concurrent must be 0 or more")


@dataclass(frozen=True)
class QueuePlan:
    """The decision: ids to start (in order), `waiting` for every held or queued task (None: it starts), and the
    host each task to start runs on (absent or None: here)."""

    start: tuple[str, ...]
    waiting: Mapping[str, str | None]
    hosts: Mapping[str, str | None] = field(default_factory=dict)


@dataclass
class _Round:
    """What the checks look at while one plan is made."""

    limits: BoardLimits
    by_id: dict[str, Mapping[str, Any]]
    board_used: int
    agent_used: Counter[str]
    checkout: list[str]  # in-place: the tasks holding the repository's checkout
    host_used: Counter[str] = field(default_factory=Counter)  # host id -> its running tasks
    chosen: dict[str, str | None] = field(default_factory=dict)  # task id -> the host `place` chose


def _blocked(task: Mapping[str, Any], now: _Round) -> str | None:
    waits = [b for b in task.get("blockedBy") or [] if (now.by_id.get(b) or {}).get("state") != DONE]
    if not waits:
        return None
    for blocker in waits:  # one that may never finish says so first
        state = (now.by_id.get(blocker) or {}).get("state")
        if state is None:
            return f"blocked by task {blocker}, which is not on this board: cancel this task"
        if state in STUCK:
            return f"blocked by task {blocker}, which {STUCK[state]}"
    states = ", ".join(f"{b} ({now.by_id[b]['state']})" for b in waits)
    many = len(waits) > 1
    return f"blocked by task{'s' if many else ''} {states}: starts when {'they are' if many else 'it is'} done"


def _not_ready(task: Mapping[str, Any], now: _Round) -> str | None:
    agent = task.get("agent")
    slots = now.limits.agents.get(agent) if isinstance(agent, str) else None
    if slots is None:
        return f"agent not ready: {agent!r} is not an agent of this board"
    if not slots.ready:
        return f"agent not ready: {agent}" + (f" ({slots.why})" if slots.why else "")
    return None


def _checkout(task: Mapping[str, Any], now: _Round) -> str | None:
    others = [t for t in now.checkout if t != task["id"]]
    if not now.limits.in_place or not others:
        return None
    return (f"in-place: task {others[0]} holds the repository's checkout "
            "(one task at a time; accept or discard it first)")


def _agent_full(task: Mapping[str, Any], now: _Round) -> str | None:
    slots = now.limits.agents[task["agent"]]
    used = now.agent_used[task["agent"]]
    if slots.max_concurrent is None or used < slots.max_concurrent:
        return None
    return f"capacity: agent {task['agent']} runs {used} of its {slots.max_concurrent} tasks at once"


def _host(task: Mapping[str, Any], now: _Round) -> str | None:
    if now.limits.place is None:
        return None
    host, why = now.limits.place(task, now.host_used)
    now.chosen[task["id"]] = host
    return why


def _board_full(task: Mapping[str, Any], now: _Round) -> str | None:
    if now.chosen.get(task["id"]) is not None:
        return None  # its host's capacity bounds it
    most = now.limits.max_concurrent
    if most is None or now.board_used < most:
        return None
    return f"capacity: the board runs {now.board_used} of its {most} tasks at once"


# the reasons a queued task waits, in the order they are told (the first that applies is its `waiting`)
CHECKS: tuple[Callable[[Mapping[str, Any], _Round], str | None], ...] = (
    _blocked, _not_ready, _checkout, _agent_full, _host, _board_full)


def _holds_checkout(task: Mapping[str, Any]) -> bool:
    """In-place: a task that has its workspace and is not done or discarded holds the repository's checkout; so
    does a running one whose workspace is still being recorded (its run has just started)."""
    return (bool(task.get("workspace")) or task.get("state") in ACTIVE) and task.get("state") not in FINAL


def plan(tasks: Sequence[Mapping[str, Any]], limits: BoardLimits) -> QueuePlan:
    """Which queued tasks start now and why each other held or queued task waits (see the module's doc)."""
    active = [t for t in tasks if t.get("state") in ACTIVE]
    now = _Round(limits, {t["id"]: t for t in tasks}, sum(1 for t in active if not t.get("host")),
                 Counter(str(t.get("agent")) for t in active), [t["id"] for t in tasks if _holds_checkout(t)],
                 Counter(str(t["host"]) for t in active if t.get("host")))
    order = {t["id"]: i for i, t in enumerate(tasks)}
    queued = sorted((t for t in tasks if t.get("state") == QUEUED),
                    key=lambda t: (RANK.get(t.get("priority", ""), len(RANK)), order[t["id"]]))
    waiting: dict[str, str | None] = {t["id"]: HELD_TEXT for t in tasks if t.get("state") == HELD}
    start: list[str] = []
    hosts: dict[str, str | None] = {}
    for task in queued:
        reason = next((why for why in (check(task, now) for check in CHECKS) if why is not None), None)
        waiting[task["id"]] = reason
        if reason is None:
            start.append(task["id"])
            host = hosts[task["id"]] = now.chosen.get(task["id"])
            if host is None:
                now.board_used += 1
            else:
                now.host_used[host] += 1
            now.agent_used[task["agent"]] += 1
            if limits.in_place:
                now.checkout = [task["id"]]
    return QueuePlan(tuple(start), waiting, hosts)
