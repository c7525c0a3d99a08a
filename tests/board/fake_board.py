"""A Board (BOARD_API.md's facade) for the surfaces' tests, before the real one is wired in.

The tasks are real: board.tasks.BoardTasks over a memory store (the real transition table, task
objects, errors and transcript log). What the scheduler and the turn runner would do is played by the
test through `start`, `say`, `ask`, `finish` and `fail`; a diff is whatever the test sets. Every change
is told to the `task` listeners (with the transcript's last seq) and semantic events to `event` ones,
and wakes `wait_task`. Switching a test to the real Board is the `board` fixture in conftest.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from mcp_agent_kit.board.errors import TaskInvalid
from mcp_agent_kit.board.tasks import BoardTasks
from mcp_agent_kit.store.memory import MemoryStore

EMPTY_DIFF: dict[str, Any] = {"files": [], "patch": ""}


class FakeBoard:
    def __init__(self, config: Any = None, repo: str | Path = ".", *, store: Any = None,
                 data_dir: str | Path | None = None, replica: str | None = None,
                 agents: Sequence[str] = ("echo", "other")) -> None:
        self.tasks = BoardTasks(store or MemoryStore(), replica=replica, agents=agents, default_agent=agents[0])
        self.agents = tuple(agents)
        self.max_concurrent = 4
        self.diffs: dict[str, dict[str, Any]] = {}
        self.accepted: dict[str, bool] = {}  # task id -> merge
        self.started = self.closed = False
        self._changed = threading.Condition()
        self._listeners: dict[str, list[Callable[[dict[str, Any]], None]]] = {"event": [], "task": []}

    # ---- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.started = True

    def close(self) -> None:
        self.closed = True
        self.tasks.close()

    # ---- the facade ----------------------------------------------------------------------------------
    def create_task(self, prompt: str, *, title: str | None = None, agent: str | None = None,
                    priority: str = "normal", blocked_by: Sequence[str] = (), base: str | None = None,
                    hold: bool = False, owner: str | None = None, metadata: dict[str, Any] | None = None,
                    task_id: str | None = None, labels: Sequence[str] | None = None) -> dict[str, Any]:
        task = self.tasks.create(prompt, title=title, agent=agent, priority=priority, blocked_by=blocked_by,
                                 base=base, hold=hold, owner=owner, metadata=metadata, task_id=task_id,
                                 labels=labels)
        return self._told(task)

    def set_priority(self, task_id: str, priority: str) -> dict[str, Any]:
        return self._told(self.tasks.update(task_id, {"priority": priority}))

    def status(self) -> dict[str, Any]:
        return {"running": self.started and not self.closed, "max_concurrent": self.max_concurrent,
                "agents": [{"id": agent, "ready": True, "why": None} for agent in self.agents]}

    def release_task(self, task_id: str) -> dict[str, Any]:
        return self._move(task_id, "release")

    def list_tasks(self, state: str | None = None, agent: str | None = None) -> list[dict[str, Any]]:
        return self.tasks.list(state, agent)

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.tasks.get(task_id)

    def prompt_task(self, task_id: str, message: str) -> dict[str, Any]:
        return self._move(task_id, "prompt", {"prompt": message})

    def answer_task(self, task_id: str, answer: str | dict[str, Any]) -> dict[str, Any]:
        question = self.tasks.get(task_id).get("question") or {}
        options = [option["id"] for option in question.get("options") or ()]
        if options and answer not in options:
            raise TaskInvalid(f"answer {answer!r} is not one of the options: {', '.join(options)}")
        if "schema" in question and not isinstance(answer, dict):
            raise TaskInvalid("this question wants an object matching its schema")
        task = self._move(task_id, "answer")
        self._append(task_id, {"type": "answer", "answer": answer})
        return task

    def cancel_task(self, task_id: str) -> dict[str, Any]:
        return self._move(task_id, "cancel")

    def task_diff(self, task_id: str) -> dict[str, Any]:
        self.tasks.get(task_id)
        return dict(self.diffs.get(task_id, EMPTY_DIFF))

    def accept_task(self, task_id: str, merge: bool = False) -> dict[str, Any]:
        task = self._move(task_id, "accept")
        self.accepted[task_id] = merge
        return task

    def discard_task(self, task_id: str) -> dict[str, Any]:
        return self._move(task_id, "discard")

    def task_events(self, task_id: str, after: int = 0, limit: int = 500) -> dict[str, Any]:
        self.tasks.get(task_id)
        events, last = self.tasks.events(task_id, after, limit)
        return {"events": events, "next": last}

    def wait_task(self, task_id: str, states: Collection[str], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                task = self.tasks.get(task_id)
                left = deadline - time.monotonic()
                if task["state"] in states or left <= 0:
                    return task
                self._changed.wait(left)

    def add_listener(self, kind: str, fn: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        self._listeners[kind].append(fn)
        return lambda: self._listeners[kind].remove(fn) if fn in self._listeners[kind] else None

    # ---- what the scheduler and the turn runner would do ---------------------------------------------
    def start_task(self, task_id: str) -> dict[str, Any]:
        task = self._move(task_id, "start")
        self._append(task_id, {"type": "turn_start", "prompt": task["prompt"]})  # as board.runner says it
        return task

    def say(self, task_id: str, text: str) -> None:
        self._append(task_id, {"type": "message", "text": text})

    def note(self, task_id: str, event: dict[str, Any]) -> None:
        """Any transcript event (progress, error, plan, ...), as the runner would append it."""
        self._append(task_id, event)

    def ask(self, task_id: str, question: dict[str, Any]) -> dict[str, Any]:
        self._append(task_id, {"type": "question", "question": question})
        return self._move(task_id, "ask", {"question": question})

    def finish(self, task_id: str, result: str, diff: dict[str, Any] | None = None) -> dict[str, Any]:
        if diff is not None:
            self.diffs[task_id] = diff
        self._append(task_id, {"type": "turn_end", "stopReason": "end_turn"})
        return self._move(task_id, "finish", {"result": result})

    def fail(self, task_id: str, error: str) -> dict[str, Any]:
        return self._move(task_id, "fail", {"error": error})

    # ---- telling -------------------------------------------------------------------------------------
    def _move(self, task_id: str, action: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
        moved = self.tasks.move(task_id, action, fields)
        if moved.event is not None:
            for fn in list(self._listeners["event"]):
                fn({"id": f"{task_id}-{action}", "type": moved.event, "time": moved.task.get("endedAt") or "",
                    "task": moved.task})
        return self._told(moved.task)

    def _append(self, task_id: str, event: dict[str, Any]) -> None:
        self.tasks.append(task_id, event)
        self._told(self.tasks.get(task_id))

    def _told(self, task: dict[str, Any]) -> dict[str, Any]:
        _, seq = self.tasks.events(task["id"], 0, 1000)
        for fn in list(self._listeners["task"]):
            fn({"task": task, "seq": seq})
        with self._changed:
            self._changed.notify_all()
        return task
