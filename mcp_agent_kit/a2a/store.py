"""store: where tasks live — the TaskStore contract and the bounded in-memory store with TTL eviction.

A task is a plain dict in ProtoJSON shape plus private keys starting with "_" (`_owner`, `_updated`,
`_pending`) that are never sent. Listing order is newest status timestamp first, ties by id, with an
opaque cursor of the last (timestamp, id) returned. Rules: no locking of its own (the engine holds one
lock around every store call); no protocol errors, only store.base's StoreError (a refused write:
duplicate id, full).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from mcp_agent_kit.store.base import StoreError


class Query(NamedTuple):
    owner: str | None
    context_id: str | None = None
    state: str | None = None
    after: str | None = None  # status timestamps strictly newer than this ISO string
    cursor: tuple[str, str] | None = None  # (timestamp, id) of the last item of the previous page
    limit: int = 50


class TaskStore(Protocol):
    def insert(self, task: dict[str, Any]) -> None: ...
    def get(self, task_id: str) -> dict[str, Any] | None: ...
    def save(self, task: dict[str, Any]) -> None: ...
    def query(self, query: Query) -> tuple[list[dict[str, Any]], int]: ...
    def unfinished(self) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


def view(task: dict[str, Any], history_length: int | None = None, artifacts: bool = True) -> dict[str, Any]:
    """A client's copy of a task: private keys dropped, history cut to the last N, empty lists omitted."""
    out: dict[str, Any] = {"id": task["id"], "contextId": task["contextId"], "status": dict(task["status"])}
    if artifacts and task.get("artifacts"):
        out["artifacts"] = [dict(a, parts=list(a["parts"])) for a in task["artifacts"]]
    history = task.get("history") or []
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    if history:
        out["history"] = list(history)
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


def sort_key(task: dict[str, Any]) -> tuple[str, str]:
    return (str(task["status"].get("timestamp", "")), str(task["id"]))


def matches(task: dict[str, Any], query: Query) -> bool:
    if task.get("_owner") != query.owner:
        return False
    if query.context_id is not None and task.get("contextId") != query.context_id:
        return False
    if query.state is not None and task["status"]["state"] != query.state:
        return False
    return query.after is None or str(task["status"].get("timestamp", "")) > query.after


class MemoryTaskStore:
    """Tasks in a dict. Finished tasks older than `ttl` seconds are evicted; at `max_tasks` the oldest
    finished task makes room, and at `max_per_owner` the owner's oldest finished task does (so one
    principal's tasks never push out another's); when none has finished the insert is refused.
    `clock` (epoch seconds) stamps the tasks it keeps for the `ttl`."""

    def __init__(self, max_tasks: int = 10_000, ttl: float | None = 24 * 3600.0, max_per_owner: int = 1_000,
                 *, clock: Callable[[], float] = time.time) -> None:
        if max_tasks < 1 or max_per_owner < 1:
            raise ValueError("max_tasks and max_per_owner must be at least 1")
        self.max_tasks = max_tasks
        self.max_per_owner = max_per_owner
        self.ttl = ttl
        self.clock = clock
        self._tasks: dict[str, dict[str, Any]] = {}
        self._owned: dict[Any, dict[str, None]] = {}  # owner -> task ids, oldest first
        self._last_sweep = 0.0

    def insert(self, task: dict[str, Any]) -> None:
        from mcp_agent_kit.a2a.lifecycle import TERMINAL

        if task["id"] in self._tasks:
            raise StoreError(f"task {task['id']} already exists")
        owner = task.get("_owner")
        mine = self._owned.setdefault(owner, {})
        if len(mine) >= self.max_per_owner:
            oldest = next((k for k in mine if self._tasks[k]["status"]["state"] in TERMINAL), None)
            if oldest is None:
                raise StoreError("this principal has too many unfinished tasks")
            self._drop(oldest)
        self._evict()
        if len(self._tasks) >= self.max_tasks:
            raise StoreError("the task store is full of unfinished tasks")
        task["_updated"] = self.clock()
        self._tasks[task["id"]] = task
        self._owned.setdefault(owner, {})[task["id"]] = None

    def _drop(self, task_id: str) -> None:
        task = self._tasks.pop(task_id)
        mine = self._owned.get(task.get("_owner"))
        if mine is not None:
            mine.pop(task_id, None)
            if not mine:
                del self._owned[task.get("_owner")]

    def get(self, task_id: str) -> dict[str, Any] | None:
        return self._tasks.get(task_id)

    def save(self, task: dict[str, Any]) -> None:
        task["_updated"] = self.clock()
        self._tasks[task["id"]] = task

    def query(self, query: Query) -> tuple[list[dict[str, Any]], int]:
        self._evict()
        found = sorted((t for t in self._tasks.values() if matches(t, query)), key=sort_key, reverse=True)
        total = len(found)
        if query.cursor is not None:
            found = [t for t in found if sort_key(t) < query.cursor]
        return found[: query.limit], total

    def unfinished(self) -> list[dict[str, Any]]:
        from mcp_agent_kit.a2a.lifecycle import TERMINAL

        return [t for t in self._tasks.values() if t["status"]["state"] not in TERMINAL]

    def close(self) -> None:
        self._tasks.clear()
        self._owned.clear()

    def _evict(self) -> None:
        from mcp_agent_kit.a2a.lifecycle import TERMINAL

        now = self.clock()
        if self.ttl is not None and now - self._last_sweep > min(self.ttl, 60.0):
            self._last_sweep = now
            limit = now - self.ttl
            for task_id in [
                k for k, t in self._tasks.items() if t["status"]["state"] in TERMINAL and t["_updated"] < limit
            ]:
                self._drop(task_id)
        if len(self._tasks) >= self.max_tasks:
            finished = sorted((t["_updated"], k) for k, t in self._tasks.items() if t["status"]["state"] in TERMINAL)
            for _, task_id in finished[: len(self._tasks) - self.max_tasks + 1]:
                self._drop(task_id)


MemoryStore = MemoryTaskStore  # the name docs/limits.md used, kept importable
