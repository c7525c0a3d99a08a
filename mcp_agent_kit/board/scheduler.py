"""board.scheduler: the board's one loop — which queued tasks start now, why the others wait — woken, never ticking.

One thread per Board. It sleeps on a Condition until `wake()` (a store notification on board.tasks.CHANNEL: a task
created or moved on any replica, or a change of this process) or a long safety timeout (SAFETY_S: a lost
notification costs at most that much latency). Each round, on every replica, first looks after the local runs: it
stops those whose task the store no longer has running here (cancelled on another replica, or taken over:
BoardTasks.lost) and hands them the answers given on other replicas (`deliver`, board.replicas.AnswerRelay). Then,
only on the replica that holds the scheduler's lease (`leading`), it reads the tasks that matter (held, queued,
running, needs_input; in in-place mode also those holding the checkout; and every blocker they name), asks
board.queue.plan with the limits (the board's max_concurrent, each agent's own one and its readiness, the agent
hosts' placement: board.hosts; a task starts with its `host` set, None for here), writes each
waiting task's `waiting` text only when it changed, and starts the picked tasks: `move(id, "start")` is a compare-and-
set on the stored task, so even two replicas that both believed they schedule (a stall around a lease
hand-over) start it once. Rules: the round never waits for an agent (the runner starts each on its own thread); a
failing round is logged and the next wake-up tries again; no state beyond the store's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from mcp_agent_kit.board.errors import BoardError, TaskConflict, TaskNotFound, TransitionRefused
from mcp_agent_kit.board.hosts import HostPool
from mcp_agent_kit.board.queue import AgentSlots, BoardLimits, plan
from mcp_agent_kit.board.runner import TaskRunner
from mcp_agent_kit.board.states import CANCELLED, FAILED, HELD, LIVE, NEEDS_INPUT, QUEUED, REVIEW, RUNNING
from mcp_agent_kit.board.tasks import BoardTasks
from mcp_agent_kit.store.base import StoreError

log = logging.getLogger("mcp_agent_kit.board")
SAFETY_S = 30.0  # a round at least this often, in case a notification was lost
_LIVE_ORDER = (HELD, QUEUED, RUNNING, NEEDS_INPUT)
_CHECKOUT = (REVIEW, FAILED, CANCELLED)  # in place: these still hold the checkout until accepted or discarded


class Scheduler:
    """The loop (see the module docstring); `limits()` gives the board's limits for a round."""

    def __init__(self, tasks: BoardTasks, runner: TaskRunner, limits: Callable[[], BoardLimits], *,
                 leading: Callable[[], bool] | None = None,
                 deliver: Callable[[list[str]], object] | None = None) -> None:
        """leading: whether this replica schedules now (default: always); deliver: hands the runs here (their
        task ids) the answers given on other replicas."""
        self.tasks, self.runner, self.limits = tasks, runner, limits
        self.leading = leading or (lambda: True)
        self.deliver = deliver
        self._cond = threading.Condition()
        self._dirty = True
        self._closed = False
        self._thread: threading.Thread | None = None
        self.rounds = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="board-scheduler", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        with self._cond:
            self._dirty = True
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(10.0)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._dirty and not self._closed:
                    self._cond.wait(SAFETY_S)
                if self._closed:
                    return
                self._dirty = False
            try:
                self.round()
            except (BoardError, StoreError, OSError) as exc:
                log.warning("board: a scheduling round failed (the next change tries again): %s", exc)
            except Exception:  # a bug in one round must not stop the board's scheduling
                log.exception("board: a scheduling round failed")

    def _tasks(self, in_place: bool) -> list[dict[str, Any]]:
        """The live tasks (creation order), those holding the checkout in place, and the blockers they name."""
        states = list(LIVE) + (list(_CHECKOUT) if in_place else [])
        tasks = self.tasks.list(states)
        have = {task["id"] for task in tasks}
        for blocker in dict.fromkeys(b for task in tasks for b in task.get("blockedBy") or []):
            if blocker not in have:
                found = self.tasks.find(blocker)
                if found is not None:
                    tasks.append(found)
                    have.add(blocker)
        return tasks

    def round(self) -> None:
        """One decision: foreign cancels and answers applied, and when leading waiting texts written and picked
        tasks started."""
        self.rounds += 1
        here = self.runner.running_ids()
        if here:
            self.runner.reconcile(self.tasks.lost(here))
            if self.deliver is not None:
                self.deliver(here)
        if not self.leading():
            return
        limits = self.limits()
        tasks = self._tasks(limits.in_place)
        decided = plan(tasks, limits)
        for task in tasks:
            if task["id"] in decided.waiting and task.get("state") in (HELD, QUEUED):
                text = decided.waiting[task["id"]]
                if text is not None and text != task.get("waiting"):
                    try:
                        self.tasks.update(task["id"], {"waiting": text})
                    except (TaskConflict, TaskNotFound):
                        continue
        for task_id in decided.start:
            try:
                moved = self.tasks.move(task_id, "start", {"host": decided.hosts.get(task_id)})
            except (TransitionRefused, TaskConflict, TaskNotFound):
                continue  # another replica started (or someone cancelled) it first
            self.runner.launch(moved.task)


def board_limits(config: Any, runner: TaskRunner, hosts: HostPool | None = None) -> BoardLimits:
    """The limits of one round: the config's numbers, each agent's readiness now (an agent a host serves is
    ready: where it runs is the hosts' placement), and the hosts' placement."""
    agents = {}
    for agent_id in dict.fromkeys([*config.agents, *(hosts.declared_agents() if hosts is not None else ())]):
        ready, why = (True, "") if hosts is not None and hosts.serves(agent_id) else runner.ready(agent_id)
        agents[agent_id] = AgentSlots(config.agent_limits.get(agent_id), ready, why)
    return BoardLimits(config.max_concurrent, agents, config.workspace.mode == "in-place",
                       hosts.place if hosts is not None else None)
