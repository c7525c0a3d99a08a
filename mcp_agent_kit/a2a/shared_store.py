"""shared_store: the A2A TaskStore on a `store.Store`, so every replica of an agent sees every task.

One record of kind `a2a_tasks` per task: key = task id, owner = the principal, group = contextId,
state = the task state, order = the status timestamp (ListTasks' sort key), body = the task dict.
A task read from here carries two private keys the engine uses and never sends: `_version` (saves
are compare-and-set on it: `Conflict` when another replica wrote in between) and `_leased` (True
while some replica holds a live lease on it: it runs a job for the task, or has just taken a
continuation of it: `_continuing`, a deadline the engine writes into the body). A task is leased to this
replica while its id is in `running` (the engine's jobs) and it is neither finished nor waiting for
input (a task waiting for input runs nowhere: any replica may continue it); finished tasks expire
after `ttl`. Rules: no protocol errors, only StoreError; no locking of its own (the engine
holds its lock); knows nothing of the engine.
"""

from __future__ import annotations

import time
from collections.abc import Container
from typing import Any

from mcp_agent_kit.a2a.lifecycle import STATES, TERMINAL, is_final
from mcp_agent_kit.a2a.store import Query
from mcp_agent_kit.store.base import Record, Store, StoreError

KIND = "a2a_tasks"
UNFINISHED = tuple(sorted(STATES - TERMINAL))
_TRANSIENT = ("_version", "_leased")  # read-side keys, never written into a body
_PAGE = 100


class Conflict(StoreError):
    """Another replica saved the task after it was read; read it again."""


def task_of(record: Record) -> dict[str, Any]:
    """The task a record holds, with its `_version` and `_leased` read-side keys."""
    task = dict(record.body)
    task["_version"] = record.version
    now = time.time()
    task["_leased"] = (record.holder is not None and (record.lease_until or 0.0) > now) or \
        float(task.get("_continuing", 0.0)) > now
    return task


class SharedTaskStore:
    """TaskStore over a shared Store; `replica` is this process's lease holder id."""

    def __init__(self, store: Store, replica: str, lease_s: float = 30.0, *, ttl: float | None = 24 * 3600.0,
                 max_per_owner: int = 10_000) -> None:
        if lease_s <= 0 or max_per_owner < 1:
            raise ValueError("lease_s must be positive and max_per_owner at least 1")
        self.store = store
        self.replica = replica
        self.lease_s = lease_s
        self.ttl = ttl
        self.max_per_owner = max_per_owner
        self.running: Container[str] = frozenset()  # the ids of the engine's jobs' tasks (lease_to)
        self._leased_to = False

    def lease_to(self, running: Container[str]) -> None:
        """The one engine that runs tasks on this store here: a task whose id is in `running` is
        leased to this replica. Once only: a second engine on the same store is a mistake."""
        if self._leased_to:
            raise ValueError("this SharedTaskStore already serves an engine; give each engine its own store")
        self.running, self._leased_to = running, True

    def _record(self, task: dict[str, Any]) -> Record:
        state = task["status"]["state"]
        now = time.time()
        leased = not is_final(state) and task["id"] in self.running
        finished = state in TERMINAL and self.ttl is not None
        return Record(
            KIND, task["id"], {k: v for k, v in task.items() if k not in _TRANSIENT},
            owner=task.get("_owner") or "", group=str(task.get("contextId", "")), state=state,
            order=str(task["status"].get("timestamp", "")),
            holder=self.replica if leased else None, lease_until=now + self.lease_s if leased else None,
            expires=now + self.ttl if finished and self.ttl is not None else None,
        )


    def insert(self, task: dict[str, Any]) -> None:
        owner = task.get("_owner") or ""
        if self.store.count(KIND, owner=owner, states=UNFINISHED) >= self.max_per_owner:
            raise StoreError("this principal has too many unfinished tasks")
        if not self.store.insert(self._record(task)):
            raise StoreError(f"task {task['id']} already exists")
        task["_version"] = 1

    def get(self, task_id: str) -> dict[str, Any] | None:
        record = self.store.get(KIND, task_id)
        return None if record is None else task_of(record)

    def save(self, task: dict[str, Any]) -> None:
        """Compare-and-set on the `_version` the task was read with (Conflict when it moved on)."""
        saved = self.store.update(self._record(task), expect_version=task.get("_version"))
        if saved is None:
            raise Conflict(f"task {task['id']} was changed by another replica")
        task["_version"] = saved.version

    def query(self, query: Query) -> tuple[list[dict[str, Any]], int]:
        owner = query.owner or ""
        states = None if query.state is None else [query.state]
        if query.after is None:
            page = self.store.query(KIND, owner=owner, group=query.context_id, states=states,
                                    before=query.cursor, limit=query.limit)
            return [task_of(r) for r in page.records], page.total
        # statusTimestampAfter: newest first, so the matches are a prefix of the sorted records
        newer: list[Record] = []
        before: tuple[str, str] | None = None
        while True:
            page = self.store.query(KIND, owner=owner, group=query.context_id, states=states, before=before,
                                    limit=_PAGE)
            fresh = [r for r in page.records if r.order > query.after]
            newer += fresh
            if len(fresh) < len(page.records) or len(page.records) < _PAGE:
                break
            before = (page.records[-1].order, page.records[-1].key)
        if query.cursor is not None:
            cursor = query.cursor
            found = [r for r in newer if (r.order, r.key) < cursor]
        else:
            found = newer
        return [task_of(r) for r in found[: query.limit]], len(newer)

    def unfinished(self) -> list[dict[str, Any]]:
        """Every replica's unfinished tasks (the engine does not fail them at start on a shared store)."""
        page = self.store.query(KIND, states=UNFINISHED, limit=self.max_per_owner)
        return [task_of(r) for r in page.records]

    def close(self) -> None:
        self.store.close()
